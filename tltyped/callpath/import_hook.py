"""Code to run once a module is imported, without importing it: a post-import hook.

Dynamo takes a second to import, and most programs never do; yet the jit
functions must be told apart from lru_cache wrappers before Dynamo traces
one (torch_op.allow_in_graph says why). So a finder on `sys.meta_path`
watches for the module: it finds nothing itself, but for the watched name it
asks the other finders and hands back their spec with a loader that runs the
module's own loader, then the callback. It stays installed (a string
comparison per import; taking it out would change the list while another
thread's import reads it), and fires once, when the module is executed: a
`find_spec` that only asks whether the module exists fires nothing.
"""

from __future__ import annotations

import copy
import importlib.abc
import importlib.machinery
import logging
import sys
import types
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tltyped import locks

logger = logging.getLogger(__name__)

_lock = locks.Lock()


def when_imported(name: str, callback: Callable[[types.ModuleType], None]) -> None:
    """Run `callback(module)` once `name` is imported: now if it is already, else right after it executes."""
    with _lock:
        module = sys.modules.get(name)
        if module is None:
            sys.meta_path.insert(0, _Watch(name, callback))
            return
    callback(module)


class _Watch(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, callback: Callable[[types.ModuleType], None]) -> None:
        self.name = name
        self.callback = callback
        self.fired = False

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != self.name or self.fired:
            return None
        spec: importlib.machinery.ModuleSpec | None = None
        for finder in sys.meta_path:  # the spec the import would have found
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return spec
        spec = copy.copy(spec)
        spec.loader = _ThenCall(spec.loader, self)
        return spec

    def run(self, module: types.ModuleType) -> None:
        with _lock:
            if self.fired:
                return
            self.fired = True
        try:
            self.callback(module)
        except Exception:  # noqa: BLE001 - never into the user's import
            logger.warning("the hook on importing %s failed", self.name, exc_info=True)


class _ThenCall(importlib.abc.Loader):
    """The module's own loader, then the watch's callback; anything else (`get_source`, ...) is the loader's."""

    def __init__(self, loader: Any, watch: _Watch) -> None:
        self._loader = loader
        self._watch = watch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        created: types.ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        self._watch.run(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


# -- the jit functions, told apart from lru_cache wrappers once Dynamo is imported ------------------------

_waiting_for_dynamo = False
_waiting_lock = locks.Lock()


def not_lru_cache_wrappers(exposed: Iterable[Any]) -> None:
    """Tell Dynamo (imported by now) that the jit functions in `exposed` are no lru_cache wrappers, though they
    carry a `cache_info` (torch 2.13; torch 2.11 has no such list, and warns)."""
    utils = sys.modules["torch._dynamo"].utils
    allow = getattr(utils, "allow_lru_cache_wrapper_trace_without_warning", None)
    if allow is not None:
        for call in list(exposed):
            allow(call)


def tell_apart_when_dynamo_loads(exposed: Iterable[Any]) -> None:
    """Tell the jit functions (`exposed`, a live set) apart from lru_cache wrappers as soon as Dynamo is
    imported, before it can trace one, importing nothing now: defining a kernel imports neither Dynamo nor the
    torch op module (torch_op.py), which only a traced or recorded call needs."""
    global _waiting_for_dynamo
    with _waiting_lock:
        if _waiting_for_dynamo:
            return
        _waiting_for_dynamo = True
    when_imported("torch._dynamo", lambda _: not_lru_cache_wrappers(exposed))
