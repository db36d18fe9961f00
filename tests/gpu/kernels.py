"""Kernels defined for the GPU call-path tests (kernels must live in files)."""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N", bound=tl.dyn[int])
M = TypeVar("M", bound=tl.dyn[int])
R = TypeVar("R")
C = TypeVar("C")


@tl.jit
def axpy(X: tl.Tensor[tl.float32, N], Y: tl.Tensor[tl.float32, N], alpha: tl.dyn[float] = 2.0, block: int = 256) -> None:
    """Y += alpha * X, in place: a kernel whose effect shows which stream ran it."""
    (n,) = X.shape
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                Y[bx * block + i] = Y[bx * block + i] + alpha * X[bx * block + i]


@tl.jit
def axpy_asserted(X: tl.Tensor[tl.float32, N], Y: tl.Tensor[tl.float32, M], alpha: tl.dyn[float] = 2.0,
                  block: int = 256) -> None:
    """axpy, its tensors' lengths asserted equal rather than declared so: the generated fast path serves its calls,
    since a shape assert is a check the C cached call does not make."""
    assert Y.shape[0] == X.shape[0]
    (n,) = X.shape
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                Y[bx * block + i] = Y[bx * block + i] + alpha * X[bx * block + i]


@tl.jit
def row_sum(X: tl.Tensor[tl.float32, R, C], block: int = tl.tune([32, 64])) -> tl.Tensor[tl.float32, R]:
    """Sum of each row; R and C const, the block size tuned on first use."""
    r, c = X.shape
    out = T.empty((r,), tl.float32)
    with T.Kernel(T.ceildiv(r, block), threads=128) as bx:
        acc = T.alloc_fragment((block,), tl.float32)
        tile = T.alloc_fragment((block, c), tl.float32)
        T.copy(X[bx * block, 0], tile)
        T.reduce_sum(tile, acc, dim=1)
        T.copy(acc, out[bx * block])
    return out


@tl.jit
def tuned_double(X: tl.Tensor[tl.float32, N], block: int = tl.tune([64, 128])) -> tl.Tensor[tl.float32, N]:
    """2 X, its block tuned: tests/gpu/test_tuning.py registers its backward."""
    (n,) = X.shape
    Y = T.empty((n,), tl.float32)
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                Y[bx * block + i] = X[bx * block + i] * 2
    return Y
