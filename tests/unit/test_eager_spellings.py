"""TileLang's eager spellings, as tltyped reads, checks, keys and lowers them (CPU; sm_90a).

This module, like tests/kernels/eager_style.py, has no `from __future__ import
annotations`: signature annotations are objects, as in most user code.
"""

import re
from pathlib import Path
from typing import Any

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.conftest import meta, needs_nvcc
from tests.kernels import eager_style as ks
from tests.kernels import tilelang_signatures as tk
from tests.kernels import tilelang_signatures_postponed as tp
from tltyped.backend.launcher import describe_abi
from tltyped.frontend.signature import Kind
from tltyped.types.params import Tune

KERNELS = Path(ks.__file__)
SHADOWED = 1024  # a module global a factory's argument of the same name shadows
F16 = torch.float16


def line_of(marker: str, path: Path = KERNELS) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if marker in text)


def specs(fn: Any) -> dict[str, str]:
    return {p.name: str(p.tensor) for p in fn.signature.params if p.tensor is not None}


def resolved(fn: Any, **consts: Any) -> Any:
    """The signature a Router resolved for these const values."""
    return fn._dispatcher.child(consts).signature


# -- 1. call-form annotations ---------------------------------------------------------


def test_call_form_in_the_body_and_a_tilelang_scalar_in_the_signature() -> None:
    assert specs(ks.call_form) == {"A": "Tensor[dtype, M, N]", "B": "Tensor[dtype, M, N]"}
    scale = ks.call_form.signature.param("scale")
    assert (scale.kind, scale.scalar) == (Kind.DYN, "float32")
    ks.call_form.lower(meta(128, 32), meta(128, 32), 0.5)
    with pytest.raises(TypeError, match="argument 'B' expects dtype float16, got float32"):
        ks.call_form.lower(meta(128, 32), meta(128, 32, dtype=torch.float32), 0.5)


def test_call_form_in_the_signature_is_the_subscription() -> None:
    assert T.Tensor((128, 64), T.float32) == T.Tensor[[128, 64], T.float32]
    assert T.Tensor(7) == T.Tensor[[7], "float32"]  # TileLang's defaults: one dim, float32
    assert specs(ks.signature_call_form) == {"A": "Tensor[float32, 128, 64]", "out": "Tensor[float32, 128]"}
    assert ks.signature_call_form.signature.param("n").kind is Kind.DYN


def test_tilelang_s_own_tensor_in_the_signature_is_a_tensor() -> None:
    """`import tilelang.language as T` and `A: T.Tensor[(64,), T.float32]` in the def: a TVM buffer once evaluated,
    read from source as the body's annotations are (literal sizes, a module's int, TileLang's strided form)."""
    assert specs(tk.subscripted) == {"A": "Tensor[float32, 64]"}
    assert specs(tk.module_sizes) == {"A": "Tensor[float16, 64, 2]", "B": "Tensor[float32, 128]"}
    assert tk.module_sizes.signature.param("s").kind is Kind.DYN
    assert specs(tk.strided) == {"A": "StridedTensor[[64, 64], [128, 1], float32]"}
    tk.module_sizes.lower(meta(64, 2), meta(128, dtype=torch.float32), 2.0)
    with pytest.raises(TypeError, match="argument 'A' expects dtype float16, got float32"):
        tk.module_sizes.lower(meta(64, 2, dtype=torch.float32), meta(128, dtype=torch.float32), 2.0)
    with pytest.raises(ValueError, match="argument 'A': dim 0 must be 64, got 32"):
        tk.subscripted.lower(meta(32, dtype=torch.float32))


def test_tilelang_s_own_tensor_in_a_postponed_signature_may_name_consts_and_body_dims() -> None:
    """Under `from __future__ import annotations` the def's `T.Tensor[(N, block), ...]` names a const and a dim the
    body declares: resolved per value of the const, as an in-body annotation is."""
    fn = tp.blocked
    assert fn.signature.depends_on == ("block",)
    assert str(resolved(fn, block=32).param("A").tensor) == "Tensor[float16, N, 32]"
    fn.lower(meta(100, 32), meta(100, dtype=torch.float32), block=32)
    with pytest.raises(ValueError, match="argument 'A': dim 1 must be 64, got 32"):
        fn.lower(meta(100, 32), meta(100, dtype=torch.float32))


