"""Kernels annotated in the signature with TileLang's own `T.Tensor` (`import tilelang.language as T`), in a module
without `from __future__ import annotations`: each annotation is a TVM buffer when the def runs, and is read from
source as an in-body annotation is."""

import tilelang.language as T

import tltyped as tl

WIDTH = 64


@tl.jit
def subscripted(A: T.Tensor[(64,), T.float32]):
    with T.Kernel(1, threads=32) as bx:
        A[0] = 1.0


@tl.jit
def module_sizes(A: T.Tensor[(WIDTH, 2), T.float16], B: T.Tensor((WIDTH * 2,), "float32"), s: T.float32):
    with T.Kernel(1, threads=32) as bx:
        B[0] = A[0, 0] * s


@tl.jit
def strided(A: T.StridedTensor[(WIDTH, WIDTH), (WIDTH * 2, 1), T.float32]):
    with T.Kernel(1, threads=32) as bx:
        A[0, 0] = 1.0
