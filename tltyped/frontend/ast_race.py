"""A build run again where CPython's `ast` failed it from another thread.

Builds run in threads (the tuner's candidates, `par_compile`), and building
a kernel parses source: tltyped reads a kernel's annotations and dims,
TileLang rewrites its body and parses each `T.macro` and `@T.prim_func`.
CPython 3.11 keeps the depth of the ast tree it is building in state its
threads share, so a parse that another thread's interleaves may fail with
SystemError "AST constructor recursion depth mismatch" (CPython gh-106905,
seen on 3.11.7): spurious, and gone when run again. A lock around every parse
cannot be taken here: TileLang's run inside the user's body or factory, which
may build other kernels and wait on their locks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")

AST_RACE = "AST constructor recursion depth mismatch"
AST_RACE_TRIES = 3


def surviving_ast_race(run: Callable[[], R]) -> R:
    """`run()`, run again (up to AST_RACE_TRIES times in all) where CPython's ast failed it from another thread."""
    attempt = 1
    while True:
        try:
            return run()
        except Exception as exc:
            if attempt == AST_RACE_TRIES or not _from_ast_race(exc):
                raise
            attempt += 1


def _from_ast_race(exc: BaseException | None) -> bool:
    """Whether `exc` is, or was raised from, CPython's spurious ast failure."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, SystemError) and AST_RACE in str(exc):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False
