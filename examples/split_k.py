"""A const flag chooses the kernel: plain GEMM, or split-K with atomic accumulation.

`split_k` is a Python bool at elaboration, so the `if` runs in Python and only
the chosen body becomes a kernel; the split-K body launches two kernels (zero
the output, then accumulate each K slice into it).
"""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
N = TypeVar("N")
K = TypeVar("K")


def k_per_split(k: int, splits: int, block_K: int) -> int:
    """Helper run at elaboration: the K extent each split covers, a multiple of block_K."""
    return -(-k // (splits * block_K)) * block_K


@tl.jit
def matmul(
    A: tl.Tensor[tl.float16, M, K],
    B: tl.Tensor[tl.float16, K, N],
    split_k: bool = False,
    splits: int = 4,
    block_M: int = 64,
    block_N: int = 64,
    block_K: int = 32,
) -> tl.Tensor[tl.float32, M, N]:
    (m, k), (_, n) = A.shape, B.shape
    C = T.empty((m, n), tl.float32)
    if split_k:
        with T.Kernel(T.ceildiv(n, block_N), T.ceildiv(m, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = 0.0
        k_slice = k_per_split(k, splits, block_K)
        with T.Kernel(T.ceildiv(n, block_N), T.ceildiv(m, block_M), splits, threads=128) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), tl.float16)
            B_shared = T.alloc_shared((block_K, block_N), tl.float16)
            C_local = T.alloc_fragment((block_M, block_N), tl.float32)
            T.clear(C_local)
            for ko in T.Pipelined(k_slice // block_K, num_stages=2):
                T.copy(A[by * block_M, bz * k_slice + ko * block_K], A_shared)
                T.copy(B[bz * k_slice + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(block_M, block_N):
                T.atomic_add(C[by * block_M + i, bx * block_N + j], C_local[i, j])
    else:
        with T.Kernel(T.ceildiv(n, block_N), T.ceildiv(m, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), tl.float16)
            B_shared = T.alloc_shared((block_K, block_N), tl.float16)
            C_local = T.alloc_fragment((block_M, block_N), tl.float32)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(k, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])
    return C
