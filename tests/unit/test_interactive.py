"""Kernels written interactively: notebook cells, a REPL, `python -c`.

IPython compiles each cell under a name of its own (`<ipython-input-3-abc>`,
or `/tmp/ipykernel_123/456.py` in Jupyter) and puts the cell's lines in
`linecache`, which is where `inspect.getsource`, and so TileLang, reads the
body from; the session's namespace is a `__main__` module with no file. A cell
run again after an edit defines its names again, and a kernel must then be
built from what they hold now, never served the build of what they held
before (from memory or from the disk cache, which another session with other
cells shares). Here the cells run as IPython runs them, in a `__main__` of
their own.
"""

import hashlib
import linecache
import sys
import types
from typing import Any

import pytest
import torch

from tests.conftest import meta

HEADER = """
from typing import TypeVar
import tltyped as tl
import tltyped.language as T
M = TypeVar("M")
"""

KERNEL = """
@tl.jit
def scaled(A: tl.Tensor[tl.float32, M], B: tl.Tensor[tl.float32, M]):
    m, = A.shape
    with T.Kernel(T.ceildiv(m, 128), threads=128) as bx:
        for i in T.Parallel(128):
            B[bx * 128 + i] = A[bx * 128 + i] * Cfg().scale
"""


class Session:
    """Where cells run: an interactive session's namespace, `__main__` with no file, as IPython's is; or a dict
    with no `__name__` that code is `exec`'d in."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, namespace: str = "__main__") -> None:
        self.count = 0
        self._monkeypatch = monkeypatch
        if namespace == "__main__":
            main = types.ModuleType("__main__")
            monkeypatch.setitem(sys.modules, "__main__", main)
            self.namespace = vars(main)
        else:
            self.namespace = {"__name__": namespace} if namespace else {}

    def run(self, source: str) -> None:
        """Run a cell as IPython does: compiled under a name of its own, its lines in `linecache`."""
        self.count += 1
        name = f"<ipython-input-{self.count}-{hashlib.sha1(source.encode()).hexdigest()[:12]}>"
        self._monkeypatch.setitem(linecache.cache, name, (len(source), None, source.splitlines(True), name))
        exec(compile(source, name, "exec"), self.namespace)

    def __getattr__(self, name: str) -> Any:
        return self.namespace[name]


def record_key(kernel: Any) -> str | None:
    dispatcher = kernel._dispatcher
    tensors = (meta(256, dtype=torch.float32), meta(256, dtype=torch.float32))
    spec, target = dispatcher.bind_for_inspection(tensors, {})
    return dispatcher.kernels.identity(spec, target).record


@pytest.mark.parametrize("config", [
    "class Cfg:\n    scale = {}\n",
    "class Cfg:\n    def __init__(self):\n        self.scale = {}\n",
    "class Cfg:\n    @property\n    def scale(self):\n        return {}\n",
], ids=["a class attribute", "set in __init__", "a property"])
@pytest.mark.parametrize("namespace", ["__main__", ""], ids=["a notebook", "exec'd with no __name__"])
def test_a_class_defined_again_in_a_later_cell_is_read_by_value(config: str, namespace: str, sm90: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel reads `Cfg().scale`; a later cell defines `Cfg` again with another scale. The class is the
    session's code, read with its attributes and methods as a module's class is: its name alone would serve the
    first scale's build to the second, in this session and in any other sharing the disk cache. So with code
    `exec`'d in a namespace with no `__name__`, whose classes name `builtins` as their module."""
    session = Session(monkeypatch, namespace)
    session.run(HEADER)
    session.run(config.format(2.0))
    session.run(KERNEL)
    first = record_key(session.scaled)
    session.run(config.format(3.0))
    second = record_key(session.scaled)
    assert None not in (first, second) and first != second
    session.run(config.format(2.0))  # the first cell's text again: its build again
    assert record_key(session.scaled) == first


def test_c_classes_naming_builtins_are_still_read_by_name() -> None:
    """`function` and `NoneType` name `builtins` as their module, which holds neither: they are C's, not a class
    statement's exec'd with no `__name__`, and keep their library text (read by value, their method descriptors
    have none, and a kernel reading one would never be recorded)."""
    from tltyped.frontend.fingerprint import stable_text

    assert stable_text(types.FunctionType) == "class:builtins.function"
    assert stable_text(type(None)) == "class:builtins.NoneType"
