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
from tltyped.frontend.elaborate import Elaborator
from tltyped.frontend.signature import KernelSignature, Specialization


class KernelBuilder:
    """Builds the kernels of one jit function (TileLang's AST rewrite of its body runs once, here)."""

    def __init__(self, fn: Callable[..., Any], signature: KernelSignature, options: BuildOptions) -> None:
        self.signature = signature
        self.options = options
        self.elaborator = Elaborator(fn, signature)

    def lower(self, spec: Specialization, target: dict[str, Any]) -> LoweredKernel:
        return lower(self.signature.name, self.elaborator.elaborate(spec), target, self.options)

    def build(self, spec: Specialization, target: dict[str, Any]) -> CompiledKernel:
        return compile_kernel(self.lower(spec, target), self.signature)
