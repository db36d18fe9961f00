"""Kernels whose consts are typed, checked and keyed by type (no `from __future__ import annotations`)."""

import dataclasses
import enum
from typing import Literal, Optional, TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")


class Mode(enum.IntEnum):
    PLAIN = 0
    FAST = 1


@dataclasses.dataclass(frozen=True)
class Knob:
    """A configuration object: equal to another whose fields are `==` (`Knob(0.0) == Knob(-0.0)`)."""

    value: float = 0.0


@tl.jit
def scale(A: tl.Tensor[tl.int32, M], B: tl.Tensor[tl.float32, M], factor: float = 2.0, block: int = 64):
    """B = A * factor: int32 arithmetic (which wraps) when `factor` is an int, float arithmetic when a float."""
    (m,) = A.shape
    with T.Kernel(T.ceildiv(m, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < m:
                B[bx * block + i] = A[bx * block + i] * factor


@tl.jit
def blocked(A: tl.Tensor[tl.float32, M], block: int = 64, threads: int = 128, rows: int = 1):
    """A block size, a thread count and a buffer size, all from consts."""
    (m,) = A.shape
    with T.Kernel(T.ceildiv(m, block), threads=threads) as bx:
        scratch = T.alloc_shared((rows, block), tl.float32)
        for i in T.Parallel(block):
            scratch[0, i] = A[bx * block + i]
        for i in T.Parallel(block):
            A[bx * block + i] = scratch[0, i] * 2


@tl.jit
def gridded(A: tl.Tensor[tl.float32, M], rows: int = 1, layers: int = 1):
    """A grid of 1 x rows x layers blocks, both extents from consts; each block adds 1 to A[0]."""
    with T.Kernel(1, rows, layers, threads=32) as (bx, by, bz):
        T.atomic_add(A[0], 1.0)


R = TypeVar("R", bound=tl.dyn[int])


@tl.jit
def gridded_by_rows(A: tl.Tensor[tl.float32, R, Literal[32]]) -> tl.Tensor[tl.float32, R, Literal[32]]:
    """A copy with a block per row along y: the grid's extent is the dyn dim R, known at each call only."""
    (rows, width) = A.shape
    B = T.empty((rows, width), tl.float32)
    with T.Kernel(1, rows, threads=32) as (bx, by):
        for i in T.Parallel(width):
            B[by, i] = A[by, i]
    return B


G = TypeVar("G", bound=tl.dyn[int])


@tl.jit
def gridded_by_ratio(A: tl.Tensor[tl.float32, R, G]) -> tl.Tensor[tl.float32, R, G]:
    """A copy of the first 32 columns over a grid of (R * G) / G blocks: dividing by G, which is 0 when A is empty."""
    (rows, cols) = A.shape
    B = T.empty((rows, cols), tl.float32)
    with T.Kernel(T.ceildiv(rows * cols, cols), threads=32) as bx:
        for i in T.Parallel(32):
            if i < cols:
                B[bx, i] = A[bx, i]
    return B


@tl.jit
def annotated(
    A: tl.Tensor[tl.float32, M],
    count: int = 1,
    scale: float = 1.0,
    flag: bool = False,
    label: str = "x",
    pair: tuple[int, int] = (1, 2),
    sizes: tuple[int, ...] = (),
    maybe: Optional[int] = None,
    choice: Literal["a", "b"] = "a",
    mode: Mode = Mode.PLAIN,
    out_dtype: T.dtype = T.float32,
    fixed: tl.const[int] = 3,
    knob: Knob = Knob(),
    anything=None,
):
    """Every kind of const annotation the binder checks; the body ignores them all."""


@tl.jit(out_idx=[1])
def copied(X: tl.Tensor[tl.float32, M], Out: tl.Tensor[tl.float32, M], threads: int = 128):
    """A const after an out_idx tensor, which a call does not pass (a TileLang user may)."""
    (m,) = X.shape
    with T.Kernel(T.ceildiv(m, threads), threads=threads) as bx:
        for i in T.Parallel(threads):
            if bx * threads + i < m:
                Out[bx * threads + i] = X[bx * threads + i]


@tl.jit
def quads(A):
    """A const dim only in an affine size: a call's 4 * n elements give n."""
    n = T.const("n")
    A: T.Tensor[[n * 4], T.int32]
    with T.Kernel(1, threads=128) as _:
        for i in T.serial(n * 4):
            A[i] = 0


@tl.jit
def listed_by_default(A: tl.Tensor[tl.float32, M], sizes=[64, 128]):  # noqa: B006 - the default is the point
    """A const whose default is unhashable: a call that leaves it out is refused, naming it as the default."""
