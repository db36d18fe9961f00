"""Kernel bodies that mypy did not parse, read back from the module's source.

mypy parses modules whose errors it silences (installed packages, anything
on the Python path's site directories) without function bodies, to save
time. An in-body kernel's parameter types live in its body, so for such a
module the plugin parses the file once more, fully, and gives each kernel
its body back: its callers then see the same signature as when the module
itself is checked.
"""

from __future__ import annotations

from mypy.errors import Errors
from mypy.nodes import FuncDef, MypyFile
from mypy.options import Options
from mypy.parse import parse

from tltyped.mypy_plugin.source import decorated_functions


def restore_bodies(file: MypyFile, kernels: list[FuncDef], options: Options) -> None:
    """Give back the bodies of kernels parsed without one (a real `def` always has a body)."""
    stripped = [func for func in kernels if not func.body.body]
    if not stripped:
        return
    try:
        source = None
        if not options.native_parser:
            with open(file.path, encoding="utf-8") as text:
                source = text.read()
        full = parse(source, file.path, file.fullname, Errors(options), options, eager=True)
    except Exception:  # noqa: BLE001  (an unreadable file keeps mypy's reading of it)
        return
    by_place = {(d.func.name, d.func.line): d.func for d in decorated_functions(full)}
    for func in stripped:
        found = by_place.get((func.name, func.line))
        if found is not None:
            func.body = found.body
