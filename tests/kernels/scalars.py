"""Dyn scalars of every dtype the launcher passes by value (no `from __future__ import annotations`).

tests/unit/test_launcher.py builds their launchers and checks that each
launch takes exactly the values the binder takes: the integers of each
type's range (uint64's upper half included), the floats within each type's
finite range, infinities and NaN.
"""

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N", bound=tl.dyn[int])


@tl.jit
def every_scalar(
    X: tl.Tensor[tl.float32, N],
    i8: T.int8,
    u8: T.uint8,
    i16: T.int16,
    u16: T.uint16,
    u32: T.uint32,
    u64: T.uint64,
    f16: T.float16,
    f32: tl.dyn[float],
    f64: T.float64,
    block: int = 128,
) -> tl.Tensor[tl.float32, N]:
    """Y = X * f32 + the others, each cast to float32: one parameter of each narrow or unsigned type."""
    (n,) = X.shape
    Y = T.empty((n,), tl.float32)
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                Y[bx * block + i] = (
                    X[bx * block + i] * f32
                    + T.Cast("float32", i8) + T.Cast("float32", u8) + T.Cast("float32", i16) + T.Cast("float32", u16)
                    + T.Cast("float32", u32) + T.Cast("float32", u64) + T.Cast("float32", f16) + T.Cast("float32", f64)
                )
    return Y

