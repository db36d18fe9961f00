"""The lock every tltyped lock is: a `threading.Lock` that a forked child gets free.

`fork()` copies a process with one thread, the one that forked, and every
lock as it was. A lock another thread held then (building the C helpers,
importing TileLang's language, building a kernel) is held for ever in the
child, where no thread will release it: the child's first call, compile or
lowering that needs it waits for ever. That is a DataLoader's workers, or a
`multiprocessing` pool with the fork start method (Linux's default before
Python 3.14), started while a thread warms kernels up. So each lock is
made afresh in the child, unless the forking thread holds it itself, which
it then still releases. What the lock guarded is as the other thread left
it: tltyped's locked state is built up and published in single steps (an
append, one item set), so the child finds a step done or not begun, and
does it again where it needs it (a build then waits on the cache's file
lock, which filelock makes the child's own, until the parent's build is on
disk).
"""

from __future__ import annotations

import os
import threading
import weakref
from types import TracebackType

_ALL: weakref.WeakSet[Lock] = weakref.WeakSet()


class Lock:
    """`threading.Lock` for `with` blocks, made free in a forked child unless the forking thread holds it."""

    __slots__ = ("_lock", "_owner", "__weakref__")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None  # the thread holding it, as `threading.get_ident` names it
        _ALL.add(self)

    def __enter__(self) -> Lock:
        self._lock.acquire()
        self._owner = threading.get_ident()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None) -> None:
        self._owner = None
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def _after_fork(self) -> None:
        if self._owner != threading.get_ident():  # free, or held by a thread the child does not have
            self._lock, self._owner = threading.Lock(), None


def _after_fork_in_child() -> None:
    for lock in list(_ALL):
        lock._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
