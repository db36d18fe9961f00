"""Triton versions of dispatch.py's three kernels (a module of its own: Triton reads module globals).

Each kernel handles BLOCK elements per program, with a bounds mask, like the
tltyped and TileLang ones; `SIGNATURES` gives their argument types for a
compile without a GPU (`triton.compile` with an explicit target, dry run).
"""

import triton
import triton.language as tl


@triton.jit
def add_kernel(a, b, c, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c + offs, tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)


@triton.jit
def scale_kernel(a, b, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(b + offs, (tl.load(a + offs, mask=mask) * alpha).to(tl.float16), mask=mask)


@triton.jit
def add7_kernel(a, b, c, d, e, f, g, h, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    total = tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask) + tl.load(c + offs, mask=mask)
    total = total + tl.load(d + offs, mask=mask) + tl.load(e + offs, mask=mask) + tl.load(f + offs, mask=mask)
    tl.store(h + offs, total + tl.load(g + offs, mask=mask), mask=mask)


KERNELS = {"a": add_kernel, "b": scale_kernel, "c": add7_kernel}

SIGNATURES = {
    "a": {"a": "*fp16", "b": "*fp16", "c": "*fp16", "n": "i32", "BLOCK": "constexpr"},
    "b": {"a": "*fp16", "b": "*fp16", "alpha": "fp32", "n": "i32", "BLOCK": "constexpr"},
    "c": {**{x: "*fp16" for x in "abcdefgh"}, "n": "i32", "BLOCK": "constexpr"},
}
