"""A user's module of kernels, as text to import under a fresh name (a test swaps code in it, as IPython's
`%autoreload` does): written as users write them, without `from __future__ import annotations`. Its kernels
compute B = 2A + 1 (`with_helper`: `scaled` and `offset`), A + 1 (`with_macro`), 3A (`plain`) and A + value
(`shift(n, value)`, lazy style); each `*_edited` function is the code a swap gives its namesake."""

SOURCE = '''
import tltyped as tl
import tltyped.language as T


def offset():
    return 1.0


def offset_edited():
    return 4.0


def scaled(x, factor=2.0):
    return x * factor


@T.macro
def add_one(A, B, i):
    B[i] = A[i] + 1.0


def add_one_edited(A, B, i):
    B[i] = A[i] + 5.0


@tl.jit
def with_helper(A, B):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = scaled(A[i]) + offset()


@tl.jit
def with_macro(A, B):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            add_one(A, B, i)


@tl.jit
def plain(A, B):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * 3.0


def plain_edited(A, B):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * 7.0


@tl.jit
def shift(n, value):
    @T.prim_func
    def shifted(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(n):
                B[i] = A[i] + value
    return shifted


def shift_edited(n, value):
    @T.prim_func
    def shifted(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(n):
                B[i] = A[i] - value
    return shifted
'''
