"""Kernels for the call path: cache keys and the slow path's compile-once logic.

Their bodies are empty: these tests exercise what happens around a kernel
(binding, keys, locking), never its code.
"""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl

DT = TypeVar("DT")
M = TypeVar("M")
N = TypeVar("N")
K = TypeVar("K", bound=tl.dyn[int])


@tl.jit
def keyed(
    A: tl.Tensor[DT, M, N],
    B: tl.Tensor[tl.float32, K, N],
    x: tl.dyn[int] = 0,
    flag: bool = False,
    block: int = 64,
):
    """A: any dtype, const dims, any layout; B: dyn K (so contiguous only); x dyn; flag, block const."""


@tl.jit
def scalar_only(n: tl.dyn[int], c: int = 0):
    """No tensors: the static key is the const `c` alone."""


RATE = 1.0  # a global `rated` reads, which the tests rebind


@tl.jit
def rated(n: tl.dyn[int], c: int = 0):
    """No tensors, and a global read: what the tests' stand-in kernels are built from."""
    RATE
