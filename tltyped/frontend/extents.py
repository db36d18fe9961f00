"""The extents an elaborated kernel launches, loops over and allocates, checked before lowering.

Consts reach the body as plain ints, and what a kernel computes from them
(a block size, `T.ceildiv(m, block)`, `threads=`) becomes the extents of its
grid, its loops and its buffers. No annotation says which int is a block
size, so the extents themselves are checked, once each is a constant: a
negative loop extent silently runs nothing (the output keeps whatever was in
memory), a negative grid becomes four billion blocks, and more than 1024
threads per block (or a grid beyond CUDA's limits) only fails at the
launch, on the GPU. Each becomes a `KernelBuildError` here, which the
dispatcher completes with the const values the kernel was specialised on.
A grid sized by dyn dims is checked at each call on tensors without data
(`check_grid`), which no launch follows to refuse it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tilelang import tvm

from tltyped.errors import ArgumentValueError, KernelBuildError
from tltyped.frontend.tir_nodes import tir_nodes

MAX_THREADS = 1024  # per block, every CUDA architecture
MAX_GRID = {"blockIdx.x": 2**31 - 1, "blockIdx.y": 65535, "blockIdx.z": 65535}

tirx = tvm.tirx


def check_extents(name: str, prim_func: Any) -> None:
    """Raise a KernelBuildError naming the first extent that no launch can run correctly."""
    problems = [problem for node in tir_nodes(prim_func.body) for problem in _problems(node)]
    if problems:
        raise KernelBuildError(f"{name}: {problems[0]}")


def _problems(node: Any) -> list[str]:
    if isinstance(node, tirx.For):
        return _loop(node)
    if isinstance(node, tirx.SBlock):
        return _block(node)
    return []


def _constant(expr: Any) -> int | None:
    return int(expr) if isinstance(expr, tirx.IntImm) else None


def _loop(loop: Any) -> list[str]:
    extent = _constant(loop.extent)
    if extent is None:
        return []
    binding = loop.thread_binding
    tag = str(binding.thread_tag) if binding is not None else ""
    if tag in MAX_GRID:
        if not 0 <= extent <= MAX_GRID[tag]:
            return [f"T.Kernel's grid has {extent} blocks along {tag[-1]}; CUDA takes 0 to {MAX_GRID[tag]}"]
        return []
    if extent < 0:
        return [f"a loop over `{loop.loop_var.name}` has extent {extent}; a loop extent must be >= 0"]
    return []


def check_grid(name: str, prim_func: Any, evaluate: Callable[[Any], Any]) -> None:
    """Raise an ArgumentValueError where a grid extent over dyn dims is, at a call's sizes (`evaluate` gives an
    extent's value: an int, or a tracer's symbolic size, left unchecked), beyond CUDA's limits."""
    for node in tir_nodes(prim_func.body):
        binding = node.thread_binding if isinstance(node, tirx.For) else None
        tag = str(binding.thread_tag) if binding is not None else ""
        if tag not in MAX_GRID or _constant(node.extent) is not None:
            continue
        try:
            extent = evaluate(node.extent)
        except (ArgumentValueError, KeyError, ArithmeticError):  # not arithmetic of the call's sizes, or dividing
            # by a size of 0: the launch checks it
            continue
        if type(extent) is int and not 0 <= extent <= MAX_GRID[tag]:
            raise ArgumentValueError(f"{name}: T.Kernel's grid would have {extent} blocks along {tag[-1]} at this "
                                     f"call's sizes; CUDA takes 0 to {MAX_GRID[tag]}")


def _block(block: Any) -> list[str]:
    problems = []
    threads = block.annotations.get("tl.launch_threads")
    if threads is not None:
        sizes = [_constant(t) for t in threads]
        total = math.prod(s for s in sizes if s is not None)
        if total > MAX_THREADS:
            shape = " x ".join(map(str, sizes))
            problems.append(f"T.Kernel launches {total} threads per block ({shape}); CUDA allows at most {MAX_THREADS}")
    for buffer in block.alloc_buffers:
        dims = [_constant(d) for d in buffer.shape]
        shape = ", ".join(str(d) for d in buffer.shape)
        if any(d is not None and d < 0 for d in dims):
            problems.append(f"buffer `{buffer.name}` is allocated with shape ({shape}); a dim must be >= 0")
        if None in dims and str(buffer.scope()).startswith(("shared", "local")):
            problems.append(
                f"on-chip buffer `{buffer.name}` ({buffer.scope()}) is allocated with shape ({shape}), which varies "
                "per call; its size must be fixed when the kernel is built (tile the dyn dim, or make it const)"
            )
    return problems


def check_launches(name: str, prim_func: Any) -> None:
    """Raise a KernelBuildError for a body with no `with T.Kernel(...)` (TileLang's launch frame opens a block
    named `tilelang_root`): it lowers to an empty device kernel, which runs nothing on the GPU. Only a build
    refuses it: TileLang's own tests lower such functions, and a call on meta tensors (a tracer's) reads only
    the outputs' shapes, which such a body still states."""
    if not any(isinstance(node, tirx.SBlock) and node.name_hint == "tilelang_root" for node in tir_nodes(prim_func.body)):
        raise KernelBuildError(f"{name}: the body launches no kernel: what runs on the GPU goes in `with T.Kernel(...)`")
