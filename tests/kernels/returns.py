"""Kernels whose return annotations agree, or not, with what their bodies return (the factory's values decide),
in a module without `from __future__ import annotations`, as users write them."""

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N", bound=tl.dyn[int])
M = TypeVar("M")


def make(out_dtype=tl.float32, factor=1, extra=0, both=False):
    """`-> Tensor[float32, N, M]`; the body returns `out_dtype[N * factor, M + extra]`, and a second one if `both`."""

    @tl.jit
    def scaled(X: tl.Tensor[tl.float32, N, M]) -> tl.Tensor[tl.float32, N, M]:
        n, m = X.shape
        Y = T.empty((n * factor, m + extra), out_dtype)
        with T.Kernel(1, threads=128) as bx:
            Y[0, 0] = X[0, 0]
        if both:
            Z = T.empty((n, m), tl.float32)
            return Y, Z
        return Y

    return scaled


@tl.jit
def pair(X: tl.Tensor[tl.float32, N, M]) -> tuple[tl.Tensor[tl.float32, N, M], tl.Tensor[tl.float16, M]]:
    n, m = X.shape
    Y = T.empty((n, m), tl.float32)
    Z = T.empty((m,), tl.float16)
    with T.Kernel(1, threads=128) as bx:
        Y[0, 0] = X[0, 0]
        Z[0] = T.cast(X[0, 0], tl.float16)
    return Y, Z


@tl.jit
def one_in_a_tuple(X: tl.Tensor[tl.float32, N]) -> tl.Tensor[tl.float32, N]:
    """`return (Y,)`: one output, which a call gives back itself, as `return Y` would."""
    (n,) = X.shape
    Y = T.empty((n,), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        Y[0] = X[0]
    return (Y,)


@tl.jit
def stated_none(X: tl.Tensor[tl.float32, N]) -> None:
    (n,) = X.shape
    Y = T.empty((n,), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        Y[0] = X[0]
    return Y


@tl.jit
def unstated(X: tl.Tensor[tl.float32, N]):
    (n,) = X.shape
    Y = T.empty((n * 2,), tl.float16)
    with T.Kernel(1, threads=128) as bx:
        Y[0] = T.cast(X[0], tl.float16)
    return Y
