"""Lazy-style factories, written as TileLang's examples write them, that lazy_calls.py calls.

No `from __future__ import annotations`: the prim_funcs' annotations are evaluated objects, as in
TileLang's code. Only what the source writes is typed statically (see tltyped/stubs/prim_func.py):
`matmul`'s tensors have rank 2, `rows`' input a literal dim, `split`'s tensors literal dtypes,
`flat`'s tensor a shape held in a name (any rank), and `doubled`'s tensors are annotated in the
prim_func's body.
"""

import tltyped as tl
import tltyped.language as T


@tl.jit(out_idx=[-1])
def matmul(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@tl.jit(out_idx=-1)
def rows(M, dtype="float16"):
    """A literal dim, a dyn float scalar, one output."""

    @T.prim_func
    def main(X: T.Tensor((M, 64), dtype), alpha: T.float32, Y: T.Tensor((M,), dtype)):
        with T.Kernel(M, threads=32) as bx:
            Y[bx] = X[bx, 0] * alpha

    return main


@tl.jit(out_idx=[0, 2])
def split(N, block=128):
    """Two outputs, returned as a tuple in out_idx order; dtypes named in the source."""

    @T.prim_func
    def main(Lo: T.Tensor((N,), "float32"), X: T.Tensor((N,), "float32"), Hi: T.Tensor((N,), T.float16)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    Lo[bx * block + i] = X[bx * block + i]
                    Hi[bx * block + i] = X[bx * block + i]

    return main


@tl.jit
def flat(shape, dtype="float32"):
    """No out_idx: the call returns None; the shape is a name, so the rank is unknown statically."""

    @T.prim_func
    def main(X: T.Tensor(shape, dtype)):
        with T.Kernel(1, threads=32):
            T.evaluate(0)

    return main


@tl.jit(out_idx=-1)
def doubled(N):
    """TileLang's other spelling: the parameters annotated at the top of the prim_func's body."""

    @T.prim_func
    def main(X, Y):
        X: T.Tensor[[N, 4], T.float16]
        Y: T.Tensor[[N, 4], T.float16]
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(N, 4):
                Y[i, j] = X[i, j] * 2

    return main
