"""Kernels whose results are T.empty / T.alloc_global outputs."""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
K = TypeVar("K", bound=tl.dyn[int])


@tl.jit
def two_outputs(A: tl.Tensor[tl.float32, M, K], block: int = 128):
    """Returns (first column of A as float32, A as float16): the return order is not the declaration order."""
    m, k = A.shape
    Half = T.empty((m, k), tl.float16)
    First = T.alloc_global((m,), tl.float32)
    with T.Kernel(T.ceildiv(m, block), threads=128) as bx:
        for i in T.Parallel(block):
            if bx * block + i < m:
                First[bx * block + i] = A[bx * block + i, 0]
        for j in T.serial(k):
            for i in T.Parallel(block):
                if bx * block + i < m:
                    Half[bx * block + i, j] = A[bx * block + i, j]
    return First, Half


@tl.jit
def even_elements(A: tl.Tensor[tl.float32, K]):
    """An output whose length is a floor division of a dyn dim."""
    (k,) = A.shape
    Even = T.empty((k // 2,), tl.float32)
    with T.Kernel(T.ceildiv(k // 2, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < k // 2:
                Even[bx * 128 + i] = A[2 * (bx * 128 + i)]
    return Even


@tl.jit
def head_plus_one(A: tl.Tensor[tl.float32, K], m: tl.dyn[int]):
    """An output whose length is a dyn scalar plus one: A[0], ..., A[m] (m < K)."""
    B = T.empty([m + 1], T.float32)
    with T.Kernel(T.ceildiv(m + 1, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < m + 1:
                B[bx * 128 + i] = A[bx * 128 + i]
    return B


@tl.jit
def tuned_rows(A: tl.Tensor[tl.float32, K], rows: int = tl.tune([1, 2]), block: int = tl.tune([64, 128])):
    """`rows` copies of A: a tuned const that decides the output's shape (refused), beside one that does not."""
    (k,) = A.shape
    Copies = T.empty((rows, k), tl.float32)
    with T.Kernel(T.ceildiv(k, block), threads=block) as bx:
        for r in T.serial(rows):
            for i in T.Parallel(block):
                if bx * block + i < k:
                    Copies[r, bx * block + i] = A[bx * block + i]
    return Copies
