"""Lazy-style kernels: factories whose body defines and returns a `@T.prim_func`, written as TileLang's examples are.

No `from __future__ import annotations`: the prim_funcs' annotations are evaluated objects, as in upstream code.
"""

import tltyped as tl
import tltyped.language as T
from tests.kernels.helpers import copy_through

BLOCK = 128  # a global a factory reads: rebinding it changes the kernel (tests/unit/test_lazy_style.py)


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


@tl.jit
def scale_rows(N, dtype="float32"):
    """No out_idx: every tensor is an out-parameter; a dyn row count and a dyn float scalar."""
    M = T.dynamic("m")

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), alpha: T.float32):
        with T.Kernel(M, threads=128) as bx:
            for j in T.Parallel(N):
                Y[bx, j] = X[bx, j] * alpha

    return main


@tl.jit(out_idx=[0, 2])
def split_pad(N, block=BLOCK):
    """Outputs first and third (moved behind the input), one with a derived dim; a global as a default."""

    @T.prim_func
    def main(Lo: T.Tensor((N,), "float32"), X: T.Tensor((N * 2,), "float32"), Hi: T.Tensor((N + 1,), "float16")):
        with T.Kernel(T.ceildiv(N + 1, block), threads=block) as bx:
            for i in T.Parallel(block):
                j = bx * block + i
                if j < N:
                    Lo[j] = X[j]
                if j <= N:
                    Hi[j] = T.Cast("float16", X[T.min(j + N, N * 2 - 1)])

    return main


@tl.jit(out_idx=-1)
def copy_block(N):
    """Reads the module global BLOCK in its body (not through a default)."""

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < N:
                    Y[bx * BLOCK + i] = X[bx * BLOCK + i]

    return main


@tl.jit
def copies_a_point_into_a_tile(N):
    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((N, 2), T.float32)
            T.copy(A[0], S)  # TileLang's bare assert fails here
            T.copy(S[:, 0], B)

    return main


@tl.jit
def not_a_kernel(N):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            T.evaluate(0)

    return N


@tl.jit(out_idx=[5])
def bad_out_idx(N):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            T.evaluate(0)

    return main


@tl.jit(out_idx=[-1])
def one_name_two_dims():
    """Two `T.dynamic` variables of one name: a call could not tell which size is which."""
    a, b = T.dynamic("a"), T.dynamic("a", "int64")

    @T.prim_func
    def main(X: T.Tensor((a,), "float32"), Z: T.Tensor((b,), "float32"), Y: T.Tensor((a,), "float32")):
        with T.Kernel(1, threads=32):
            T.evaluate(0)

    return main


WIDTH = 2  # sizes `widened`'s input: rebinding it after a kernel object was made changes that kernel's signature


