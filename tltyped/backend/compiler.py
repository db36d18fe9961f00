"""Specialisation -> compiled kernel: elaborate the body, lower it through TileLang, build it.

This is where the call path reaches TileLang and TVM. The Dispatcher imports
this module on a true miss only (a kernel neither in memory nor in the disk
cache), so a process whose kernels are all cached never imports TileLang.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tltyped.backend.kernel import CompiledKernel
from tltyped.backend.launcher import compile_kernel
from tltyped.backend.lower import LoweredKernel, lower
from tltyped.backend.options import BuildOptions
from tltyped.errors import KernelBuildError, LoweringError
from tltyped.frontend.elaborate import Elaborator
from tltyped.frontend.extents import check_extents
from tltyped.frontend.signature import KernelSignature, Specialization
from tltyped.types.values import describe


class KernelBuilder:
    """Builds the kernels of one jit function (TileLang's AST rewrite of its body runs once, here)."""

    def __init__(self, fn: Callable[..., Any], signature: KernelSignature, options: BuildOptions) -> None:
        self.signature = signature
        self.options = options
        self.elaborator = Elaborator(fn, signature)

    def lower(self, spec: Specialization, target: dict[str, Any]) -> LoweredKernel:
        """Elaborate, check the extents, lower; a failure notes the consts and tensors it was specialised on."""
        try:
            elaborated = self.elaborator.elaborate(spec)
            check_extents(self.signature.name, elaborated.prim_func)
            return lower(self.signature.name, elaborated, target, self.options)
        except (KernelBuildError, LoweringError) as exc:
            exc.add_note(f"{self.signature.name} was specialised on {self.specialised_on(spec)}")
            raise

    def specialised_on(self, spec: Specialization) -> str:
        """`block=int 0, A: float32[M=256, K]`: the consts and tensors a kernel was built from."""
        parts = [f"{name}={describe(value)}" for name, value in spec.consts.items()]
        for p in self.signature.tensors:
            assert p.tensor is not None
            dims = ", ".join(f"{d.text}={spec.dims[d.text]}" if d.text in spec.dims else d.text for d in p.tensor.dims)
            strides = spec.strides[p.name]
            parts.append(f"{p.name}: {spec.dtypes[p.name].name}[{dims}]" + (f" strides {strides}" if strides else ""))
        return ", ".join(parts)

    def build(self, spec: Specialization, target: dict[str, Any]) -> CompiledKernel:
        return compile_kernel(self.lower(spec, target), self.signature)
