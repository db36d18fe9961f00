"""Idiomatic uses of the kernel language's stubs through tltyped's language (`import tltyped.language as T`).

A `T.dtype` parameter is taken by every function that takes a dtype, and a
`T.alloc_var` is a scalar variable. As in in_body_tltyped.py, pyright reports
only the in-body annotations' redeclarations; mypy with the plugin is clean.
"""

import tltyped as tl
import tltyped.language as T


@tl.jit
def rowmax(X, block_M: int = 64, dtype: T.dtype = T.float16, accum_dtype: T.dtype = T.float32):
    M, N = T.const("M, N")
    X: T.Tensor[[M, N], dtype]
    Y = T.empty((M,), accum_dtype)
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        x = T.alloc_fragment((block_M, N), dtype)
        m = T.alloc_fragment((block_M,), accum_dtype)
        r = T.alloc_reducer((block_M,), accum_dtype, op="max")
        pairs = T.view(x, (block_M, N // 2), accum_dtype)
        T.fill(m, -T.infinity(accum_dtype))
        T.fill(r, T.min_value(accum_dtype))
        T.finalize_reducer(r)
        top = T.max(T.reinterpret(m[0], accum_dtype), T.max_value(accum_dtype))
        T.copy(X[bx * block_M, 0], x)
        T.reduce_max(x, m, dim=1, clear=False)
        T.copy(m, Y[bx * block_M])
    return Y


@tl.jit
def total(A):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B = T.empty((1,), T.float32)
    with T.Kernel(1, threads=1) as bx:
        s = T.alloc_var(T.float32)
        s = 0
        for i in T.serial(N):
            s += A[i]
        s = T.max(s, 0.0)
        B[0] = s * 2
        count = T.alloc_var(T.int32, init=0)
        for i in T.serial(count):
            count += 1
        T.clear(count)
        B[0] = B[0] + count
    return B
