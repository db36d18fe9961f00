"""TileLang's own `T.Tensor` in a signature under `from __future__ import annotations`: the annotation may name
the kernel's consts and the dims its body declares, which have no value when the def runs."""

from __future__ import annotations

import tilelang.language as T

import tltyped as tl


@tl.jit
def blocked(A: T.Tensor[(N, block), T.float16], B: T.Tensor((N,), T.float32), block: int = 64):
    N = T.dynamic("N")
    with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
        for i in T.Parallel(32):
            B[bx * 32 + i] = A[bx * 32 + i, 0]
