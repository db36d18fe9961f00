"""Row softmax, fp32 arithmetic whatever the storage dtype, in two kernels sharing one body:

- `softmax`: rows are dyn and the row length is const (it sizes the on-chip tile). Each block holds
  `rows_per_block` whole rows on chip, so X is read once and Y written once; one row per block of 256
  threads is the fastest at [8192, 4096] fp16 on an H200 (benchmarks/norms.py).
- `softmax_dyn`: the row length is dyn too, one kernel for every width. A row of at most `block`
  elements is held on chip as `softmax` holds it, the lanes past its end masked out; a longer row is
  read twice, in tiles of `block` (an online softmax, then the output). The width must be a multiple
  of 8: the `assert` is checked at each call and tells the kernel so, which lets it load and store 16
  bytes at a time from a row whose length it does not know.

The exponentials are base 2 of pre-scaled inputs (`exp2(x log2(e) - max log2(e))`, one FMA and the hardware's
exp2 under nvcc's fast math) and each row is scaled by its sum's reciprocal: with `exp` and a division per
element, the same kernel ran at 63% of HBM's bandwidth instead of 81%."""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

DT = TypeVar("DT")
M = TypeVar("M", bound=tl.dyn[int])
N = TypeVar("N")
W = TypeVar("W", bound=tl.dyn[int])
LOG2E = 1.4426950408889634


@T.macro
def softmax_on_chip(x: T.Buffer, row_max: T.Buffer, row_sum: T.Buffer) -> None:
    """Each row of the fragment x ([rows, n], fp32) replaced by its softmax; -inf lanes count for nothing."""
    rows, n = x.shape
    T.reduce_max(x, row_max, dim=1)
    for i, j in T.Parallel(rows, n):
        x[i, j] = T.exp2(x[i, j] * LOG2E - row_max[i] * LOG2E)
    T.reduce_sum(x, row_sum, dim=1)
    for i in T.Parallel(rows):
        row_sum[i] = 1.0 / row_sum[i]
    for i, j in T.Parallel(rows, n):
        x[i, j] = x[i, j] * row_sum[i]


@tl.jit(pass_configs={"tl.enable_fast_math": True})
def softmax(X: tl.Tensor[DT, M, N], rows_per_block: int = 1, threads: int = 256) -> tl.Tensor[DT, M, N]:
    m, n = X.shape
    Y = T.empty((m, n), X.dtype)
    with T.Kernel(T.ceildiv(m, rows_per_block), threads=threads) as bx:
        x = T.alloc_fragment((rows_per_block, n), tl.float32)
        row_max = T.alloc_fragment((rows_per_block,), tl.float32)
        row_sum = T.alloc_fragment((rows_per_block,), tl.float32)
        T.copy(X[bx * rows_per_block, 0], x)
        softmax_on_chip(x, row_max, row_sum)
        T.copy(x, Y[bx * rows_per_block, 0])
    return Y


@tl.jit(pass_configs={"tl.enable_fast_math": True})
def softmax_dyn(X: tl.Tensor[DT, M, W], block: int = 4096, threads: int = 256) -> tl.Tensor[DT, M, W]:
    assert X.shape[1] % 8 == 0
    m, n = X.shape
    Y = T.empty((m, n), X.dtype)
    with T.Kernel(m, threads=threads) as bx:
        x = T.alloc_fragment((1, block), tl.float32)
        row_max = T.alloc_fragment((1,), tl.float32)
        row_sum = T.alloc_fragment((1,), tl.float32)
        tile = T.alloc_fragment((1,), tl.float32)
        if n <= block:  # the row on chip: read once, written once
            T.copy(X[bx, 0], x)
            for i, j in T.Parallel(1, block):
                x[i, j] = T.if_then_else(j < n, x[i, j], -T.infinity(T.float32))
            softmax_on_chip(x, row_max, row_sum)
            T.copy(x, Y[bx, 0])
        else:  # tiles of the row: its running max and sum of exponentials, then the output
            T.fill(row_max, -T.infinity(T.float32))
            T.fill(row_sum, 0.0)
            for k in T.serial(T.ceildiv(n, block)):
                T.copy(X[bx, k * block], x)
                for i, j in T.Parallel(1, block):
                    x[i, j] = T.if_then_else(k * block + j < n, x[i, j], -T.infinity(T.float32))
                T.reduce_max(x, tile, dim=1)
                for i in T.Parallel(1):
                    tile[i] = T.max(tile[i], row_max[i])
                    row_sum[i] = row_sum[i] * T.exp2(row_max[i] * LOG2E - tile[i] * LOG2E)
                    row_max[i] = tile[i]
                for i, j in T.Parallel(1, block):
                    x[i, j] = T.exp2(x[i, j] * LOG2E - row_max[i] * LOG2E)
                T.reduce_sum(x, tile, dim=1)
                for i in T.Parallel(1):
                    row_sum[i] += tile[i]
            for i in T.Parallel(1):
                row_sum[i] = 1.0 / row_sum[i]
            for k in T.serial(T.ceildiv(n, block)):
                T.copy(X[bx, k * block], x)
                for i, j in T.Parallel(1, block):
                    x[i, j] = T.exp2(x[i, j] * LOG2E - row_max[i] * LOG2E) * row_sum[i]
                T.copy(x, Y[bx, k * block])
    return Y
