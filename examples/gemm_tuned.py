"""A GEMM whose configuration is tuned on first use: block shape, pipeline depth, threads, block order.

The tuning space is one const parameter whose default is `tl.tune([...])`:
the first call with a new static signature compiles every candidate, times
each on the call's own inputs and keeps the fastest; every later call with
that signature takes the fast path straight to the winner.
"""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
N = TypeVar("N")
K = TypeVar("K", bound=tl.dyn[int])

CONFIGS = [  # block_M, block_N, block_K, num_stages, threads, swizzle panel (blocks)
    (128, 256, 64, 3, 256, 10),
    (128, 256, 64, 3, 256, 4),
    (128, 256, 64, 3, 256, 16),
    (128, 256, 64, 4, 256, 10),
    (256, 128, 64, 3, 256, 10),
    (256, 128, 64, 3, 256, 4),
    (128, 128, 64, 3, 128, 10),
    (128, 128, 64, 4, 256, 10),
    (128, 128, 32, 3, 128, 10),
    (128, 192, 64, 3, 256, 10),
]


@tl.jit
def matmul(
    A: tl.Tensor[tl.float16, M, K],
    B: tl.Tensor[tl.float16, K, N],
    config: tuple[int, int, int, int, int, int] = tl.tune(CONFIGS),
) -> tl.Tensor[tl.float16, M, N]:
    """C = A @ B in fp16, accumulated in fp32, with swizzled block order for L2 reuse."""
    block_M, block_N, block_K, num_stages, threads, panel = config
    (m, k), (_, n) = A.shape, B.shape
    C = T.empty((m, n), tl.float16)
    with T.Kernel(T.ceildiv(n, block_N), T.ceildiv(m, block_M), threads=threads) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), tl.float16)
        B_shared = T.alloc_shared((block_K, block_N), tl.float16)
        C_local = T.alloc_fragment((block_M, block_N), tl.float32)
        C_shared = T.alloc_shared((block_M, block_N), tl.float16)
        T.use_swizzle(panel_size=panel)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(k, block_K), num_stages=num_stages):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C_shared)
        T.copy(C_shared, C[by * block_M, bx * block_N])
    return C
