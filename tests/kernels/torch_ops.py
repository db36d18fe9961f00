# pyright: reportRedeclaration=false
"""Kernels called inside PyTorch programs, and programs calling them (tests/unit/test_torch_op.py,
test_torch_autograd.py, tests/gpu/test_torch_programs.py).

No `from __future__ import annotations`: annotations are evaluated objects, as in user code that torch traces.
"""

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
N = TypeVar("N", bound=tl.dyn[int])


@tl.jit
def scale(A: tl.Tensor[tl.float32, N], factor: tl.dyn[float], block: int = 128) -> tl.Tensor[tl.float32, N]:
    """Signature form: returns its output, of the input's dyn length."""
    (n,) = A.shape
    Out = T.empty((n,), tl.float32)
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                Out[bx * block + i] = A[bx * block + i] * factor
    return Out


@tl.jit
def first_n(A: tl.Tensor[tl.float32, N], n: tl.dyn[int], block: int = 128) -> tl.Tensor[tl.float32, N]:
    """Out[i] = A[i] for i < n, else 0: a dyn int, which a traced program may give as a size (a SymInt)."""
    (length,) = A.shape
    Out = T.empty((length,), tl.float32)
    with T.Kernel(T.ceildiv(length, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < length:
                Out[bx * block + i] = T.if_then_else(bx * block + i < n, A[bx * block + i], 0.0)
    return Out


def offset_kernel(offset: float, op: "str | None" = None):
    """A factory: every jit function it makes has one qualname, and adds its own offset (a closure value)."""

    @tl.jit(op=op)
    def add_offset(A: tl.Tensor[tl.float32, N], block: int = 128) -> tl.Tensor[tl.float32, N]:
        (n,) = A.shape
        Out = T.empty((n,), tl.float32)
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Out[bx * block + i] = A[bx * block + i] + offset
        return Out

    return add_offset


@tl.jit(op="tltyped_tests::interleave")
def interleave(A, B, block: int = 128):
    """In-body form: an output of derived length N * 2 + 1."""
    N = T.dynamic("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    Out = T.empty((N * 2 + 1,), T.float32)
    with T.Kernel(T.ceildiv(N * 2 + 1, block), threads=block) as bx:
        for i in T.Parallel(block):
            j = bx * block + i
            if j < N * 2:
                if j % 2 == 0:
                    Out[j] = A[j // 2]
                else:
                    Out[j] = B[j // 2]
            elif j == N * 2:
                Out[j] = 0.0
    return Out


@tl.jit
def iota(n: tl.dyn[int], block: int = 128):
    """No tensor argument: an output made from a dyn int alone."""
    Out = T.empty((n,), T.int32)
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                Out[bx * block + i] = bx * block + i
    return Out


@tl.jit
def head(A, block: int = 256):
    """The first min(N, block) values: an output sized by T.min of a dyn dim."""
    N = T.dynamic("N")
    A: T.Tensor[[N], T.float32]
    Out = T.empty((T.min(N, block),), T.float32)
    with T.Kernel(1, threads=block) as _:
        for i in T.Parallel(block):
            if i < N:
                Out[i] = A[i]
    return Out


@tl.jit
def add_into(A: tl.Tensor[tl.float32, N], Out: tl.Tensor[tl.float32, N], block: int = 128):
    """An out-parameter: Out += A, written in place, nothing returned."""
    (n,) = A.shape
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                Out[bx * block + i] = Out[bx * block + i] + A[bx * block + i]


@tl.jit
def split(A: tl.Tensor[tl.float32, M, N], block: int = 128):
    """Two outputs of different dtypes and shapes: A's first column (float32) and A as float16."""
    m, n = A.shape
    First = T.empty((m,), tl.float32)
    Half = T.empty((m, n), tl.float16)
    with T.Kernel(T.ceildiv(m, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < m:
                First[bx * block + i] = A[bx * block + i, 0]
        for j in T.serial(n):
            for i in T.Parallel(block):
                if bx * block + i < m:
                    Half[bx * block + i, j] = A[bx * block + i, j]
    return First, Half


@tl.jit(out_idx=[-1])
def lazy_double(block=128):
    """Lazy style: a kernel object whose output has the input's dyn length."""
    L = T.dynamic("L")

    @T.prim_func
    def main(X: T.Tensor((L,), "float32"), Y: T.Tensor((L,), "float32")):
        with T.Kernel(T.ceildiv(L, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < L:
                    Y[bx * block + i] = X[bx * block + i] * 2.0

    return main


# -- programs calling them, as the tests trace and compile them ---------------------------------


def scaled_plus_one(a):
    return scale(a, 2.0) + 1


def interleaved(a, b):
    return interleave(a, b) * 2


def accumulated(a, out):
    add_into(a, out)
    return out + 0
