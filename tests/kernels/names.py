"""A kernel whose names generated code cannot hold as they are (no `from __future__ import annotations`).

Its `__name__` is crafted text (brackets, quotes, `%`, a backslash, `??`,
comment delimiters, newlines, a preprocessor line), its parameters are
named like C++ keywords and TileLang's launcher variables, its dyn dim like
a C type, and two consts like the fast path's own variables.
"""

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

CRAFTED = 'gemm[fp16] "quoted" 100%s%n \\ ??/ */ /*\n#error injected\n'

Int = TypeVar("int", bound=tl.dyn[int])  # type: ignore[misc]  # a dim named like a C type


def named(name: str):  # type: ignore[no-untyped-def]
    def rename(fn):  # type: ignore[no-untyped-def]
        fn.__name__ = fn.__qualname__ = name
        return fn

    return rename


@tl.jit
@named(CRAFTED)
def keywords(
    stream: tl.Tensor[tl.float32, Int],
    error_buf: tl.Tensor[tl.float32, Int],
    new: tl.dyn[int],
    this: tl.dyn[float],
    int: tl.ptr,
    flag,
    _tl_stream: int = 1,
    _tl_p0: int = 2,
):
    flag: T.bool  # in the body: a dtype in the signature is read as a string annotation
    (n,) = stream.shape
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n and flag:
                error_buf[bx * 128 + i] = stream[bx * 128 + i] * this + new + _tl_stream + _tl_p0



# Values `keywords` refuses, with the binder's message: the cached call (fast path, launcher) must agree.
REFUSED = [
    (dict(new=True), "dyn parameter 'new' expects an int, got bool True"),
    (dict(int=-1), "ptr parameter 'int' expects a device address (an int from 0 to 2**64 - 1) or a CUDA tensor, got int -1"),
    (dict(this=True), "dyn parameter 'this' expects a float, got bool True"),
    (dict(flag=1), "dyn parameter 'flag' expects a bool, got int 1"),
]

@tl.jit
@named("nul\0named")
def nul_named(A: tl.Tensor[tl.float32, Int]):
    """A name with a NUL character, which Python's compile() refuses in a file name."""
    (n,) = A.shape
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n:
                A[bx * 128 + i] = 0


@tl.jit
def shadowing(Exception: tl.Tensor[tl.float32, Int], TypeError: tl.dyn[int], OverflowError: int = 1):  # noqa: A002
    """Parameters named like the exception classes the generated fast path catches."""
    (n,) = Exception.shape
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n:
                Exception[bx * 128 + i] = TypeError + OverflowError


@tl.jit(out_idx=[-1])
def double(n, block=128):
    """A lazy-style factory named like a C++ keyword: its router's `def` has another name, its errors this one."""

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = X[bx * block + i] * 2.0

    return main
