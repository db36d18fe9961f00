"""GEMM variants: a bool const choosing between two kernel bodies."""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
N = TypeVar("N")
K = TypeVar("K")


@tl.jit
def gemm_split_k(
    A: tl.Tensor[tl.float16, M, K],
    B: tl.Tensor[tl.float16, K, N],
    split_k: bool = False,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 32,
) -> tl.Tensor[tl.float32, M, N]:
    """C = A @ B; with split_k the K loop runs as two halves into two accumulators (K % (2*block_K) == 0)."""
    (m, k), (_, n) = A.shape, B.shape
    C = T.empty((m, n), tl.float32)
    with T.Kernel(T.ceildiv(n, block_N), T.ceildiv(m, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), tl.float16)
        B_shared = T.alloc_shared((block_K, block_N), tl.float16)
        C_local = T.alloc_fragment((block_M, block_N), tl.float32)
        T.clear(C_local)
        if split_k:
            A_high = T.alloc_shared((block_M, block_K), tl.float16)
            B_high = T.alloc_shared((block_K, block_N), tl.float16)
            C_high = T.alloc_fragment((block_M, block_N), tl.float32)
            T.clear(C_high)
            half = T.ceildiv(k, 2 * block_K)
            for ko in T.Pipelined(half, num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for ko in T.Pipelined(half, num_stages=2):
                T.copy(A[by * block_M, (half + ko) * block_K], A_high)
                T.copy(B[(half + ko) * block_K, bx * block_N], B_high)
                T.gemm(A_high, B_high, C_high)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] += C_high[i, j]
        else:
            for ko in T.Pipelined(T.ceildiv(k, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C