def test_tilelang_s_tensor_in_a_factory_kernel_s_signature_is_read_from_the_sizes_the_def_evaluated() -> None:
    """The def's annotation is read from source, where a factory's values the kernel does not otherwise use are
    unknown; the buffer the def evaluated holds them, so each kernel the factory makes takes its own sizes. Sizes
    that are not ints there (a factory's `T.dynamic`) are refused at decoration, saying to annotate in the body."""
    import tilelang.language as TL

    def make(M):
        def k(A: TL.Tensor((M, 32), "float16"), B: TL.StridedTensor((M, 16), (32, 1), TL.float32)):
            with TL.Kernel(1, threads=32) as bx:  # noqa: F841
                A[0, 0] = 1.0
                B[0, 0] = 1.0

        return k

    k64, k128 = tl.jit(make(64)), tl.jit(make(128))
    assert specs(k64) == {"A": "Tensor[float16, 64, 32]", "B": "StridedTensor[[64, 16], [32, 1], float32]"}
    assert specs(k128)["A"] == "Tensor[float16, 128, 32]"
    k64.lower(meta(64, 32), torch.empty(64, 32, device="meta")[:, :16])
    with pytest.raises(ValueError, match="argument 'A': dim 0 must be 128, got 64"):
        k128.lower(meta(64, 32), torch.empty(64, 32, device="meta")[:, :16])

    def make_dynamic():
        m = TL.dynamic("m")

        def k(A: TL.Tensor((m, 32), "float16")):
            with TL.Kernel(1, threads=32) as bx:  # noqa: F841
                A[0, 0] = 1.0

        return k

    with pytest.raises(tl.DefinitionError, match="annotate 'A' in the body instead"):
        tl.jit(make_dynamic())


def test_a_factory_kernel_s_evaluated_sizes_are_taken_only_where_they_are_the_def_s_meaning() -> None:
    """The buffer the def evaluated is not read where it fixed a kernel parameter's value (the annotation names a
    const) or a size is a bool, and a tensor's default is refused there too; where the source names a module
    global that a factory's argument shadows, the def means the argument, as Python evaluated it."""
    import tilelang.language as TL

    def naming_a_const(M):
        def k(A: TL.Tensor((M, block), "float16"), block: int = 16):
            with TL.Kernel(1, threads=32) as bx:  # noqa: F841
                A[0, 0] = 1.0

        return k

    def defaulted(M):
        def k(A: TL.Tensor((M, 32), "float16") = None):
            with TL.Kernel(1, threads=32) as bx:  # noqa: F841
                A[0, 0] = 1.0

        return k

    def shadowing(SHADOWED):
        def k(A: TL.Tensor((SHADOWED, 32), "float16")):
            with TL.Kernel(1, threads=32) as bx:  # noqa: F841
                A[0, 0] = 1.0

        return k

    block = 8  # noqa: F841  (what the def evaluates `block` to)
    with pytest.raises(tl.DefinitionError, match="annotate 'A' in the body instead"):
        tl.jit(naming_a_const(64))
    with pytest.raises(tl.DefinitionError, match="annotate 'A' in the body instead"):
        tl.jit(defaulted(True))
    with pytest.raises(tl.DefinitionError, match="tensor parameter 'A' has a default"):
        tl.jit(defaulted(64))
    assert specs(tl.jit(shadowing(64))) == {"A": "Tensor[float16, 64, 32]"}  # not the module's 1024


def test_a_parameter_annotated_in_the_def_and_in_the_body_is_refused_with_tilelang_s_tensor_too() -> None:
    import tilelang.language as TL

    def both(A: TL.Tensor[(64,), TL.float32]):
        A: TL.Tensor[(64,), TL.float32]  # noqa: F842
        with TL.Kernel(1, threads=32) as bx:  # noqa: F841
            A[0] = 1.0

    with pytest.raises(tl.DefinitionError, match="parameter 'A' is annotated both in the signature and in the body"):
        tl.jit(both)


