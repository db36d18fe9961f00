"""TileLang's own int64 test kernel (testing/python/language/test_tilelang_language_int64.py), as TileLang writes it:
lazy style, its one dim declared int64 with `T.symbolic`."""

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
