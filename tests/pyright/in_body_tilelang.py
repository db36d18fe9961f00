"""Correct in-body kernels written with TileLang's own language (`import tilelang.language as T`).

pyright reports one thing here, by design of the form: each in-body
annotation of a parameter redeclares it (`reportRedeclaration`). The README's
one line quiets exactly that; test_call_sets.py checks both.
"""

import tilelang.language as T

import tltyped as tl

hopper = tl.jit(target="sm_90a")


@tl.jit
def gemm(
    A,
    B,
    C,
    out_dtype: T.dtype = T.float32,
    block_M: int = 128,
    block_N: int = 128,
    block_K: int = 32,
):
    M, N, K = T.const("M, N, K")

    A: T.Tensor[[M, K], T.float16]
    B: T.Tensor[[K, N], T.float16]
    C: T.Tensor[[M, N], out_dtype]

    with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N)) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), A.dtype)
        B_shared = T.alloc_shared((block_K, block_N), B.dtype)
        C_local = T.alloc_fragment((block_M, block_N), out_dtype)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[bx * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, by * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[bx * block_M, by * block_N])


@hopper
def masked_relu(X, mask, fill, block: int = 128):
    """Element math on tensor elements: T.exp, T.max and T.if_then_else of `X[i]`."""
    N = T.dynamic("N")
    X: T.Tensor[[N], T.float32]
    mask: T.Tensor[[N], T.bool]
    fill: T.float32
    Out = T.empty(N, dtype=T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
        for i in T.Parallel(block):
            j = bx * block + i
            if j < N:
                Out[j] = T.if_then_else(mask[j], T.max(X[j], 0.0), fill) + T.exp(X[j]) * T.min(X[j], 1.0)
    return Out


@tl.jit
def pad(A, value, block: int = 128):
    """A derived dim, named and inline, and a dyn scalar typed with a TileLang dtype."""
    N = T.dynamic("N")
    L = N * 2 + 1
    A: T.Tensor[[N], T.float32]
    value: T.float32
    Out = T.empty(L, dtype=T.float32)
    Tail = T.empty(T.ceildiv(N, 4), dtype=T.float32)
    with T.Kernel(T.ceildiv(L, block), threads=block) as bx:
        for i in T.Parallel(block):
            j = bx * block + i
            if j < N:
                Out[j] = A[j]
            elif j < L:
                Out[j] = value
            if j < T.ceildiv(N, 4):
                Tail[j] = A[j * 4]
    return Out, Tail
