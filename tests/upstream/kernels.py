"""Which of TileLang's kernels are run here, and the two specialisations each is lowered at.

Each `Case` names an upstream file and kernel (see source.py) and two
`Call`s: the arguments of `kernel.lower(...)` at two shapes (meta tensors, or
dims by name where upstream gives them so). The GPU tests (test_gpu.py) run
the same kernels on real tensors against torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from tests.upstream.source import Source

F16, F32, BF16 = torch.float16, torch.float32, torch.bfloat16


def meta(*shape: int, dtype: torch.dtype = F32) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device="meta")


def strided_view(rows: int, cols: int) -> torch.Tensor:
    """`A[:, 0, :, 0]` of a (rows, 2, cols, 2) tensor, as upstream's StridedTensor tests pass."""
    return torch.empty(rows, 2, cols, 2, device="meta")[:, 0, :, 0]


@dataclass(frozen=True)
class Call:
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def call(*args: Any, **kwargs: Any) -> Call:
    return Call(args, kwargs)


@dataclass(frozen=True)
class Case:
    id: str
    source: Source
    kernel: str  # the attribute of the loaded module
    shapes: Callable[[Any], tuple[Call, Call]]  # the loaded module -> two lowerings


EAGER = "testing/python/language/test_tilelang_language_eager_jit.py"
NOTEBOOK = "examples/eager_jit/eagerjit.en.ipynb"

SRC = {
    "eager_gemm": Source(EAGER, ("test_jit2_gemm.gemm",)),
    "eager_gemm_ptr": Source(EAGER, ("test_jit2_gemm_ptr.gemm_ptr",)),
    "eager_many_annot": Source(
        EAGER, ("test_jit2_many_annot.copy_impl", *(f"test_jit2_many_annot.copy{i}" for i in range(1, 7)))
    ),
    "eager_return": Source(EAGER, ("test_jit2_return.copy_impl", *(f"test_jit2_return.copy{i}" for i in range(1, 7)))),
    "eager_transpose": Source(EAGER, ("test_jit2_compile_with_consts.transpose",)),
    "notebook": Source(
        NOTEBOOK, ("gemm", "gemm_impl", "gemm_dyn_K", "as_contingious", "gemm_ptr", "gemm_ptr_dyn", "add_one#0")
    ),
    "notebook_macros": Source(NOTEBOOK, ("element_wise", "add_one#1", "n31", "foo#1")),
    "gemm": Source("examples/gemm/example_gemm.py", ("matmul",)),
    "quickstart": Source("examples/quickstart.py", ("matmul",)),
    "persistent": Source("examples/gemm/example_gemm_persistent.py", ("matmul_non_persistent",)),
    "warp_specialize": Source(
        "examples/warp_specialize/example_warp_specialize_gemm_copy_0_gemm_1.py", ("matmul_warp_specialize_copy_0_gemm_1",)
    ),
    "dynamic": Source("examples/dynamic_shape/example_dynamic.py", ("matmul_dynamic_mnk",)),
    "splitk": Source("examples/gemm_splitk/example_tilelang_gemm_splitk.py", ("matmul",)),
    "splitk_vectorized": Source("examples/gemm_splitk/example_tilelang_gemm_splitk_vectorize_atomicadd.py", ("matmul",)),
    "gemv": Source(
        "examples/gemv/example_gemv.py",
        ("naive_gemv", "naive_splitk_gemv", "splitk_gemv", "splitk_gemv_vectorized", "splitk_gemv_vectorized_tvm"),
    ),
    "rms_norm": Source("examples/norm/rms_norm.py", ("rms_norm_splitk", "rms_norm")),
    "softmax": Source("examples/online_softmax/online_softmax.py", ("softmax_kernel", "M", "N")),
    "nsa": Source("examples/deepseek_nsa/example_tilelang_nsa_fwd.py", ("native_sparse_attention",), ("reference",)),
    "elementwise": Source("examples/elementwise/example_elementwise_add.py", ("elementwise_add",)),
    "alloc_global": Source("testing/python/language/test_tilelang_language_alloc.py", ("alloc_global_eagerjit",)),
    "issue_1690": Source("testing/python/issue/test_tilelang_issue_1690.py", ("test_issue_1690.test",)),
    "issue_1719_3": Source("testing/python/issue/test_tilelang_issue_1719.py", ("test_issue_1719_layout_3._buggy_kernel",)),
    "issue_1719_5": Source("testing/python/issue/test_tilelang_issue_1719.py", ("test_issue_1719_layout_5.buggy_kernel",)),
    "issue_1846": Source("testing/python/issue/test_tilelang_issue_1846.py", ("_issue1846_fill_scalar",)),
    "argument_binding": Source("testing/python/jit/test_tilelang_jit_argument_binding.py", ("_copy_kernel",)),
    "int64": Source("testing/python/language/test_tilelang_language_int64.py", ("fill_symbolic", "fill_static")),
}


