"""Element-wise kernels: static evaluation of consts and helpers, strided inputs."""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
N = TypeVar("N")

HELPER_CALLS: list[int] = []  # every call of rows_per_block, with its argument


def rows_per_block(m: int) -> int:
    """A plain Python helper the kernel body calls with a const dim."""
    HELPER_CALLS.append(m)
    return 64 if m <= 256 else 128


@tl.jit
def add_or_sub(
    A: tl.Tensor[tl.float32, M, N],
    B: tl.Tensor[tl.float32, M, N],
    subtract: bool = False,
):
    m, n = A.shape
    C = T.empty((m, n), tl.float32)
    rows = rows_per_block(m)
    with T.Kernel(T.ceildiv(m, rows), threads=128) as bx:
        for i, j in T.Parallel(rows, n):
            if subtract:
                C[bx * rows + i, j] = A[bx * rows + i, j] - B[bx * rows + i, j]
            else:
                C[bx * rows + i, j] = A[bx * rows + i, j] + B[bx * rows + i, j]
    return C


@tl.jit
def add_in_body(A, B):
    """The in-body form of add_or_sub's `add` branch: dims from T.const instead of A.shape."""
    M, N = T.const("M, N")
    A: T.Tensor[[M, N], T.float32]
    B: T.Tensor[[M, N], T.float32]
    C = T.empty((M, N), tl.float32)
    rows = rows_per_block(M)
    with T.Kernel(T.ceildiv(M, rows), threads=128) as bx:
        for i, j in T.Parallel(rows, N):
            C[bx * rows + i, j] = A[bx * rows + i, j] + B[bx * rows + i, j]
    return C