def test_tensor_descriptions_and_named_dims_stand_for_tensors_in_lower() -> None:
    by_name = ks.call_form.lower(M=256, N=64, scale=1.0)
    described = ks.call_form.lower(T.Tensor((256, 64), T.float16), T.Tensor([256, 64], T.float16), 1.0)
    assert "(256, 64)" in by_name.tir and by_name.cuda_source == described.cuda_source
    with pytest.raises(TypeError, match=re.escape("missing argument 'A': pass a tensor, T.Tensor(shape, dtype), or its dims by name (N=...)")):
        ks.call_form.lower(M=256, scale=1.0)


# -- 2. annotations computed by the body ---------------------------------------------


def test_shape_chosen_from_a_const_is_resolved_per_value() -> None:
    fn = ks.body_names
    assert fn.signature.depends_on == ("trans",) and fn.signature.param("A").is_deferred
    plain, transposed = resolved(fn, trans=False), resolved(fn, trans=True)
    assert str(plain.param("A").tensor) == "Tensor[in_dtype, m, K]"
    assert str(transposed.param("A").tensor) == "Tensor[in_dtype, K, m]"
    assert str(plain.param("B").tensor) == "Tensor[float32, m]"  # `out_dtype = T.float32` before it
    fn.lower(meta(100, 8), meta(100, dtype=torch.float32))
    fn.lower(meta(8, 100), meta(100, dtype=torch.float32), trans=True)
    with pytest.raises(ValueError, match=r"dim m: 8 \(from A, axis 1\) vs 100 \(from B, axis 0\)"):
        fn.lower(meta(100, 8), meta(100, dtype=torch.float32), trans=True)
    assert "trans" in fn.fast_path_source


def test_globals_assigned_after_the_kernel_are_read_at_the_first_call() -> None:
    assert ks.late_global.signature.param("A").is_deferred
    ks.late_global.lower(meta(32, 16, dtype=torch.float32))
    with pytest.raises(ValueError, match="argument 'A': dim 1 must be 16, got 8"):
        ks.late_global.lower(meta(32, 8, dtype=torch.float32))


@pytest.mark.parametrize("kernel", ["sized_by_global", "late_global"])
def test_a_global_rebound_that_changes_the_tensors_refuses_the_next_build(kernel: str, monkeypatch) -> None:
    """The body would loop over the new size while the call checks and allocates the old: never built. (late_global's
    annotations are read at its first call, sized_by_global's at decoration.)"""
    fn = getattr(ks, kernel)
    shape = (32, 16) if kernel == "late_global" else (64,)
    tensors = [meta(*shape, dtype=torch.float32) for _ in fn.signature.params]
    fn.lower(*tensors)
    monkeypatch.setattr(ks, "ROWS" if kernel == "late_global" else "SIZE", 128)
    with pytest.raises(tl.KernelBuildError, match=rf"{kernel}: its annotations now read {kernel}\(A: Tensor\[float32, 128"):
        fn.lower(*tensors)


def test_const_parameters_used_as_dims() -> None:
    fn = ks.const_params_as_dims
    assert fn.signature.depends_on == ("M", "N")
    assert str(resolved(fn, M=4, N=8).param("A").tensor) == "Tensor[float32, 4, 8]"
    with pytest.raises(ValueError, match="argument 'A': dim 0 must be 4, got 5"):
        fn.lower(meta(5, 8, dtype=torch.float32), 4, 8)


def test_a_failing_statement_is_reported_where_it_is_when_the_annotation_is_resolved() -> None:
    ks.undefined_in_deferred.lower(meta(8, 4, dtype=torch.float32), trans=True)  # that branch never reads the name
    with pytest.raises(tl.DefinitionError) as info:
        ks.undefined_in_deferred.lower(meta(4, 8, dtype=torch.float32))
    message = str(info.value)
    assert f"{KERNELS}:{line_of('# <- fails when resolved')}" in message
    assert "NameError" in message and "not_defined_anywhere" in message


def test_an_undefined_dtype_is_reported_at_decoration_at_its_line() -> None:
    def kernel(A):
        M = T.const("M")
        A: T.Tensor[[M], no_such_dtype]  # noqa: F821  # <- undefined dtype

    with pytest.raises(tl.DefinitionError) as info:
        tl.jit(kernel)
    message = str(info.value)
    assert f":{line_of('# <- undefined dtype', Path(__file__))}:" in message and "no_such_dtype" in message


