"""TileLang's kernels need TileLang's sources: without `TILELANG_SRC` every test here is skipped (see source.py)."""

from __future__ import annotations

import pytest

from tests.upstream.source import COMMIT, ENV, available


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if available():
        return
    skip = pytest.mark.skip(reason=f"set {ENV} to a TileLang repository (holding {COMMIT[:12]}) to run TileLang's kernels")
    for item in items:
        if "tests/upstream" in str(item.fspath):
            item.add_marker(skip)
