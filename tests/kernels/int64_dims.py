"""Kernels with int64 dims: TileLang's own int64 test kernel (testing/python/language/test_tilelang_language_int64.py),
as TileLang writes it (lazy style, its one dim declared int64 with `T.symbolic`), an int64 scalar parameter that
sizes a tensor, and a size the body computes from an int32 one."""

import tltyped as tl
import tltyped.language as T


@tl.jit
def fill_symbolic(value: float, dtype=T.bfloat16):
    """x[:] = value, over n elements counted in int64."""
    n = T.symbolic("n", "int64")
    block_n = 512

    @T.prim_func
    def main(x: T.Tensor[n, dtype]):
        with T.Kernel(T.ceildiv(n, block_n), threads=128) as bx:
            for i in T.Parallel(block_n):
                x[bx * block_n + i] = value

    return main


@tl.jit
def scaled_rows(X, M, N, alpha):
    """Y = X * alpha over M rows, M an int64 scalar parameter that sizes X (TileLang's `M: T.int32` sizing, in 64
    bits), N an int32 one."""
    M: T.int64
    N: T.int32
    X: T.Tensor[[M, N], T.float32]
    alpha: T.float32
    Y = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < M:
                for j in T.serial(N):
                    Y[bx * 128 + i, j] = X[bx * 128 + i, j] * alpha
    return Y


@tl.jit
def scaled_pairs(X, M, alpha):
    """Y = X * alpha over 2 M + 1 elements: X's size is a name the body computes from the scalar parameter M."""
    M: T.int32
    K = M * 2
    W = K + 1
    X: T.Tensor[[W], T.float32]
    alpha: T.float32
    Y = T.empty((W,), T.float32)
    with T.Kernel(T.ceildiv(W, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < W:
                Y[bx * 128 + i] = X[bx * 128 + i] * alpha
    return Y