def _gemm_shapes(m: Any) -> tuple[Call, Call]:
    return (
        call(meta(1024, 512, dtype=F16), meta(512, 256, dtype=F16)),
        call(meta(512, 256, dtype=F16), meta(256, 384, dtype=F16), block_M=64, block_N=64),
    )


def _blocked_gemm(*blocks: Any) -> Callable[[Any], tuple[Call, Call]]:
    return lambda m: (
        call(meta(1024, 512, dtype=F16), meta(512, 256, dtype=F16), *blocks),
        call(meta(256, 768, dtype=F16), meta(768, 512, dtype=F16), *blocks),
    )


def _copies(n_tensors: int) -> tuple[Callable[[Any], tuple[Call, Call]], ...]:
    """Upstream's copy1..copy6, each at two (rows, cols): `rows` and `cols` give the first and second shape's."""

    def shapes(rows: tuple[int, int], cols: tuple[int, int], strided: bool) -> Callable[[Any], tuple[Call, Call]]:
        make = strided_view if strided else (lambda r, c: meta(r, c))
        return lambda m: tuple(call(*(make(r, c) for _ in range(n_tensors))) for r, c in zip(rows, cols))  # type: ignore[return-value]

    return (
        shapes((128, 256), (128, 384), False),  # copy1: N, M const
        shapes((128, 128), (128, 128), False),  # copy2: 128x128 by its signature
        shapes((128, 256), (128, 128), False),  # copy3: [N, 128]
        shapes((128, 384), (128, 256), False),  # copy4: N dyn, M const
        shapes((128, 256), (128, 128), True),  # copy5: strides as const dims
        shapes((128, 384), (128, 128), True),  # copy6: N dyn, strides const
    )


