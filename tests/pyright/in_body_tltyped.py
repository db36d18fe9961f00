"""Correct in-body kernels written with tltyped's language (`import tltyped.language as T`) and its calls.

As in in_body_tilelang.py, pyright reports only the in-body annotations'
redeclarations (`reportRedeclaration`).
"""

from typing import Final, Literal

import torch

import tltyped as tl
import tltyped.language as T

L64 = Literal[64]
HIDDEN: Final = 64


@tl.jit
def scale_rows(A, B, alpha, n, block_M: int = 64):
    M = T.const("M")
    N = T.dynamic("N")
    A: T.Tensor[[M, N], T.float32]
    B: T.Tensor[[M, N], T.float32]
    alpha: T.float32
    n: T.int32
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        for j in T.serial(N):
            for i in T.Parallel(block_M):
                if bx * block_M + i < M and j < n:
                    B[bx * block_M + i, j] = A[bx * block_M + i, j] * alpha


@tl.jit
def convert(X, Y, out_dtype: T.dtype = tl.float32, block: int = 256):
    """The output's dtype is a const parameter."""
    N = T.dynamic("N")
    X: T.Tensor[[N], T.float16]
    Y: T.Tensor[[N], out_dtype]
    with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
        buf = T.alloc_fragment((block,), out_dtype)
        T.copy(X[bx * block], buf)
        T.copy(buf, Y[bx * block])


@tl.jit
def rows(A, B: tl.Tensor[tl.float16, L64]):
    """A literal dim in the body, and one through a Literal alias in the signature."""
    R = T.const("R")
    A: T.Tensor[[R, 64], T.float16]
    Out = T.empty((R,), tl.float16)
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(R):
            Out[i] = A[i, 0]
    return Out


@tl.jit
def widen(A):
    """TileLang's spelling of an output through tltyped's language: `T.empty(M, N, dtype=...)`."""
    M = T.const("M")
    N = T.dynamic("N")
    A: T.Tensor[[M, N], T.float16]
    Out = T.empty(M, N, dtype=T.float32)
    with T.Kernel(M, threads=128) as bx:
        for j in T.Parallel(N):
            Out[bx, j] = A[bx, j]
    return Out


@tl.jit(out_idx=[-1])
def add_rows(A, B, C):
    """TileLang's out_idx: called without C, returns it (out_idx_calls.py calls it)."""
    M, N = T.const("M, N")
    A: T.Tensor[[M, N], T.float32]
    B: T.Tensor[[M, N], T.float32]
    C: T.Tensor[[M, N], T.float32]
    with T.Kernel(M, threads=128) as bx:
        for j in T.Parallel(N):
            C[bx, j] = A[bx, j] + B[bx, j]


@tl.jit(out_idx=[0, 2])
def halves(Lo, X, Hi, block: L64 = 64):
    """Two outputs, returned as a tuple in out_idx order; a dyn dim."""
    N = T.dynamic("N")
    Lo: T.Tensor[[N], T.float16]
    X: T.Tensor[[N], T.float32]
    Hi: T.Tensor[[N], T.bfloat16]
    with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < N:
                Lo[bx * block + i] = X[bx * block + i]
                Hi[bx * block + i] = X[bx * block + i]


@tl.jit
def project(A, B):
    """Names TileLang's examples bind: a tuple of declarations, a dtype bound to a name, a module constant as a dim."""
    R, C = T.dynamic("R"), T.dynamic("C")
    dtype = T.bfloat16
    A: T.Tensor[[R, HIDDEN], dtype]
    B: T.Tensor[[C, HIDDEN], dtype]
    Out = T.empty((R, C), T.float32)
    with T.Kernel(R, threads=128) as bx:
        for j in T.serial(C):
            Out[bx, j] = A[bx, 0] * B[j, 0]
    return Out


def callers(a: tl.Tensor[tl.float32, Literal[8], Literal[16]], h: tl.Tensor[tl.float16, Literal[100]]) -> None:
    x = torch.randn(8, 16)
    scale_rows(x, torch.empty_like(x), 2.0, 16)
    scale_rows(a, a, 0.5, n=16, block_M=32)
    convert(h, torch.empty(100), out_dtype=tl.float32)
    convert(h, torch.empty(100, dtype=torch.float16), T.float16)
    first = rows(torch.empty(32, 64, dtype=torch.float16), torch.empty(64, dtype=torch.float16))
    print(first.float().sum())
    print(widen(torch.empty(8, 16, dtype=torch.float16)).float().sum())
    print(project(torch.empty(4, 64, dtype=torch.bfloat16), torch.empty(5, 64, dtype=torch.bfloat16)).sum())
    lo, hi = halves(x[0], block=64)  # out_idx kernels, in their own module: called without their outputs
    print(add_rows(a, a).sum(), lo.float() + hi.float())
