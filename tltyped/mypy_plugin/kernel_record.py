"""What the rewrite learns about a kernel (rewrite.py, in_body.py), kept for the hooks that run later.

The rewrite runs after parsing, before names are bound and with no way to
report an error: what it finds is kept here, by kernel, and reported or read
when the kernel's decorator is type-checked (plugin.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mypy.errorcodes import ErrorCode
from mypy.nodes import FuncDef

from tltyped.stubs.prim_func import FactoryKernel


@dataclass(frozen=True)
class Diagnostic:
    """A problem in a kernel definition, reported when the kernel is type-checked."""

    line: int
    column: int
    message: str
    code: ErrorCode


@dataclass
class KernelRecord:
    """What the rewrite learnt about one kernel."""

    func: FuncDef
    diagnostics: list[Diagnostic] = field(default_factory=list)
    out_idx: tuple[int, ...] | None = ()  # `jit(out_idx=...)` as written; None when not literal (out_idx.py)
    states_return: bool = False  # the source writes a return annotation (the rewrite infers one where it does not)
    factory_kernel: FactoryKernel | None = None  # a lazy-style factory's: what its kernel objects take (lazy.py)
