"""Idiomatic uses of the kernel language's stubs through TileLang's language (`import tilelang.language as T`).

In a kernel body every function that takes a dtype takes tltyped's classes
too, and a `T.alloc_var` is a scalar variable. As in in_body_tilelang.py,
pyright reports only the in-body annotations' redeclarations; mypy with the
plugin is clean.
"""

import tilelang.language as T

import tltyped as tl


@tl.jit
def fill(A, block: int = 64):
    N = T.const("N", T.int32)
    A: T.Tensor[[N], T.float32]
    with T.Kernel(T.ceildiv(N, block)) as bx:
        s = T.alloc_fragment((block,), T.float32)
        T.fill(s, T.infinity(tl.float32))
        T.fill(s, T.max_value(T.float32))
        T.copy(s, A[bx * block])


@tl.jit
def combine(glse, out, num_split: int = 4, accum_dtype: T.dtype = T.float32):
    H = T.const("H")
    glse: T.Tensor[[H, num_split], T.float32]
    out: T.Tensor[[H], T.float32]
    with T.Kernel(H, threads=128) as h:
        lse_max = T.alloc_var(accum_dtype)
        lse_sum = T.alloc_var(accum_dtype)
        T.clear(lse_sum)
        lse_max = -T.infinity(accum_dtype)
        for k in T.serial(num_split):
            lse_max = T.max(lse_max, glse[h, k])
        for k in T.serial(num_split):
            lse_sum += T.exp2(glse[h, k] - lse_max)
        lse_sum = T.log2(lse_sum) + lse_max
        out[h] = lse_sum
