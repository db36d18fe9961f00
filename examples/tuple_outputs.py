"""Two outputs, returned as a tuple in the order the kernel returns them."""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N", bound=tl.dyn[int])


@tl.jit
def sum_and_difference(
    A: tl.Tensor[tl.float32, N], B: tl.Tensor[tl.float32, N], block: int = 128
) -> tuple[tl.Tensor[tl.float32, N], tl.Tensor[tl.float32, N]]:
    (n,) = A.shape
    D = T.empty((n,), tl.float32)
    S = T.alloc_global((n,), tl.float32)
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                S[bx * block + i] = A[bx * block + i] + B[bx * block + i]
                D[bx * block + i] = A[bx * block + i] - B[bx * block + i]
    return S, D
