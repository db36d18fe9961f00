"""Kernels of kernel_package, and calls of them in their own module, which pyright reads from its source, not from
its stub: there an out_idx kernel is called without its outputs, as at run time, with no error."""

# pyright: reportRedeclaration=false

from typing import Literal, TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
N = TypeVar("N", bound=tl.dyn[int])


@tl.jit(out_idx=[-1])
def add_rows(A, B, C):
    """TileLang's out_idx in the in-body form: called without C, returns it."""
    R, W = T.const("R, W")
    A: T.Tensor[[R, W], T.float32]
    B: T.Tensor[[R, W], T.float32]
    C: T.Tensor[[R, W], T.float32]
    with T.Kernel(R, threads=128) as bx:
        for j in T.Parallel(W):
            C[bx, j] = A[bx, j] + B[bx, j]


@tl.jit(out_idx=-1)
def add_scaled(A: tl.Tensor[tl.float32, M, N], B: tl.Tensor[tl.float32, M, N], C: tl.Tensor[tl.float32, M, N]):
    """TileLang's out_idx in the signature form."""
    with T.Kernel(T.ceildiv(A.shape[1], 128), A.shape[0], threads=128) as (bx, by):
        for j in T.Parallel(128):
            if bx * 128 + j < A.shape[1]:
                C[by, bx * 128 + j] = A[by, bx * 128 + j] * 2.0 + B[by, bx * 128 + j]


@tl.jit
def widen(A):
    """An in-body kernel returning its output."""
    R = T.const("R")
    W = T.dynamic("W")
    A: T.Tensor[[R, W], T.float16]
    Out = T.empty((R, W), T.float32)
    with T.Kernel(R, threads=128) as bx:
        for j in T.Parallel(W):
            Out[bx, j] = A[bx, j]
    return Out


def callers(a: tl.Tensor[tl.float32, Literal[8], Literal[16]]) -> None:
    c = add_rows(a, a)
    d = add_scaled(a, a)
    print(c.sum(), d.sum(), widen(a.half()).sum())
