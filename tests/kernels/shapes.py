"""Kernels whose tensors relate through literal, derived or asserted dims (decoration and binding only)."""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T
from tests.kernels.eager_style import doubled

DT = TypeVar("DT")
M = TypeVar("M")
N = TypeVar("N")
L = TypeVar("L", bound=tl.dyn[int])


@tl.jit
def same_dtype(A: tl.Tensor[DT, M], B: tl.Tensor[DT, M]):
    """A and B share one dtype variable."""


HALF = TypeVar("HALF", tl.float16, tl.bfloat16)
WIDE = TypeVar("WIDE", bound=tl.float32 | tl.float64)


@tl.jit
def half_or_wide(A: tl.Tensor[HALF, M], B: tl.Tensor[HALF, M], C: tl.Tensor[WIDE, M]):
    """Dtype variables limited by constraints (A, B) and by a bound (C)."""


@tl.jit
def four_columns(A: tl.Tensor[tl.float32, M, 4]):
    """A literal dim."""


@tl.jit
def derived(A, B):
    """B's dims are expressions of A's."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[2 * N + 1, T.ceildiv(N, 4)], T.float32]


@tl.jit
def blocks_of(A, B, block: int = 4):
    """B has one element per block of A's: a dim computed from a const, read at a call for its value."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N // block], T.float32]  # FAILS HERE: blocks_of


@tl.jit
def asserted(A: tl.Tensor[tl.float32, M], B: tl.Tensor[tl.float32, N]):
    """The signature form's derived dim: a shape assert at the top of the body."""
    assert B.shape[0] == 2 * A.shape[0] + 1


@tl.jit
def asserted_then_allocates(A: tl.Tensor[tl.float32, L]) -> tl.Tensor[tl.float32, L]:
    """A shape assert over a dyn dim, then T.empty, which must stay at the top of the function."""
    assert A.shape[0] // 4 * 4 == A.shape[0], "the length must be a multiple of 4"
    return doubled(A)


@tl.jit
def with_scalars(A: tl.Tensor[tl.float32, M], n: tl.dyn[int], p: tl.ptr):
    """A dyn int and a raw pointer."""
