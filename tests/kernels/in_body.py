"""In-body declarations (the second seed's form) beyond the seed GEMM."""

from __future__ import annotations

import tltyped as tl
import tltyped.language as T


@tl.jit
def scale_rows(A, B, alpha, block_M: int = 64):
    M = T.const("M")
    N = T.dynamic("N")
    A: T.Tensor[[M, N], T.float32]
    B: T.Tensor[[M, N], T.float32]
    alpha: T.float32
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        for j in T.serial(N):
            for i in T.Parallel(block_M):
                if bx * block_M + i < M:
                    B[bx * block_M + i, j] = A[bx * block_M + i, j] * alpha


@tl.jit
def typed_scalars(A, half_value, double_value, big_count, enabled):
    """Dyn scalars spelled with TileLang's dtypes other than int32/float32."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    half_value: T.float16
    double_value: T.float64
    big_count: T.int64
    enabled: T.bool
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            if enabled:
                A[i] = T.cast(double_value, T.float32) + T.cast(half_value, T.float32) + T.cast(big_count, T.float32)


@tl.jit
def const_names_with_trailing_space(A):
    """`T.const("M, N ")`: the analysis splits on whitespace, TileLang on commas."""
    M, N = T.const("M, N ")
    A: T.Tensor[[M, N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i, j in T.Parallel(M, N):
            A[i, j] = 0


@tl.jit
def converted(A, B, out_dtype: T.dtype = T.float32):
    """A `T.dtype` const naming an in-body tensor's dtype, under postponed annotations: the string `T.dtype` reads
    as tltyped's stand-in before TileLang is imported and as TileLang's class after, one annotation either way."""
    N = T.const("N")
    A: T.Tensor[[N], T.float16]
    B: T.Tensor[[N], out_dtype]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i]


@tl.jit
def converted_as_listed(A, B, out_dtypes: tuple[T.dtype, ...] = (T.float32,)):
    """`T.dtype` inside a const's annotation (`tuple[T.dtype, ...]`), read alike before and after TileLang's import."""
    N = T.const("N")
    out_dtype = out_dtypes[0]
    A: T.Tensor[[N], T.float16]
    B: T.Tensor[[N], out_dtype]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i]
