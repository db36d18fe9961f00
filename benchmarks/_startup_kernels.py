"""The kernels of benchmarks/startup.py, as a user's module (no `from __future__ import annotations`)."""

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N", bound=tl.dyn[int])
R = TypeVar("R")
C = TypeVar("C")


@tl.jit
def add(A: tl.Tensor[tl.float16, N], B: tl.Tensor[tl.float16, N]) -> tl.Tensor[tl.float16, N]:
    """A + B into a new tensor."""
    (n,) = A.shape
    Out = T.empty((n,), tl.float16)
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n:
                Out[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]
    return Out


@tl.jit
def row_sum(X: tl.Tensor[tl.float32, R, C], block: int = tl.tune([16, 32, 64, 128])) -> tl.Tensor[tl.float32, R]:
    """The sum of each row, the rows per block tuned."""
    r, c = X.shape
    out = T.empty((r,), tl.float32)
    with T.Kernel(T.ceildiv(r, block), threads=128) as bx:
        acc = T.alloc_fragment((block,), tl.float32)
        tile = T.alloc_fragment((block, c), tl.float32)
        T.copy(X[bx * block, 0], tile)
        T.reduce_sum(tile, acc, dim=1)
        T.copy(acc, out[bx * block])
    return out
