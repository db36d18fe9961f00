"""Kernels in TileLang's eager spellings, in a module without `from __future__ import annotations` (as users write them)."""

from typing import TypeVar

import tilelang

import tltyped as tl
import tltyped.language as T

TILE = 64
R = TypeVar("R")
S = TypeVar("S", bound=tl.dyn[int])


@tl.jit
def call_form(A, B, scale: T.float32, dtype=T.float16):
    """`T.Tensor((M, N), dtype)` in the body, a scalar annotated with a TileLang dtype in the signature."""
    M, N = T.const("M, N")
    A: T.Tensor((M, N), dtype)
    B: T.Tensor([M, N], dtype)
    with T.Kernel(T.ceildiv(M, TILE), threads=128) as bx:
        for i, j in T.Parallel(TILE, N):
            B[bx * TILE + i, j] = A[bx * TILE + i, j] * scale


@tl.jit
def signature_call_form(A: T.Tensor((128, 64), T.float32), n: T.int32, out: T.Tensor([128], T.float32)):
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(128):
            out[i] = A[i, 0] + n


@tl.jit
def body_names(A, B, trans=False, in_dtype=T.float16):
    """Annotations computed by the body: a dtype bound to a name, a shape chosen from a const."""
    M = T.dynamic("m")
    K = T.const("K")
    out_dtype = T.float32
    A_shape = (K, M) if trans else (M, K)
    A: T.Tensor(A_shape, in_dtype)
    B: T.Tensor[[M], out_dtype]
    with T.Kernel(T.ceildiv(M, TILE), threads=128) as bx:
        for i in T.Parallel(TILE):
            if bx * TILE + i < M:
                if trans:
                    B[bx * TILE + i] = T.cast(A[0, bx * TILE + i], out_dtype)
                else:
                    B[bx * TILE + i] = T.cast(A[bx * TILE + i, 0], out_dtype)


@tl.jit
def late_global(A):
    """A shape from module globals assigned after the kernel (read at the first call)."""
    A: T.Tensor([ROWS, COLS], T.float32)
    with T.Kernel(1, threads=32) as bx:
        A[0, 0] = 1


ROWS, COLS = 32, 16
SIZE = 64


@tl.jit
def sized_by_global(A, B):
    """A global sizes the tensors (read when the calls are set up) and the loop (read at each build)."""
    A: T.Tensor[[SIZE], T.float32]
    B: T.Tensor[[SIZE], T.float32]
    with T.Kernel(1, threads=64) as bx:
        for i in T.Parallel(SIZE):
            B[i] = A[i]


@tl.jit
def strided(A, B):
    """`T.StridedTensor` with dyn strides: one kernel for every layout."""
    M, N, sM, sN = T.dynamic("M, N, sM, sN")
    A: T.StridedTensor((M, N), (sM, sN), T.float32)
    B: T.Tensor[[M, N], T.float32]
    with T.Kernel(T.ceildiv(M, TILE), threads=128) as bx:
        for i, j in T.Parallel(TILE, 4):
            if bx * TILE + i < M and j < N:
                B[bx * TILE + i, j] = A[bx * TILE + i, j]


@tl.jit
def scratch_and_outputs(A, block=128):
    """`T.empty(M, dtype=...)` varargs, `T.alloc_global` scratch (not returned) and one returned."""
    M = T.const("M")
    A: T.Tensor[[M], T.float32]
    Out = T.empty(M, dtype=T.float32)
    Kept = T.alloc_global((M,), T.float32)
    Scratch = T.alloc_global([M], T.float32)
    with T.Kernel(T.ceildiv(M, block), threads=block) as bx:
        for i in T.Parallel(block):
            Scratch[bx * block + i] = A[bx * block + i] * 2
            Kept[bx * block + i] = Scratch[bx * block + i] + 1
            Out[bx * block + i] = Scratch[bx * block + i]
    return Kept, Out


@T.macro
def doubled(A):
    (n,) = A.shape
    B = T.empty((n,), A.dtype)
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n:
                B[bx * 128 + i] = A[bx * 128 + i] * 2
    return B


@tl.jit
def macro_returns(A):
    N = T.dynamic("N")
    A: T.Tensor[[N], T.float32]
    return doubled(A)


@tl.jit
def pointers(A: T.ptr, out: tl.ptr, n: int, dtype=T.float32):
    """Raw pointers made into tensors in the body."""
    X = T.make_tensor(A, (n,), dtype)
    Y = T.make_tensor(out, (n,), dtype)
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n:
                Y[bx * 128 + i] = X[bx * 128 + i] + 1


@tl.jit(
    pass_configs={
        tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
        "tl.disable_warp_specialized": True,
        tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
        "tl.device_compile_flags": ["-DTLTYPED_PASS_FLAG=2"],
        "tl.ptxas_register_usage_level": 5,
    },
    compile_flags=["-DTLTYPED_FLAG=1"],
    out_idx=[-1],
)
def configured(A: tl.Tensor[tl.float16, R, S], C: tl.Tensor[tl.float32, R, S]):
    """TileLang's jit keywords: C is allocated and returned (out_idx), never passed."""
    with T.Kernel(1, threads=128) as bx:
        C[0, 0] = T.cast(A[0, 0], T.float32)


