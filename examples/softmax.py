"""Row softmax: rows are dyn, the row length is const (it sizes the on-chip tile)."""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M", bound=tl.dyn[int])
N = TypeVar("N")


@tl.jit
def softmax(X: tl.Tensor[tl.float32, M, N], rows_per_block: int = 2) -> tl.Tensor[tl.float32, M, N]:
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
