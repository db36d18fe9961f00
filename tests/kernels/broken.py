"""Kernels that decorate fine but fail while their body is elaborated (or, the last, lowered).

Each failing line carries a `# FAILS HERE` marker naming the kernel; the tests
find the line by its marker, so edits above it do not break them.
"""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T
from tests.kernels.helpers import blocks_for, copy_through

M = TypeVar("M")
L = TypeVar("L", bound=tl.dyn[int])


@tl.jit
def typo_in_copy(A: tl.Tensor[tl.float32, M]):
    (m,) = A.shape
    C = T.empty((m,), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        S = T.alloc_shared((m,), tl.float32)
        T.copy(A, S, dst_typo=1)  # FAILS HERE: typo_in_copy
        T.copy(S, C)
    return C


@tl.jit
def copies_a_point_into_a_tile(A: tl.Tensor[tl.float32, M]):
    (m,) = A.shape
    C = T.empty((m,), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        S = T.alloc_shared((m, 2), tl.float32)
        T.copy(A[0], S)  # FAILS HERE: copies_a_point_into_a_tile
        T.copy(S[:, 0], C)
    return C


@tl.jit
def returns_one_output_twice(A: tl.Tensor[tl.float32, M]):
    (m,) = A.shape
    C = T.empty((m,), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        T.copy(A, C)
    return C, C  # FAILS HERE: returns_one_output_twice


@tl.jit
def returns_an_input(A: tl.Tensor[tl.float32, M]):
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(4):
            A[i] = 0
    return A  # FAILS HERE: returns_an_input


@tl.jit
def returns_a_python_int(A: tl.Tensor[tl.float32, M]):
    (m,) = A.shape
    size = m + 1
    return size  # FAILS HERE: returns_a_python_int


@tl.jit
def unreturned_empty(A: tl.Tensor[tl.float32, M]):
    (m,) = A.shape
    C = T.empty((m,), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(4):
            C[i] = A[i]  # FAILS HERE: unreturned_empty (the last line run before the check)


@tl.jit
def gemm_shape_mismatch(A: tl.Tensor[tl.float16, M, M]):
    (m, _) = A.shape
    C = T.empty((m, m), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        A_s = T.alloc_shared((64, 32), tl.float16)
        B_s = T.alloc_shared((48, 64), tl.float16)
        C_l = T.alloc_fragment((64, 64), tl.float32)
        T.copy(A[0, 0], A_s)
        T.copy(A[0, 0], B_s)
        T.gemm(A_s, B_s, C_l)  # FAILS HERE: gemm_shape_mismatch
        T.copy(C_l, C[0, 0])
    return C


@tl.jit
def raises_on_a_continued_line(A: tl.Tensor[tl.float32, M]):
    (m,) = A.shape
    with T.Kernel(1, threads=32) as bx:
        T.fill(A,  # FAILS HERE: raises_on_a_continued_line
               m // 0)


@tl.jit
def calls_a_failing_helper(A: tl.Tensor[tl.float32, M]):
    (m,) = A.shape
    with T.Kernel(blocks_for(m, 64), threads=64) as bx:  # FAILS HERE: calls_a_failing_helper
        A[bx * 64] = 0.0


@T.macro
def fill_through(dst):
    T.copy(dst, dst, dst_typo=1)  # FAILS HERE: fill_through


@tl.jit
def calls_a_failing_macro(A: tl.Tensor[tl.float32, M]):
    (m,) = A.shape
    C = T.empty((m,), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        S = T.alloc_shared((m,), tl.float32)
        copy_through(A, S)  # FAILS HERE: calls_a_failing_macro
        T.copy(S, C)
    return C


@tl.jit
def calls_a_failing_macro_of_its_module(A: tl.Tensor[tl.float32, M]):
    (m,) = A.shape
    C = T.empty((m,), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        S = T.alloc_shared((m,), tl.float32)
        T.copy(A, S)
        fill_through(S)  # FAILS HERE: calls_a_failing_macro_of_its_module
        T.copy(S, C)
    return C


@tl.jit
def output_of_a_negative_size(A: tl.Tensor[tl.float32, L]):
    (n,) = A.shape
    C = T.empty((n - 100,), tl.float32)  # negative for a call with fewer than 100 elements
    with T.Kernel(1, threads=32) as bx:
        C[0] = A[0]
    return C


@tl.jit
def launches_nothing(A: tl.Tensor[tl.float32, M]):
    (m,) = A.shape
    size = m + 1  # no `with T.Kernel(...)`: nothing runs on the GPU


@tl.jit
def shared_of_a_dyn_size(A: tl.Tensor[tl.float32, L]):
    (n,) = A.shape
    with T.Kernel(1, threads=128) as bx:
        S = T.alloc_shared((n,), tl.float32)  # n is dyn: no size for the launch to reserve
        T.copy(A, S)


@tl.jit
def too_much_shared_memory(A: tl.Tensor[tl.float32, 128]):
    with T.Kernel(1, threads=128) as bx:
        S = T.alloc_shared((128, 1024), tl.float32)  # 512 KiB: more than any GPU gives a block
        for i, j in T.Parallel(128, 1024):
            S[i, j] = A[i]
        for i in T.Parallel(128):
            A[i] = S[i, 5]


@tl.jit
def fails_to_lower(A: tl.Tensor[tl.float32, M]) -> tl.Tensor[tl.float32, M]:
    """Elaborates, but TileLang's layout inference fails on the strided fragment write (a TVM check, no line)."""
    (m,) = A.shape
    C = T.empty((m,), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        F = T.alloc_fragment((128,), tl.float32)
        G = T.alloc_fragment((128,), tl.float32)
        T.copy(A[0:128], F)
        for i in T.Parallel(128):
            G[i] = F[(i * 7) % 128]
        for i in T.Parallel(64):
            F[i * 2] = G[i]
        T.copy(F, C[0:128])
    return C