@tl.jit(out_idx=-1)
def widened(N):
    @T.prim_func
    def main(X: T.Tensor((N * WIDTH,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    Y[bx * 128 + i] = X[(bx * 128 + i) * WIDTH]

    return main


@tl.jit(out_idx=-1)
def with_workspace(N):
    """TileLang's in-kernel workspace (flash_decoding's `glse`), written by one launch and read by the next."""

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        scratch = T.alloc_global([N], "float32")
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                scratch[bx * 128 + i] = X[bx * 128 + i] * 2
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = scratch[bx * 128 + i]

    return main


@tl.jit(out_idx=-1)
def row_sum(R, C, block=tl.tune([32, 64])):
    """Each row's sum; the block of rows tuned at the kernel object's first call, as an eager kernel's const is."""

    @T.prim_func
    def main(X: T.Tensor((R, C), T.float32), out: T.Tensor((R,), T.float32)):
        with T.Kernel(T.ceildiv(R, block), threads=128) as bx:
            acc = T.alloc_fragment((block,), T.float32)
            tile = T.alloc_fragment((block, C), T.float32)
            T.copy(X[bx * block, 0], tile)
            T.reduce_sum(tile, acc, dim=1)
            T.copy(acc, out[bx * block])

    return main


@tl.jit(out_idx=-1)
def first_rows(R, C, block=tl.tune([32, 64])):
    """A tuned argument that decides the output's length: not a schedule, refused at the first call."""

    @T.prim_func
    def main(X: T.Tensor((R, C), T.float32), out: T.Tensor((block, C), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            T.copy(X[bx * block, 0], out)

    return main


@tl.jit(out_idx=-1)
def first_n(N):
    """A scalar parameter annotated with the dim variable that sizes the output alone: each call's n is Y's length."""
    n = T.dynamic("n")

    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), n: n, Y: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    Y[bx * 128 + i] = X[bx * 128 + i]

    return main


@tl.jit(out_idx=-1)
def first_n_of_its_own(N):
    """`n: T.int32` beside the enclosing `n = T.dynamic("n")` that Y's annotation reads: two variables of one name."""
    n = T.dynamic("n")

    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), n: T.int32, Y: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    Y[bx * 128 + i] = X[bx * 128 + i]

    return main


def undetermined_dim(M, N):
    """Y's length N is on Y alone (the out_idx tensor the call allocates): no argument gives it."""

    @T.prim_func
    def main(X: T.Tensor((M,), T.float32), Y: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(M):
                Y[i] = X[i]

    return main


@tl.jit(out_idx=[-1])
def annotated_in_body(N, dtype=T.float16):
    """The prim_func's parameters annotated in its body, TileLang's eager spelling (its
    test_tilelang_language_func_attrs.py), the dtype a factory argument."""

    @T.prim_func
    def main(X, Y):
        X: T.Tensor[[N, 4], dtype]
        Y: T.Tensor[[N, 4], dtype]
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(N, 4):
                Y[i, j] = X[i, j] * 2

    return main


@tl.jit(out_idx=[-1])
def without_dtype():
    """`T.Tensor[(n,)]` names no dtype: float32, as TileLang reads it (its test_tilelang_issue_1728.py)."""
    n = T.dynamic("n")

    @T.prim_func
    def main(X: T.Tensor[(n,)], Y: T.Tensor[(n,)]):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    Y[bx * 32 + i] = X[bx * 32 + i] + 1

    return main


@tl.jit(out_idx=[-1])
def unbracketed(N, dtype=T.bfloat16):
    """`T.Tensor[N, dtype]`: TileLang's order with a shape of one dim, unbracketed (its test_tilelang_language_int64.py)."""

    @T.prim_func
    def main(X: T.Tensor[N, dtype], Y: T.Tensor[N, dtype]):
        with T.Kernel(T.ceildiv(N, 32), threads=32) as bx:
            for i in T.Parallel(32):
                Y[bx * 32 + i] = X[bx * 32 + i]

    return main


@tl.jit(out_idx=[-1])
def annotated_with_a_body_name():
    """An in-body annotation naming a dim the prim_func's own body declares: TileLang reads the annotation again
    where the body cannot see that name, so it is refused naming it."""

    @T.prim_func
    def main(X, Y):
        m = T.dynamic("m")
        X: T.Tensor[[m], T.float32]
        Y: T.Tensor[[m], T.float32]
        with T.Kernel(1, threads=32):
            for i in T.serial(m):
                Y[i] = X[i]

    return main


def _wrapped_prim_func(func):
    """A user's own decorator around `T.prim_func`, with a local of its own named like the factory's argument."""
    M = 3  # noqa: F841 - shadows nothing: annotations are read in the scope defining `func`
    return T.prim_func(func)


def made_through_a_wrapper(M):
    """A plain function making a prim_func through a wrapper (TileLang's own, outside tl.jit)."""

    @_wrapped_prim_func
    def main(X, Y):
        X: T.Tensor[[M], T.float32]
        Y: T.Tensor[[M], T.float32]
        with T.Kernel(1, threads=32):
            for i in T.serial(M):
                Y[i] = X[i]

    return main


@tl.jit(out_idx=[-1])
def reads_a_name_bound_later(N, with_offset=False):
    """The prim_func's body names `offset`, which the factory binds after defining it (an empty cell then), in a
    branch its arguments leave untaken."""

    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=32):
            for i in T.serial(N):
                if with_offset:
                    Y[i] = X[i] + offset
                else:
                    Y[i] = X[i]

    offset = 1.0
    return main


@tl.jit
def zero_all_but_last():
    """TileLang's test_tilelang_language_annot: a symbolic dim only inside the tensor's size, `n + 1`."""
    n = T.symbolic("n")

    @T.prim_func
    def kernel(A: T.Tensor((n + 1,), T.int32), B: T.Tensor((n * 2 + 1,), T.int32)):
        with T.Kernel(1, threads=128) as _:
            for i in T.serial(n):
                A[i] = 0
                B[i] = 0

    return kernel


@T.macro
def copy_twice(src, dst):
    T.copy(src, dst)
    T.copy(src, dst, dst_typo=1)  # FAILS HERE: copy_twice


@tl.jit(out_idx=-1)
def calls_failing_macros(N, here=True):
    """A `T.macro` of this module (`here`), or of another, failing."""

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((N,), "float32")
            if here:
                copy_twice(X, S)  # FAILS HERE: calls_failing_macros here
            else:
                copy_through(X, S)  # FAILS HERE: calls_failing_macros elsewhere
            T.copy(S, Y)

    return main
