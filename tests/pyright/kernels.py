"""Signature-form kernels that the call sets (correct_calls.py, wrong_calls.py, reveals.py) call.

Written as users write them (no `from __future__ import annotations`), with
real bodies: importing this module decorates each kernel, and
test_call_sets.py does, so every signature here is one the runtime accepts.
"""

from typing import Literal, TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
N = TypeVar("N", bound=tl.dyn[int])
K = TypeVar("K", bound=tl.dyn[int])
R = TypeVar("R", bound=tl.dyn[int])
Batch = TypeVar("Batch")
D = TypeVar("D")


@tl.jit
def gemm(
    A: tl.Tensor[tl.float16, M, K],
    B: tl.Tensor[tl.float16, K, N],
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 32,
) -> tl.Tensor[tl.float32, M, N]:
    (m, k), (_, n) = A.shape, B.shape
    C = T.empty((m, n), tl.float32)
    with T.Kernel(T.ceildiv(n, block_N), T.ceildiv(m, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), tl.float16)
        B_shared = T.alloc_shared((block_K, block_N), tl.float16)
        C_local = T.alloc_fragment((block_M, block_N), tl.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(k, block_K), num_stages=3):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


@tl.jit
def add(A: tl.Tensor[tl.float32, N], B: tl.Tensor[tl.float32, N], C: tl.Tensor[tl.float32, N], block: int = 128) -> None:
    (n,) = A.shape
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]


@tl.jit
def scale(
    X: tl.Tensor[tl.float32, N], alpha: tl.dyn[float], relu: bool = False, block: int = 256
) -> tl.Tensor[tl.float32, N]:
    (n,) = X.shape
    Y = T.empty((n,), tl.float32)
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                if relu:
                    Y[bx * block + i] = T.max(X[bx * block + i] * alpha, 0.0)
                else:
                    Y[bx * block + i] = X[bx * block + i] * alpha
    return Y


@tl.jit
def axpy(X: tl.Tensor[D, N], Y: tl.Tensor[D, N], alpha: tl.dyn[float], block: int = 256) -> tl.Tensor[D, N]:
    """alpha * X + Y in the inputs' own dtype (a dtype variable)."""
    (n,) = X.shape
    Out = T.empty((n,), X.dtype)
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                Out[bx * block + i] = X[bx * block + i] * alpha + Y[bx * block + i]
    return Out


@tl.jit
def tile_rows(A: tl.Tensor[tl.float16, Literal[128], N], block: int = 64) -> tl.Tensor[tl.float16, Literal[128], N]:
    """A literal dim: exactly 128 rows."""
    _, n = A.shape
    Out = T.empty((128, n), tl.float16)
    with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
        for i, j in T.Parallel(128, block):
            if bx * block + j < n:
                Out[i, bx * block + j] = A[i, bx * block + j]
    return Out


@tl.jit(target="sm_90a")
def softmax(X: tl.Tensor[tl.float32, R, M], rows_per_block: int = 2) -> tl.Tensor[tl.float32, R, M]:
    m, n = X.shape
    Y = T.empty((m, n), tl.float32)
    with T.Kernel(T.ceildiv(m, rows_per_block), threads=128) as bx:
        x = T.alloc_fragment((rows_per_block, n), tl.float32)
        row_max = T.alloc_fragment((rows_per_block,), tl.float32)
        row_sum = T.alloc_fragment((rows_per_block,), tl.float32)
        T.copy(X[bx * rows_per_block, 0], x)
        T.reduce_max(x, row_max, dim=1)
        for i, j in T.Parallel(rows_per_block, n):
            x[i, j] = T.exp(x[i, j] - row_max[i])
        T.reduce_sum(x, row_sum, dim=1)
        for i, j in T.Parallel(rows_per_block, n):
            x[i, j] = x[i, j] / row_sum[i]
        T.copy(x, Y[bx * rows_per_block, 0])
    return Y


hopper = tl.jit(target="sm_90a", pass_configs={}, compile_flags=["-O3"], out_idx=None)


@hopper
def transpose(A: tl.Tensor[tl.float32, M, N], block: int = 32) -> tl.Tensor[tl.float32, N, M]:
    """A kernel under a stored decorator."""
    m, n = A.shape
    Out = T.empty((n, m), tl.float32)
    with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=128) as (bx, by):
        for i, j in T.Parallel(block, block):
            if by * block + i < m and bx * block + j < n:
                Out[bx * block + j, by * block + i] = A[by * block + i, bx * block + j]
    return Out


@tl.jit
def sum_and_difference(
    A: tl.Tensor[tl.float32, N], B: tl.Tensor[tl.float32, N], block: int = 128
) -> tuple[tl.Tensor[tl.float32, N], tl.Tensor[tl.float32, N]]:
    (n,) = A.shape
    S = T.empty((n,), tl.float32)
    Diff = T.empty((n,), tl.float32)
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                S[bx * block + i] = A[bx * block + i] + B[bx * block + i]
                Diff[bx * block + i] = A[bx * block + i] - B[bx * block + i]
    return S, Diff


@tl.jit
def batched_gemm(
    A: tl.Tensor[tl.bfloat16, Batch, M, K], B: tl.Tensor[tl.bfloat16, Batch, K, N], block: int = 64
) -> tl.Tensor[tl.float32, Batch, M, N]:
    b, m, k = A.shape
    _, _, n = B.shape
    C = T.empty((b, m, n), tl.float32)
    with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), b, threads=128) as (bx, by, bz):
        A_shared = T.alloc_shared((block, 32), tl.bfloat16)
        B_shared = T.alloc_shared((32, block), tl.bfloat16)
        C_local = T.alloc_fragment((block, block), tl.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(k, 32), num_stages=2):
            T.copy(A[bz, by * block, ko * 32], A_shared)
            T.copy(B[bz, ko * 32, bx * block], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[bz, by * block, bx * block])
    return C


@tl.jit
def fill(Out: tl.Tensor[tl.int32, N], value: tl.dyn[int], mode: Literal["set", "add"] = "set", block: int = 128) -> None:
    (n,) = Out.shape
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                if mode == "add":
                    Out[bx * block + i] = Out[bx * block + i] + value
                else:
                    Out[bx * block + i] = value