# -- 3, 4. scalars in the signature, renamed dims -----------------------------------


def test_renamed_dyn_dim_keys_messages_by_its_name() -> None:
    assert dict(resolved(ks.body_names, trans=False).dims) == {"m": True, "K": False}


# -- 5. strides ----------------------------------------------------------------------


def test_dyn_strides_one_kernel_for_every_layout() -> None:
    fn = ks.strided._dispatcher
    contiguous, transposed = meta(8, 4, dtype=torch.float32), meta(4, 8, dtype=torch.float32).t()
    out = meta(8, 4, dtype=torch.float32)
    specialisations = []
    for a in (contiguous, transposed):
        bound, consts = fn.bind_for_inspection((a, out), {})
        specialisations.append(fn.specialization(bound, consts))
    assert specialisations[0] == specialisations[1]
    assert fn.key(contiguous, out) != fn.key(transposed, out)  # the key still says the layout
    lowered = ks.strided.lower(meta(8, 4, dtype=torch.float32).t().t(), meta(8, 4, dtype=torch.float32))
    assert 'strides=("sM", "sN")' in lowered.tir


class Launches:
    """A cache entry's launch that records its arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> str:
        self.calls.append(args)
        return "launched"


def test_fast_path_passes_dyn_strides_from_the_layout_or_the_sizes() -> None:
    d = ks.strided._dispatcher
    out = torch.empty(8, 4)
    for a, strides in ((torch.empty(8, 4), (4, 1)), (torch.empty(4, 8).t(), (1, 8))):
        launches = Launches()
        d.launches[d.key(a, out)] = launches
        assert d.fast_path.call(a, out) == "launched"
        assert launches.calls[0][2:6] == (8, 4, *strides)  # dyn dims M, N, sM, sN after the two pointers


def test_non_contiguous_view_with_dyn_dims_is_a_strided_specialisation() -> None:
    view = meta(256, 128, dtype=F16).t()  # (128, 256), strides (1, 128); m is dyn
    lowered = ks.body_names.lower(view[:, :8], meta(128, dtype=torch.float32))
    assert "strides=(1, 128)" in lowered.tir


# -- 6. outputs and scratch ---------------------------------------------------------


def test_alloc_global_is_scratch_unless_returned() -> None:
    lowered = ks.scratch_and_outputs.lower(meta(256, dtype=torch.float32))
    abi = describe_abi(lowered, ks.scratch_and_outputs.signature)
    assert [a.label for a in abi.args] == ["A"]  # the launcher allocates the rest
    assert [o.spec.label for o in abi.outputs] == ["output 'Out'", "output 'Kept'", "output 'Scratch'"]
    assert abi.returns == (1, 0)  # returns Kept, Out; Scratch is allocated, not returned


def test_a_macro_returns_the_kernels_output() -> None:
    lowered = ks.macro_returns.lower(meta(1000, dtype=torch.float32))
    abi = describe_abi(lowered, ks.macro_returns.signature)
    assert [o.spec.shape for o in abi.outputs] == [("d0",)] and abi.returns == (0,)


def test_an_unreturned_empty_says_to_use_alloc_global() -> None:
    def kernel(A):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        B = T.empty(N, dtype=T.float32)
        with T.Kernel(1, threads=32) as bx:
            B[0] = A[0]

    with pytest.raises(tl.KernelBuildError, match="use T.alloc_global for scratch memory"):
        tl.jit(kernel).lower(meta(32, dtype=torch.float32))


# -- 7. pointers --------------------------------------------------------------------


def test_pointer_parameters_take_addresses_or_tensors() -> None:
    fn = ks.pointers
    assert [fn.signature.param(n).kind for n in ("A", "out")] == [Kind.PTR, Kind.PTR]
    lowered = fn.lower(0x1000, meta(64, dtype=torch.float32), 64)
    abi = describe_abi(lowered, fn.signature)
    assert [(a.label, a.convert) for a in abi.args][:2] == [("A", "pointer"), ("out", "pointer")]
    assert abi.call_args[:2] == ("(float*)v[0].pointer", "(float*)v[1].pointer")
    with pytest.raises(ValueError, match="argument 'A' is on cpu; kernels take CUDA or meta tensors"):
        fn(torch.empty(64), 0x2000, 64)


def test_fast_path_passes_a_pointer_int_as_is() -> None:
    d = ks.pointers._dispatcher
    launches = Launches()
    d.launches[d.key(0x1000, 0x2000, 64)] = launches
    assert d.fast_path.call(0x1000, 0x2000, 64) == "launched"
    assert launches.calls[0][:2] == (0x1000, 0x2000)


# -- 8. jit keywords ----------------------------------------------------------------


def test_jit_keywords_reach_lowering_and_the_build() -> None:
    fn = ks.configured
    assert [p.name for p in fn.signature.params] == ["A"] and [p.name for p in fn.signature.outputs] == ["C"]
    lowered = fn.lower(meta(16, 32))
    assert lowered.pass_configs["tl.disable_tma_lower"] is True and lowered.pass_configs["tl.disable_warp_specialized"] is True
    # nvcc hears the pass configuration as in TileLang's CUDA build, then the decorator's flags
    assert lowered.compile_flags == [
        "-DTLTYPED_PASS_FLAG=2", "--use_fast_math", "--ptxas-options=--register-usage-level=5", "-DTLTYPED_FLAG=1",
    ]
    abi = describe_abi(lowered, fn.signature)
    assert [o.spec.shape for o in abi.outputs] == [("16", "d0")] and abi.returns == (0,)


def test_a_pass_config_tilelang_takes_from_the_environment_is_lowered_with_and_keyed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """TILELANG_LAYOUT_COST_MODEL sets `tl.layout_cost_model` where the kernel does not, as in TileLang: the kernel
    is lowered with it, and its key (in memory and on disk) is another, so no build made without it is served."""
    fn = ks.configured
    spec = fn._dispatcher.specialization(fn._dispatcher.binder.bind((meta(16, 32),), allow_meta=True), {})
    target = {"kind": "cuda", "arch": "sm_90a"}
    monkeypatch.delenv("TILELANG_LAYOUT_COST_MODEL", raising=False)
    plain = fn._dispatcher.kernels.identity(spec, target)
    assert "tl.layout_cost_model" not in fn.lower(meta(16, 32)).pass_configs
    monkeypatch.setenv("TILELANG_LAYOUT_COST_MODEL", "io-aware")
    assert fn.lower(meta(16, 32)).pass_configs["tl.layout_cost_model"] == "io-aware"
    from_environment = fn._dispatcher.kernels.identity(spec, target)
    assert from_environment.memory != plain.memory and from_environment.record != plain.record


@needs_nvcc
def test_jit_keywords_reach_nvcc(sm90) -> None:
    """The build's nvcc command line has the decorator's and the pass configuration's flags: the kernel's code
    uses names only they define, so without either nvcc fails (a CompileError)."""
    lowered = ks.flagged.lower(meta(8, dtype=torch.int32))
    assert "tltyped_decorator_flag() + tltyped_pass_flag()" in lowered.cuda_source
    ks.flagged.compile(meta(8, dtype=torch.int32))  # a CompileError if nvcc misses either flag


@pytest.mark.parametrize(
    ("out_idx", "message"),
    [(5, "out_idx 5 is not the index of one of its 2 parameters"), ([1, -1], "names a parameter twice")],
)
def test_bad_out_idx(out_idx: Any, message: str) -> None:
    with pytest.raises(tl.DefinitionError, match=re.escape(message)):
        tl.jit(out_idx=out_idx)(ks.configured.__wrapped__)


def test_out_idx_with_returned_outputs_is_rejected() -> None:
    with pytest.raises(tl.DefinitionError, match="out_idx is given and the kernel returns T.empty tensors"):
        tl.jit(out_idx=0)(ks.macro_returns.__wrapped__)


# -- 9. seed spellings --------------------------------------------------------------


def test_named_dyn_dim_and_t_tune() -> None:
    fn = ks.seed_spellings
    assert dict(fn.signature.dims) == {"_K": True}
    assert isinstance(fn.signature.param("block").default, Tune) and T.tune is tl.tune


def test_anonymous_dims_are_const_dims_of_their_own() -> None:
    fn = ks.anonymous
    assert dict(fn.signature.dims) == {"_A_0": False, "_A_1": False, "_B_0": False, "_B_1": False}
    fn.lower(meta(64, 32), meta(16, 32))
    with pytest.raises(tl.KernelBuildError, match="Expect 2 matrices with identical K dimension"):
        fn.lower(meta(64, 32), meta(16, 8))


def test_scalar_parameters_that_size_tensors() -> None:
    fn = ks.scalar_dims
    assert fn.signature.scalar_dims == ("K", "M") and fn.signature.dyn_dims == ("M", "K")
    fn.lower(meta(256, 16), 256, 16)
    with pytest.raises(ValueError, match="argument 'M' = 100, but it is dim M of A, axis 0, which is 256"):
        fn.lower(meta(256, 16), 100, 16)
    assert fn.lower(meta(256, 16)).cuda_source == fn.lower(meta(256, 16), 256, 16).cuda_source  # M, K from A
    assert "__global__" in fn.lower(M=64, K=8).cuda_source


def test_a_dyn_scalar_may_be_left_out_of_lower_and_compile() -> None:
    """No kernel is specialised on a dyn scalar's value (the compiled kernel takes it at each call), so
    inspecting one needs none, by tensors or by dims, as a dyn dim needs no size."""
    with_scale = ks.call_form.lower(meta(256, 64), meta(256, 64), 1.0)
    assert ks.call_form.lower(meta(256, 64), meta(256, 64)).cuda_source == with_scale.cuda_source
    assert ks.call_form.lower(M=256, N=64).cuda_source == with_scale.cuda_source
    assert ks.call_form.get_kernel_source(M=256, N=64) == with_scale.cuda_source


def test_a_shape_of_one_dim_in_parentheses_may_be_a_scalar_parameter() -> None:
    """`T.Tensor[(n), dtype]` is `T.Tensor[n, dtype]` (the parentheses make no tuple): one dim, a dyn scalar
    parameter's as a declared dim's, as `[n]` and `(n,)` are."""

    @tl.jit
    def fill(A, B, C, n: T.int32):
        N = T.const("N")
        A: T.Tensor[(n), T.float16]
        B: T.Tensor((n), T.float16)
        C: T.Tensor[(N), T.float16]
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    A[bx * 128 + i] = B[bx * 128 + i] + C[0]

    assert specs(fill) == {"A": "Tensor[float16, n]", "B": "Tensor[float16, n]", "C": "Tensor[float16, N]"}
    fill.lower(meta(256), meta(256), meta(4), 256)


# -- the same kernels build (nvcc; the launcher's ABI holds for each) -------------------------


@needs_nvcc
@pytest.mark.parametrize(
    ("kernel", "args"),
    [
        ("pointers", (0x1000, 0x2000, 64)),  # T.ptr parameters made into tensors
        ("scratch_and_outputs", (meta(256, dtype=torch.float32),)),  # alloc_global scratch and outputs
        ("strided", (meta(4, 8, dtype=torch.float32).t(), meta(8, 4, dtype=torch.float32))),  # dyn strides
        ("configured", (meta(16, 32),)),  # out_idx, pass_configs, compile_flags
    ],
)
def test_builds(kernel: str, args: tuple[Any, ...], sm90: str) -> None:
    compiled = getattr(ks, kernel).compile(*args)
    assert callable(compiled.launch)


def test_an_annotation_whose_order_waits_for_a_const_is_keyed_by_every_const_it_reads() -> None:
    """`T.Tensor[dtype, block]` with both names parameters: which order it is waits for `dtype`'s value, and its
    dim reads `block`; both key the annotation's reading, so each call reads it for its own `block`."""

    @tl.jit
    def fill(A, dtype, block: int):
        A: T.Tensor[dtype, block]
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(block):
                A[i] = 0

    assert fill.signature.depends_on == ("block", "dtype")
    assert "__global__" in fill.lower(meta(4), T.float16, 4).cuda_source
    with pytest.raises(ValueError, match="fill: argument 'A': dim 0 must be 8, got 4"):
        fill.lower(meta(4), T.float16, 8)
