# pyright: reportRedeclaration=false
"""Derived dims: interleave two length-N inputs and end with a separator (2*N+1 values).

    out[2i] = A[i], out[2i+1] = B[i] for i < N, out[2N] = sep

The in-body form names the relation (`L = N * 2 + 1`); the signature form states
it with an `assert` on the parameters' shapes, which becomes a check of every
call. Either way N is dyn, so one kernel serves every length, and a call whose
lengths disagree is rejected with the dim expression, its value and the size found.
"""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N", bound=tl.dyn[int])
L = TypeVar("L", bound=tl.dyn[int])


@tl.jit
def interleave(A, B, Out, sep: T.float32, block: int = 128):
    N = T.dynamic("N")
    L = N * 2 + 1
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    Out: T.Tensor[[L], T.float32]
    with T.Kernel(T.ceildiv(L, block), threads=block) as bx:
        for i in T.Parallel(block):
            j = bx * block + i
            if j < N * 2:
                if j % 2 == 0:
                    Out[j] = A[j // 2]
                else:
                    Out[j] = B[j // 2]
            elif j == N * 2:
                Out[j] = sep


@tl.jit
def interleave_into(
    A: tl.Tensor[tl.float32, N], B: tl.Tensor[tl.float32, N], Out: tl.Tensor[tl.float32, L], sep: tl.dyn[float], block: int = 128
) -> None:
    assert Out.shape[0] == 2 * A.shape[0] + 1
    (n,) = A.shape
    with T.Kernel(T.ceildiv(2 * n + 1, block), threads=block) as bx:
        for i in T.Parallel(block):
            j = bx * block + i
            if j < n * 2:
                if j % 2 == 0:
                    Out[j] = A[j // 2]
                else:
                    Out[j] = B[j // 2]
            elif j == n * 2:
                Out[j] = sep
