"""The post-import hook (tltyped/callpath/import_hook.py) on a module of a test's own: it fires once, after the
module executes, never on a mere find_spec, and never breaks the import."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from tltyped.callpath.import_hook import when_imported


@pytest.fixture
def module_name(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"watched_{request.node.name.replace('[', '_').replace(']', '_')}"
    (tmp_path / f"{name}.py").write_text("VALUE = 42\n\n\ndef source_me():\n    return VALUE\n")
    sys.path.insert(0, str(tmp_path))
    yield name
    sys.path.remove(str(tmp_path))
    sys.modules.pop(name, None)


def test_it_fires_once_after_the_module_executes(module_name: str) -> None:
    seen: list[int] = []
    when_imported(module_name, lambda module: seen.append(module.VALUE))
    assert importlib.util.find_spec(module_name) is not None and seen == []  # asking imports nothing
    module = importlib.import_module(module_name)
    assert seen == [42]
    importlib.reload(module)
    assert seen == [42]
    assert "return VALUE" in inspect.getsource(module.source_me)  # the module's own loader still serves its source


def test_a_module_imported_already_fires_at_once(module_name: str) -> None:
    importlib.import_module(module_name)
    seen: list[types.ModuleType] = []
    when_imported(module_name, seen.append)
    assert [m.__name__ for m in seen] == [module_name]


def test_a_failing_callback_does_not_break_the_import(module_name: str, caplog: pytest.LogCaptureFixture) -> None:
    def fail(module: types.ModuleType) -> None:
        raise RuntimeError("callback")

    when_imported(module_name, fail)
    assert importlib.import_module(module_name).VALUE == 42
    assert "failed" in caplog.text
