"""Kernels the launcher must not launch unsafely (no `from __future__ import annotations`).

Most write tensors they are given, each in one of the ways device code
writes global memory: the launcher refuses a launch in which such a tensor
shares memory, with another argument or with itself. The others allocate
outputs whose sizes can leave the range the kernel (int32) or the host
(int64) computes them in. tests/unit/test_launcher.py reads what they write
and builds their launchers; tests/gpu/test_launcher_safety.py runs them.
"""

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N", bound=tl.dyn[int])
M = TypeVar("M")


@tl.jit
def add_into(A: tl.Tensor[tl.float32, N], B: tl.Tensor[tl.float32, N], C: tl.Tensor[tl.float32, N], block: int = 128) -> None:
    """C = A + B: plain stores into an out-parameter."""
    (n,) = A.shape
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]


@tl.jit
def scale_in_place(X: tl.Tensor[tl.float32, N], alpha: tl.dyn[float]) -> None:
    """X *= alpha: one parameter, read and written."""
    (n,) = X.shape
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n:
                X[bx * 128 + i] = X[bx * 128 + i] * alpha


@tl.jit
def accumulate(A: tl.Tensor[tl.float32, N], Total: tl.Tensor[tl.float32, 1]) -> None:
    """Total[0] += sum(A): atomic adds into an out-parameter."""
    (n,) = A.shape
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n:
                T.atomic_add(Total[0], A[bx * 128 + i])


@tl.jit
def copy_tiles(A: tl.Tensor[tl.float16, M, 128], B: tl.Tensor[tl.float16, M, 128]) -> None:
    """B = A through shared memory, 64x64 tiles: on Hopper a TMA store through a descriptor of B."""
    (m, _) = A.shape
    with T.Kernel(T.ceildiv(m, 64), 2, threads=128) as (bx, by):
        tile = T.alloc_shared((64, 64), tl.float16)
        T.copy(A[bx * 64, by * 64], tile)
        T.copy(tile, B[bx * 64, by * 64])


@tl.jit
def double_into(X, Y):
    """Y = 2 X, Y a strided tensor: its stride arrives with each call."""
    n, s = T.dynamic("n, s")
    X: T.Tensor[[n], T.float32]
    Y: T.StridedTensor[[n], [s], T.float32]
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n:
                Y[bx * 128 + i] = X[bx * 128 + i] * 2.0


@tl.jit
def widen(A: tl.Tensor[tl.int8, N]):
    """Each element four times over: a T.empty output of n * 4 elements, n an int32 dyn dim."""
    (n,) = A.shape
    B = T.empty((n * 4,), T.int8)
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n:
                for j in T.serial(4):
                    B[(bx * 128 + i) * 4 + j] = A[bx * 128 + i]
    return B


@tl.jit
def square_table(A: tl.Tensor[tl.int8, N], m: T.int64):
    """An output of m * m elements, m an int64 scalar: the host computes its size in 64 bits."""
    Table = T.empty((m * m,), T.int8)
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < m * m:
                Table[bx * 128 + i] = A[0]
    return Table


@tl.jit
def increment_matched(A: T.ptr, Out: tl.ptr, rows: int):
    """Out = A + 1, both rows x 8, over pointers matched to buffers: `T.match_buffer` gives no strides (compact)."""
    X = T.match_buffer(A, (rows, 8), T.float32)
    Y = T.match_buffer(Out, (rows, 8), T.float32)
    with T.Kernel(T.ceildiv(rows, 16), threads=128) as bx:
        for i, j in T.Parallel(16, 8):
            if bx * 16 + i < rows:
                Y[bx * 16 + i, j] = X[bx * 16 + i, j] + 1
