"""A digest of the source a jit function's kernels are built from (a key of the disk cache's launch records).

Elaboration runs the function's Python body, which may call helpers and read
constants of its own module and of other user modules. The digest covers the
file of the function's module and the files of the user modules, functions
and classes its code names (one level deep), so editing any of them makes the
records stale: the kernel is elaborated again, and nvcc runs only if the
generated CUDA changed. Library code (the standard library, site-packages)
is covered by the package versions that the records' keys also hold.
"""

from __future__ import annotations

import hashlib
import inspect
import sysconfig
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_LIBRARY_DIRS = tuple(
    {str(Path(sysconfig.get_paths()[name]).resolve()) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
)


def fingerprint(fn: Callable[..., Any]) -> str:
    """sha256 of the function's qualified name, its module's file and the user files its code names."""
    digest = hashlib.sha256(f"{fn.__module__}.{fn.__qualname__}\0".encode())
    files = {_file_of(fn)} | {_file_of(value) for value in _referenced(fn)}
    for path in sorted(f for f in files if f is not None and not f.startswith(_LIBRARY_DIRS)):
        try:
            digest.update(path.encode() + b"\0" + Path(path).read_bytes() + b"\0")
        except OSError:
            digest.update(f"{path}: unreadable\0".encode())
    return digest.hexdigest()


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def _referenced(fn: Callable[..., Any]) -> Iterator[object]:
    """The globals and closure values the function's code (nested functions included) names."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return
    module_globals = getattr(fn, "__globals__", {})
    for name in set(_code_names(code)):
        if name in module_globals:
            yield module_globals[name]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            continue


def _file_of(value: object) -> str | None:
    """The resolved source file defining a module, function or class; None for other values."""
    value = inspect.unwrap(value) if callable(value) else value
    if not isinstance(value, (types.ModuleType, types.FunctionType, type)):
        return None
    try:
        path = inspect.getsourcefile(value) or inspect.getfile(value)
    except (TypeError, OSError):
        return None
    return str(Path(path).resolve())
