"""Kernels in spellings of TileLang's own examples, for tests/unit/test_upstream_spellings.py.

No `from __future__ import annotations`, as in TileLang's examples. The
functions left undecorated are definitions tltyped refuses; the tests
decorate them.
"""

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M", bound=tl.dyn[int])
W = TypeVar("W", bound=tl.dyn[int])
C = TypeVar("C")
TILE = 64


# -- 1. `T.Tensor[shape, dtype]` with a shape the body computes ---------------------------


@tl.jit
def matmul_dynamic_mnk(A, B, block_M, block_N, block_K, trans_A, trans_B, in_dtype, out_dtype, accum_dtype, num_stages, threads):
    """TileLang's examples/dynamic_shape/example_dynamic.py, with the subscription form of its annotations."""
    M = T.dynamic("m")
    N = T.dynamic("n")
    K = T.dynamic("k")

    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)

    A_shared_shape = (block_K, block_M) if trans_A else (block_M, block_K)
    B_shared_shape = (block_N, block_K) if trans_B else (block_K, block_N)

    A: T.Tensor[A_shape, in_dtype]
    B: T.Tensor[B_shape, in_dtype]
    C = T.empty((M, N), out_dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_shared = T.alloc_shared(A_shared_shape, in_dtype)
        B_shared = T.alloc_shared(B_shared_shape, in_dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            if trans_A:
                T.copy(A[k * block_K, by * block_M], A_shared)
            else:
                T.copy(A[by * block_M, k * block_K], A_shared)
            if trans_B:
                T.copy(B[bx * block_N, k * block_K], B_shared)
            else:
                T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local, trans_A, trans_B)
        T.copy(C_local, C[by * block_M, bx * block_N])

    return C


@tl.jit
def grouped_rows(X, H, kv_group=1):
    """A const parameter read, then rebound, before the annotations (dsa_sparse_finetune's `H = H_kv`)."""
    S = T.dynamic("S")
    H_kv = H // kv_group
    x_shape = [S, H]
    H = H_kv
    X: T.Tensor(x_shape, T.float32)
    Y = T.empty([S, H], T.float32)

    with T.Kernel(S, threads=32) as bx:
        for j in T.serial(H):
            Y[bx, j] = X[bx, j * kv_group]

    return Y


@tl.jit
def both_orders(A, B):
    """Two-element subscriptions read both ways: tltyped's `[dtype, dim]` and TileLang's `[shape, dtype]`."""
    N = T.const("N")
    dtype = T.float32
    B_shape = (N, 2)
    A: T.Tensor[dtype, N]
    B: T.Tensor[B_shape, dtype]
    with T.Kernel(1, threads=32) as bx:
        for i in T.Parallel(N):
            B[i, 0] = A[i]


# -- 2. several declarations in one assignment ---------------------------------------------


@tl.jit
def tuple_of_declarations(A, B):
    """`R, C = T.dynamic("R"), T.dynamic("C")`, and the kinds mixed."""
    R, C = T.dynamic("R"), T.dynamic("C")
    K, L = T.const("K"), T.dynamic("l")
    A: T.Tensor[[R, C], T.float32]
    B: T.Tensor[[K, L, C], T.float32]
    with T.Kernel(T.ceildiv(R, TILE), threads=128) as bx:
        for i in T.Parallel(TILE):
            if bx * TILE + i < R:
                A[bx * TILE + i, 0] = B[0, 0, 0]


def miscounted_declarations(A):
    R, C = T.dynamic("R, C"), T.dynamic("D")  # <- two dims for one name
    A: T.Tensor[[R, C], T.float32]


# -- 3. tltyped's dtype classes where TileLang takes a dtype --------------------------------

SPELLINGS = {"tltyped": (tl.float32, tl.float16), "TileLang": (T.float32, T.float16)}


@tl.jit
def dtype_functions(A, B, spelling: str):
    """T.infinity, T.max_value, T.min_value, T.Cast and `.astype`, with the dtypes spelled `spelling`'s way."""
    N = T.const("N")
    A: T.Tensor[[N], T.float16]
    B: T.Tensor[[N, 4], T.float32]
    f32, f16 = SPELLINGS[spelling]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i, 0] = T.min(T.Cast(f32, A[i]), T.infinity(f32))
            B[i, 1] = T.max_value(f16).astype(f32)
            B[i, 2] = T.max(A[i].astype(f32), T.min_value(f32))
            B[i, 3] = T.cast(T.Cast(f16, B[i, 0]), f32)


# -- 4. every TileLang dtype is a dtype ------------------------------------------------------


@tl.jit
def rounded_through(A, B, via: T.dtype = T.float32):
    """A const dtype that the body computes in (`via=T.tfloat32` rounds to TensorFloat-32)."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = T.Cast(T.float32, T.Cast(via, A[i]))


def tfloat32_tensor(A):
    N = T.const("N")
    A: T.Tensor[[N], T.tfloat32]


def tfloat32_scalar(A, scale: T.tfloat32):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]


def fnuz_tensor(A):
    N = T.const("N")
    A: T.Tensor[[N], T.float8_e4m3fnuz]


def fnuz_scalar(A, scale: T.float8_e4m3fnuz):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]


# -- 5. a shape `assert` is a fact the kernel may use ---------------------------------------


@T.macro
def rows_exp(X, Y, block):
    """Y = exp(X) row by row, in tiles of `block` columns: fp16 loads with T.copy, math in T.Parallel."""
    m, n = X.shape
    with T.Kernel(m, threads=128) as row:
        x = T.alloc_fragment((block,), T.float16)
        for k in T.serial(T.ceildiv(n, block)):
            T.copy(X[row, k * block], x)
            for j in T.Parallel(block):
                x[j] = T.exp(x[j])
            T.copy(x, Y[row, k * block])


@tl.jit
def exp_rows(X: tl.Tensor[tl.float16, M, W]) -> tl.Tensor[tl.float16, M, W]:
    m, n = X.shape
    Y = T.empty((m, n), tl.float16)
    rows_exp(X, Y, 1024)
    return Y


@tl.jit
def exp_rows_aligned(X: tl.Tensor[tl.float16, M, W]) -> tl.Tensor[tl.float16, M, W]:
    """exp_rows, for widths a multiple of 8 (16 bytes of fp16): every call checks it, the kernel assumes it."""
    assert X.shape[1] // 8 * 8 == X.shape[1]
    m, n = X.shape
    Y = T.empty((m, n), tl.float16)
    rows_exp(X, Y, 1024)
    return Y


@tl.jit
def exp_rows_mod_8(X: tl.Tensor[tl.float16, M, W]) -> tl.Tensor[tl.float16, M, W]:
    """exp_rows_aligned, the relation spelled with `%`."""
    assert X.shape[1] % 8 == 0
    m, n = X.shape
    Y = T.empty((m, n), tl.float16)
    rows_exp(X, Y, 1024)
    return Y


@tl.jit
def exp_rows_const_width(X: tl.Tensor[tl.float16, M, C], Y: tl.Tensor[tl.float16, M, C]):
    """A relation over const dims is folded to True before the kernel sees it: no assume."""
    assert X.shape[1] // 8 * 8 == Y.shape[1]
    rows_exp(X, Y, 1024)
