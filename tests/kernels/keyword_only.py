"""Kernels with keyword-only parameters (after a `*`): a call names them, as Python's calls do."""

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")


@tl.jit
def scaled(A: tl.Tensor[tl.float32, M], *, alpha: tl.dyn[float] = 2.0, block: int = 64) -> tl.Tensor[tl.float32, M]:
    (m,) = A.shape
    B = T.empty((m,), tl.float32)
    with T.Kernel(T.ceildiv(m, block), threads=128) as bx:
        for i in T.Parallel(block):
            if bx * block + i < m:
                B[bx * block + i] = A[bx * block + i] * alpha
    return B

@tl.jit
def routed(A, *, dtype: T.dtype = T.float32, block: int = 64):
    N = T.const("N")
    A: T.Tensor[[N], dtype]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            A[i] = 0

