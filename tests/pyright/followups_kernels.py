"""Kernels that followups_calls.py calls: lazy-style factories that return one of several prim_funcs from branches,
as TileLang's examples do (flash_decoding/example_gqa_decode.py, gemm_fp8/example_tilelang_gemm_amd.py), and
kernels whose parameters `@tl.autotune(configs=[...])` sets (a call may leave those out), and consts declared
`tl.const[X]`.

No `from __future__ import annotations`: the prim_funcs' annotations are evaluated objects, as in TileLang's code.
"""

from typing import Literal, TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M", bound=tl.dyn[int])


@tl.jit(out_idx=[1])
def decode(N, num_split, block=128):
    """Two prim_funcs of the same parameters, returned from if/else: a kernel object of those parameters."""

    @T.prim_func
    def split(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * 2

    @T.prim_func
    def no_split(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i]

    if num_split > 1:
        return split
    else:
        return no_split


@tl.jit(out_idx=[-1])
def gemm(M, N, K, gemm_type="ss"):
    """Each prim_func defined in its own branch, and an else that raises: still a kernel object of their parameters."""
    if gemm_type == "ss":

        @T.prim_func
        def gemm_ss(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
            with T.Kernel(1, threads=128):
                T.evaluate(0)

        return gemm_ss
    elif gemm_type == "rs":

        @T.prim_func
        def gemm_rs(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
            with T.Kernel(1, threads=128):
                T.evaluate(0)

        return gemm_rs
    else:
        raise ValueError(f"gemm_type {gemm_type!r}")


@tl.jit
def padded(N, pad):
    """One name, defined in each branch with other parameters: either may be returned, so any call."""
    if pad:

        @T.prim_func
        def main(A: T.Tensor((N,), T.float32), P: T.Tensor((N,), T.float32)):
            with T.Kernel(1, threads=32):
                T.evaluate(0)
    else:

        @T.prim_func
        def main(A: T.Tensor((N,), T.float32)):
            with T.Kernel(1, threads=32):
                T.evaluate(0)

    return main


@tl.autotune(configs=[{"block": 64, "threads": 128}, {"block": 128, "threads": 256}])
@tl.jit
def scaled(A: tl.Tensor[tl.float32, M], block: int, threads: int, scale: float = 2.0) -> tl.Tensor[tl.float32, M]:
    """`block` and `threads` are tuned: a call may leave them out; `scale` keeps its own default."""
    m = A.shape[0]
    B = T.empty((m,), tl.float32)
    with T.Kernel(T.ceildiv(m, block), threads=threads) as bx:
        for i in T.Parallel(block):
            B[bx * block + i] = A[bx * block + i] * scale
    return B


@tl.autotune(configs=[{"block": 64}, {"block": 128}])
@tl.jit(out_idx=[1])
def tuned_copy(N, block):
    """A factory's configured parameter: its calls may leave it out too."""

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i]

    return main


@tl.jit
def repeated(A: tl.Tensor[tl.float32, M], times: tl.const[int] = 2, mode: tl.const[Literal["add", "mul"]] = "add") -> tl.Tensor[tl.float32, M]:
    """Consts declared `tl.const[X]`: each takes an X, as `times: int` would."""
    m = A.shape[0]
    B = T.empty((m,), tl.float32)
    with T.Kernel(T.ceildiv(m, 128), threads=128) as bx:
        for i in T.Parallel(128):
            B[bx * 128 + i] = A[bx * 128 + i] * times if mode == "mul" else A[bx * 128 + i] + times
    return B
