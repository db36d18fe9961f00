"""TileLang's kernels need TileLang's sources: `TILELANG_SRC`, or by default `../shared/tilelang-a35008a` from the
repository root (source.root); with neither every test here is skipped.

test_gpu.py's checks are marked `gpu`: the GPU suite (`python -m pytest tests/gpu tests/upstream -m gpu`) runs
them, and a CPU run lowers (test_lower.py, test_corpus.py)."""

from __future__ import annotations

import pytest

from tests.upstream.source import COMMIT, DEFAULT, ENV, available


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if available():
        return
    skip = pytest.mark.skip(reason=f"set {ENV} to TileLang's sources at {COMMIT[:12]}, or put them at {DEFAULT}")
    for item in items:
        if "tests/upstream" in str(item.fspath):
            item.add_marker(skip)
