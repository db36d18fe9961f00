"""Row softmax: rows are dyn, the row length is const (it sizes the on-chip tile); fp32 arithmetic whatever the
storage dtype. Each block holds `rows_per_block` whole rows on chip, so X is read once and Y written once; one
row per block of 256 threads is the fastest at [8192, 4096] fp16 on an H200 (benchmarks/norms.py).

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
LOG2E = 1.4426950408889634


@tl.jit(pass_configs={"tl.enable_fast_math": True})
def softmax(X: tl.Tensor[DT, M, N], rows_per_block: int = 1, threads: int = 256) -> tl.Tensor[DT, M, N]:
    m, n = X.shape
    Y = T.empty((m, n), X.dtype)
    with T.Kernel(T.ceildiv(m, rows_per_block), threads=threads) as bx:
        x = T.alloc_fragment((rows_per_block, n), tl.float32)
        row_max = T.alloc_fragment((rows_per_block,), tl.float32)
        row_sum = T.alloc_fragment((rows_per_block,), tl.float32)
        T.copy(X[bx * rows_per_block, 0], x)
        T.reduce_max(x, row_max, dim=1)
        for i, j in T.Parallel(rows_per_block, n):
            x[i, j] = T.exp2(x[i, j] * LOG2E - row_max[i] * LOG2E)
        T.reduce_sum(x, row_sum, dim=1)
        for i in T.Parallel(rows_per_block):
            row_sum[i] = 1.0 / row_sum[i]
        for i, j in T.Parallel(rows_per_block, n):
            x[i, j] = x[i, j] * row_sum[i]
        T.copy(x, Y[bx * rows_per_block, 0])
    return Y
