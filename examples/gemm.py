"""GEMM in the signature form: dims are TypeVars, K is dyn (one kernel serves every K)."""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
N = TypeVar("N")
K = TypeVar("K", bound=tl.dyn[int])


@tl.jit
def gemm(
    A: tl.Tensor[tl.float16, M, K],
    B: tl.Tensor[tl.float16, K, N],
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 32,
    num_stages: int = 3,
) -> tl.Tensor[tl.float32, M, N]:
    (m, k), (_, n) = A.shape, B.shape
    C = T.empty((m, n), tl.float32)
    with T.Kernel(T.ceildiv(n, block_N), T.ceildiv(m, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), tl.float16)
        B_shared = T.alloc_shared((block_K, block_N), tl.float16)
        C_local = T.alloc_fragment((block_M, block_N), tl.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(k, block_K), num_stages=num_stages):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C
