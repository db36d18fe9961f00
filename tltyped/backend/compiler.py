"""Specialisation -> compiled kernel: elaborate it, lower it through TileLang, build it.

Elaboration is what the KernelBuilder is given: running an eager kernel's
body (frontend/elaborate.py) or a lazy-style factory (frontend/prim_func.py).

This is where the call path reaches TileLang and TVM. The Dispatcher imports
this module on a true miss only (a kernel neither in memory nor in the disk
cache), so a process whose kernels are all cached never imports TileLang.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from tltyped.backend.kernel import CompiledKernel
from tltyped.backend.launcher import compile_kernel
from tltyped.backend.lower import LoweredKernel, lower
from tltyped.backend.options import BuildOptions
from tltyped.errors import KernelBuildError, LoweringError
from tltyped.frontend.elaborate import Elaborated
from tltyped.frontend.extents import check_extents
from tltyped.frontend.signature import KernelSignature, Specialization
from tltyped.types.values import describe


class KernelBuilder:
    """Builds the kernels of one signature from their elaboration."""

    def __init__(
        self, signature: KernelSignature, options: BuildOptions, elaborate: Callable[[Specialization], Elaborated]
    ) -> None:
        self.signature = signature
        self.options = options
        self._elaborate = elaborate

    def elaborate(self, spec: Specialization) -> Elaborated:
        """The specialisation's PrimFunc; a failure notes the consts and tensors it was specialised on."""
        with self._noting(spec):
            return self._elaborate(spec)

    def checked_elaboration(self, spec: Specialization) -> Elaborated:
        """The specialisation's PrimFunc, its extents checked: what a launch, or a call on meta tensors standing for
        one (a tracer's), takes; a failure notes the consts and tensors it was specialised on."""
        with self._noting(spec):
            elaborated = self._elaborate(spec)
            check_extents(self.signature.name, elaborated.prim_func)
            return elaborated

    def lower(self, spec: Specialization, target: dict[str, Any]) -> LoweredKernel:
        """Elaborate, check the extents, lower; a failure notes the consts and tensors it was specialised on."""
        elaborated = self.checked_elaboration(spec)
        with self._noting(spec):
            return lower(self.signature.name, elaborated, target, self.options)

    @contextlib.contextmanager
    def _noting(self, spec: Specialization) -> Iterator[None]:
        try:
            yield
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

    def build(self, spec: Specialization, target: dict[str, Any]) -> CompiledKernel[..., Any]:
        return compile_kernel(self.lower(spec, target), self.signature)