def _cases() -> list[Case]:
    cases = [
        Case("eager_jit.gemm", SRC["eager_gemm"], "gemm", lambda m: (
            call(meta(512, 256, dtype=F16), meta(256, 256, dtype=F16), meta(512, 256, dtype=F16)),
            call(meta(256, 128, dtype=F16), meta(128, 384, dtype=F16), meta(256, 384, dtype=F16), block_K=32),
        )),
        Case("eager_jit.gemm_ptr", SRC["eager_gemm_ptr"], "gemm_ptr", lambda m: (
            call(meta(1024, 1024, dtype=F16), meta(1024, 1024, dtype=F16), meta(1024, 1024), 1024, 1024, 1024, F16, F32),
            call(meta(512, 128, dtype=F16), meta(128, 256, dtype=F16), meta(512, 256), 512, 256, 128, F16, F32),
        )),
        Case("eager_jit.transpose", SRC["eager_transpose"], "transpose", lambda m: (
            call(M=1024, N=1024, block_M=64, block_N=64),
            call(meta(256, 512), meta(512, 256), 64, 32),
        )),
    ]
    for i, shapes in enumerate(_copies(2), start=1):
        cases.append(Case(f"eager_jit.many_annot.copy{i}", SRC["eager_many_annot"], f"copy{i}", shapes))
    for i, shapes in enumerate(_copies(1), start=1):
        cases.append(Case(f"eager_jit.return.copy{i}", SRC["eager_return"], f"copy{i}", shapes))
    cases += [
        Case("notebook.gemm", SRC["notebook"], "gemm", _gemm_shapes),
        Case("notebook.gemm_dyn_K", SRC["notebook"], "gemm_dyn_K", lambda m: (
            call(meta(1024, 512, dtype=F16), meta(512, 256, dtype=F16)),
            call(meta(384, 256, dtype=F16), meta(256, 128, dtype=F16)),
        )),
        Case("notebook.as_contingious", SRC["notebook"], "as_contingious", lambda m: (
            call(meta(1024, 1024).T), call(meta(512, 256).T),
        )),
        Case("notebook.gemm_ptr", SRC["notebook"], "gemm_ptr", lambda m: (
            call(meta(1024, 512, dtype=F16), meta(512, 256, dtype=F16), 1024, 256, 512),
            call(meta(256, 128, dtype=F16), meta(128, 512, dtype=F16), 256, 512, 128),
        )),
        Case("notebook.gemm_ptr_dyn", SRC["notebook"], "gemm_ptr_dyn", lambda m: (
            call(meta(1024, 512, dtype=F16), meta(512, 256, dtype=F16), 1024, 256, 512),
            call(meta(256, 128, dtype=F16), meta(128, 512, dtype=F16), 256, 512, 128),
        )),
        Case("notebook.add_one", SRC["notebook"], "add_one", lambda m: (
            call(meta(1024, 1024)), call(meta(256, 64), data=2.5),
        )),
        Case("notebook.element_wise", SRC["notebook_macros"], "element_wise", lambda m: (
            call(meta(1024), m.add_one), call(meta(1000), m.add_one),
        )),
        Case("notebook.foo", SRC["notebook_macros"], "foo", lambda m: (
            call(meta(1, dtype=torch.int32), 5), call(meta(1, dtype=torch.int32), 6),
        )),
        Case("gemm.matmul", SRC["gemm"], "matmul", lambda m: (
            call(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32),
            call(meta(512, 256, dtype=F16), meta(256, 768, dtype=F16), 64, 128, 64),
        )),
        Case("quickstart.matmul", SRC["quickstart"], "matmul", _blocked_gemm(128, 128, 32)),
        Case("persistent.matmul_non_persistent", SRC["persistent"], "matmul_non_persistent", _blocked_gemm(128, 256, 64, 256, 3)),
        Case("warp_specialize.copy_0_gemm_1", SRC["warp_specialize"], "matmul_warp_specialize_copy_0_gemm_1",
             _blocked_gemm(128, 128, 64)),
        Case("dynamic_shape.matmul_dynamic_mnk", SRC["dynamic"], "matmul_dynamic_mnk", lambda m: (
            call(meta(1024, 512, dtype=F16), meta(512, 768, dtype=F16), 128, 128, 32, False, False,
                 "float16", "float16", "float32", 3, 128),
            call(meta(512, 1024, dtype=F16), meta(768, 512, dtype=F16), 128, 128, 32, True, True,
                 "float16", "float16", "float32", 3, 128),
        )),
        Case("gemm_splitk.matmul", SRC["splitk"], "matmul", lambda m: (
            call(meta(1024, 1024, dtype=F16), meta(1024, 1024, dtype=F16), meta(1024, 1024), 128, 128, 32, 4),
            call(meta(512, 2048, dtype=F16), meta(2048, 256, dtype=F16), meta(512, 256), 64, 64, 32, 8),
        )),
        Case("gemm_splitk.vectorize_atomicadd", SRC["splitk_vectorized"], "matmul", lambda m: (
            call(meta(1024, 1024, dtype=F16), meta(1024, 1024, dtype=F16), meta(1024, 1024), 128, 128, 32, 4),
            call(meta(512, 2048, dtype=F16), meta(2048, 256, dtype=F16), meta(512, 256), 64, 64, 32, 8),
        )),
        Case("gemv.naive_gemv", SRC["gemv"], "naive_gemv", lambda m: (
            call(N=1024, K=1024, BLOCK_N=128, BLOCK_K=128), call(meta(512, dtype=F16), meta(256, 512, dtype=F16), 128, 64),
        )),
        Case("gemv.naive_splitk_gemv", SRC["gemv"], "naive_splitk_gemv", lambda m: (
            call(N=1024, K=1024, BLOCK_N=32, BLOCK_K=32), call(meta(512, dtype=F16), meta(256, 512, dtype=F16), 32, 32),
        )),
        Case("gemv.splitk_gemv", SRC["gemv"], "splitk_gemv", lambda m: (
            call(N=1024, K=1024, BLOCK_N=32, BLOCK_K=32, reduce_threads=32),
            call(meta(512, dtype=F16), meta(256, 512, dtype=F16), 32, 64, 32),
        )),
        Case("gemv.splitk_gemv_vectorized", SRC["gemv"], "splitk_gemv_vectorized", lambda m: (
            call(N=1024, K=1024, BLOCK_N=2, reduce_threads=32),
            call(meta(512, dtype=F16), meta(256, 512, dtype=F16), 2, 32),
        )),
        Case("gemv.splitk_gemv_vectorized_tvm", SRC["gemv"], "splitk_gemv_vectorized_tvm", lambda m: (
            call(N=1024, K=1024, BLOCK_N=2, reduce_threads=32),
            call(meta(512, dtype=F16), meta(256, 512, dtype=F16), 2, 32),
        )),
        Case("norm.rms_norm", SRC["rms_norm"], "rms_norm", lambda m: (
            call(M=1024, N=1024, blk_m=1), call(meta(256, 512), 2),
        )),
        Case("norm.rms_norm_splitk", SRC["rms_norm"], "rms_norm_splitk", lambda m: (
            call(meta(1024, 1024), 1, 512), call(meta(256, 2048), 1, 256),
        )),
        Case("online_softmax.softmax_kernel", SRC["softmax"], "softmax_kernel", lambda m: (
            call(meta(m.M, m.N, dtype=F16)), call(meta(m.M, m.N, dtype=BF16), dtype=BF16),
        )),
        Case("deepseek_nsa.native_sparse_attention", SRC["nsa"], "native_sparse_attention", lambda m: (
            call(meta(2, 64, 16, 32, dtype=F16), meta(2, 64, 1, 32, dtype=F16), meta(2, 64, 1, 32, dtype=F16),
                 meta(2, 64, 1, 1, dtype=torch.int32), dim=32, is_causal=True, block_size=32, groups=16, selected_blocks=1,
                 scale=0.1),
            call(meta(1, 128, 32, 64, dtype=F16), meta(1, 128, 2, 64, dtype=F16), meta(1, 128, 2, 64, dtype=F16),
                 meta(1, 128, 2, 4, dtype=torch.int32), dim=64, is_causal=True, block_size=32, groups=16, selected_blocks=4),
        )),
        Case("elementwise.elementwise_add", SRC["elementwise"], "elementwise_add", lambda m: (
            call(meta(1024, 1024), meta(1024, 1024), block_M=32, block_N=32, threads=128, in_dtype=F32, out_dtype=F32),
            call(meta(512, 256, dtype=F16), meta(512, 256, dtype=F16), 64, 64, F16, F32, 256),
        )),
        Case("language_alloc.alloc_global_eagerjit", SRC["alloc_global"], "alloc_global_eagerjit", lambda m: (
            call(meta(1024, dtype=F16), 128, "float16"), call(meta(512), 64, "float32"),
        )),
        Case("issue_1690.test", SRC["issue_1690"], "test", lambda m: (call(N=16), call(meta(64)))),
        Case("issue_1719.layout_3", SRC["issue_1719_3"], "_buggy_kernel", lambda m: (call(M=2, N=128), call(meta(4, 64)))),
        Case("issue_1719.layout_5", SRC["issue_1719_5"], "buggy_kernel", lambda m: (call(N=128), call(meta(1, 64)))),
        Case("issue_1846.fill_scalar", SRC["issue_1846"], "_issue1846_fill_scalar", lambda m: (
            call(fill=1.0, M=32), call(fill=-2.5, M=64),
        )),
        Case("jit_argument_binding.copy_kernel", SRC["argument_binding"], "_copy_kernel", lambda m: (
            call(meta(256, 256), meta(256, 256)), call(meta(64, 128, dtype=F16), meta(64, 128, dtype=F16), dtype=F16),
        )),
    ]
    return cases


CASES = _cases()
