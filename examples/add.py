"""Elementwise add with a dyn length: one kernel serves every N."""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N", bound=tl.dyn[int])


@tl.jit
def add(
    A: tl.Tensor[tl.float16, N],
    B: tl.Tensor[tl.float16, N],
    C: tl.Tensor[tl.float16, N],
    block: int = 128,
) -> None:
    """C = A + B, written into C."""
    (n,) = A.shape
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]


@tl.jit
def scale(X: tl.Tensor[tl.float32, N], alpha: tl.dyn[float], block: int = 256) -> tl.Tensor[tl.float32, N]:
    """alpha * X, into a new tensor; alpha is passed at run time."""
    (n,) = X.shape
    Y = T.empty((n,), tl.float32)
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                Y[bx * block + i] = X[bx * block + i] * alpha
    return Y