@tl.jit(compile_flags=["-Dtltyped_decorator_flag()=3"],
        pass_configs={"tl.device_compile_flags": ["-Dtltyped_pass_flag()=4"]})
def flagged(A: tl.Tensor[tl.int32, R]):
    """Names that only nvcc's command line defines: it builds only if both flags reach nvcc."""
    with T.Kernel(1, threads=32) as bx:
        A[0] = T.call_extern("int32", "tltyped_decorator_flag") + T.call_extern("int32", "tltyped_pass_flag")


@tl.jit
def anonymous(A: tl.Tensor[tl.float16, int, int], B: tl.Tensor[tl.float16, int, int]):
    """The seed's anonymous dims (a const dim each), related by Python on `A.shape`."""
    (N, K), (M, K2) = A.shape, B.shape
    assert K == K2, "Expect 2 matrices with identical K dimension"
    out = T.alloc_global((N, M), dtype=T.float32)
    with T.Kernel(1, threads=128) as bx:
        out[0, 0] = T.cast(A[0, 0], T.float32)
    return out


_K = tl.dyn[int, "_K"]


@tl.jit
def seed_spellings(
    a: tl.Tensor[tl.float32, _K], b: tl.Tensor[tl.float32, _K], c: tl.Tensor[tl.float32, _K], block: int = T.tune([64, 128])
):
    """JITv2's spellings: a named dyn dim, `T.tune`."""
    (k,) = a.shape
    with T.Kernel(T.ceildiv(k, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < k:
                c[bx * block + i] = a[bx * block + i] + b[bx * block + i]


@tl.jit
def scalar_dims(A, M, K):
    """Scalar parameters that size a tensor (TileLang's `M: T.int32` then `T.Tensor[[M, K], ...]`)."""
    M: T.int32
    K: T.int32
    A: T.Tensor[[M, K], T.float16]
    with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < M:
                A[bx * 128 + i, 0] = 0


@tl.jit
def const_params_as_dims(A, M, N):
    """Const parameters used as dims: each call's values are the sizes."""
    A: T.Tensor[[M, N], T.float32]
    B = T.empty((M, N), T.float32)
    with T.Kernel(1, threads=128) as bx:
        for i, j in T.Parallel(M, N):
            B[i, j] = A[i, j]
    return B


@tl.jit
def undefined_in_deferred(A, trans=False):
    M, K = T.const("M, K")
    shape = (K, M) if trans else (M, K, not_defined_anywhere)  # noqa: F821  # <- fails when resolved
    A: T.Tensor(shape, T.float32)
    with T.Kernel(1, threads=32) as bx:
        pass


@tl.autotune(configs=[{"block_N": n, "reduce_threads": r} for n in (2, 4) for r in (4, 8)], warmup=3, rep=20)
@tl.jit
def gemv(A, B, block_N=None, reduce_threads=None):
    """TileLang's autotuned gemv as its example writes it (examples/gemv): the tuned parameters default to None,
    `@autotune`'s configurations give their candidates."""
    N, K = T.const("N, K")
    tile_K = 8
    block_K = reduce_threads * tile_K
    A: T.Tensor((K,), T.float16)
    B: T.Tensor((N, K), T.float16)
    C = T.empty((N,), T.float16)
    with T.Kernel(T.ceildiv(N, block_N), threads=(block_N, reduce_threads)) as bn:
        tn = T.get_thread_binding(0)
        tk = T.get_thread_binding(1)
        acc = T.alloc_local((1,), T.float32)
        reduced = T.alloc_local((1,), T.float32)
        T.clear(acc)
        for bk in T.serial(T.ceildiv(K, block_K)):
            for k in T.serial(tile_K):
                acc[0] += A[bk * block_K + tk * tile_K + k].astype(T.float32) * B[
                    bn * block_N + tn, bk * block_K + tk * tile_K + k].astype(T.float32)
        with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, T.float32)]), "reduce_scope",
                    T.reinterpret(T.uint64(0), dtype="handle")):
            T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, reduced[0], tk, dtype="handle"))
        C[bn * block_N + tn] = reduced[0]
    return C


@tl.jit
def layout_probe(M: int, N: int):
    """Takes no tensor and launches a kernel that uses none (as TileLang's layout-inference tests do, compiling a
    kernel to read its CUDA): built and launched all the same, where the grid is one block of default size."""
    with T.Kernel():
        tile = T.alloc_fragment((N, M), T.float32)
        for i, k in T.Parallel(N, M):
            tile[i, k] = 1


@tl.jit
def zero_quads(A):
    """A dyn dim no tensor has plainly, only in an affine size (TileLang's `T.Tensor((n * 4,), ...)`): a call's
    size gives it."""
    n = T.dynamic("n")
    A: T.Tensor[[n * 4], T.int32]
    with T.Kernel(1, threads=128) as _:
        for i in T.serial(n * 4):
            A[i] = 0
