"""Run the typing cases (pytest-mypy-plugins YAML) against this checkout, fast.

- mypy finds `tltyped` and the stubs of `tilelang.language` (stubs/) through
  MYPYPATH: the checkout need not be installed, and pytest-mypy-plugins copies
  the configuration into each case's directory, where mypy.ini's own
  `mypy_path` (relative to the file) no longer points at stubs/;
- every case uses tests/typing/mypy.ini (the plugin, strict, TileLang skipped);
- cases run inside this process (`--mypy-same-process`), with the plugin
  imported once here: importing `tltyped` imports torch, which a fresh mypy
  process per case would pay for again (seconds per case);
- the modules a case loads stay loaded, and mypy's own global state is reset
  after each case (see `pytest_runtest_call`);
- the cases' directories, and the mypy cache they share, are this checkout's
  own: two checkouts tested at once (a CI runner's, a worktree) would
  otherwise share one cache in the temporary directory and read each
  other's modules.
"""

from __future__ import annotations

import gc
import hashlib
import os
import tempfile
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ["MYPYPATH"] = os.pathsep.join(p for p in (str(ROOT), str(ROOT / "stubs"), os.environ.get("MYPYPATH", "")) if p)

import sqlite3.dbapi2  # noqa: E402,F401  (mypy's cache imports it lazily: load it before any case)

import tltyped.mypy_plugin  # noqa: E402,F401  (see the module docstring)
from mypy.typestate import reset_global_state  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.option.mypy_same_process = True
    if not getattr(config.option, "mypy_ini_file", None):
        config.option.mypy_ini_file = str(HERE / "mypy.ini")
    if config.option.mypy_testing_base == tempfile.gettempdir():  # not given on the command line
        checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
        base = Path(tempfile.gettempdir()) / f"tltyped-typing-{checkout}"
        base.mkdir(exist_ok=True)
        config.option.mypy_testing_base = str(base)


_MODULES = sys.modules
_COLLECT_EVERY = 8  # cases; each leaves about 60 MB of cycles
_CASES_SINCE_COLLECTION = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Keep the interpreter's own `sys.modules` dict after a same-process case; free mypy's state.

    pytest-mypy-plugins restores `sys.modules` by assigning a copy, which the
    import system does not see (it keeps using the original dict), so later
    imports in this session could half-fail. mypy runs no user code, so
    nothing a case imported needs unloading: keep the original dict, with
    whatever the case added.
    """
    yield
    restored = sys.modules
    if restored is not _MODULES:
        for name, module in restored.items():
            _MODULES.setdefault(name, module)
        sys.modules = _MODULES
    # mypy's caches of subtype checks are global and keep every case's types (and so all of
    # torch's stubs, once per case) alive; what a case leaves is then cyclic garbage, which
    # Python's collector reaches late. Without both the typing cases grow to several GB; a
    # full collection costs about a second, so it runs every few cases.
    reset_global_state()
    global _CASES_SINCE_COLLECTION
    _CASES_SINCE_COLLECTION += 1
    if _CASES_SINCE_COLLECTION >= _COLLECT_EVERY:
        gc.collect()
        _CASES_SINCE_COLLECTION = 0
