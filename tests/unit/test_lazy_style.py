"""Lazy style on CPU (sm_90a): a factory's call gives a kernel object whose signature is its PrimFunc's.

No `from __future__ import annotations` here or in tests/kernels/lazy_style.py, as in TileLang's examples.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.conftest import ROOT, meta, needs_nvcc
from tests.kernels import lazy_style as ks
from tltyped.frontend.signature import Kind

F16, F32 = torch.float16, torch.float32


def specs(kernel):
    return {p.name: str(p.tensor) if p.tensor else f"{p.kind.value}[{p.scalar}]" for p in kernel.signature.params}


def test_a_factory_call_gives_one_kernel_object_per_distinct_values(sm90) -> None:
    kernel = ks.matmul(256, 128, 64, 64, 64, 32)
    assert kernel is ks.matmul(256, 128, 64, block_M=64, block_N=64, block_K=32)  # defaults and keywords bind alike
    assert kernel is not ks.matmul(256, 128, 64, 64, 64, 32, T.bfloat16)
    assert specs(kernel) == {"A": "Tensor[float16, 256, 64]", "B": "Tensor[float16, 64, 128]"}
    assert [str(o.tensor) for o in kernel.signature.outputs] == ["Tensor[float16, 256, 128]"]
    # two `T.dynamic("m")` objects are equal values: one kernel
    assert ks.matmul(T.dynamic("m"), 128, 64, 64, 64, 32) is ks.matmul(T.dynamic("m"), 128, 64, 64, 64, 32)


def test_dims_from_ints_dynamic_variables_and_expressions(sm90) -> None:
    dyn = ks.matmul(T.dynamic("m"), 128, 64, 64, 64, 32)
    assert specs(dyn)["A"] == "Tensor[float16, m, 64]" and dyn.signature.dims == {"m": True}
    rows = ks.scale_rows(96)
    assert specs(rows) == {"X": "Tensor[float32, m, 96]", "Y": "Tensor[float32, m, 96]", "alpha": "dyn[float32]"}
    assert rows.signature.outputs == ()
    pad = ks.split_pad(100)
    assert specs(pad) == {"X": "Tensor[float32, 200]"}
    assert [o.name for o in pad.signature.outputs] == ["Lo", "Hi"]  # out_idx order
    assert [str(o.tensor) for o in pad.signature.outputs] == ["Tensor[float32, 100]", "Tensor[float16, 101]"]


def test_lowered_kernels_take_inputs_then_outputs(sm90) -> None:
    lowered = ks.split_pad(100).lower()
    assert lowered.target["arch"] == "sm_90a" and "__global__" in lowered.cuda_source
    params = lowered.prim_func.params
    names = [lowered.prim_func.buffer_map[p].name for p in params]
    assert names == ["X", "Lo", "Hi"]
    assert list(lowered.prim_func.attrs["tilelang_out_idx"]) == [-2, -1]
    # with arguments, as a call would: the tensors are checked against the PrimFunc's buffers
    ks.scale_rows(96).lower(meta(7, 96, dtype=F32), meta(7, 96, dtype=F32), 2.0)
    with pytest.raises(tl.ArgumentValueError, match=r"dim m: 7 \(from X, axis 0\) vs 8 \(from Y, axis 0\)"):
        ks.scale_rows(96).lower(meta(7, 96, dtype=F32), meta(8, 96, dtype=F32), 2.0)
    with pytest.raises(tl.ArgumentTypeError, match="argument 'X' expects dtype float32, got float16"):
        ks.scale_rows(96).lower(meta(7, 96, dtype=F16), meta(7, 96, dtype=F32), 2.0)
    with pytest.raises(tl.ArgumentValueError, match="'X'.*200"):
        ks.split_pad(100).lower(meta(100, dtype=F32))


def test_a_factory_s_arguments_are_checked_like_consts(sm90) -> None:
    with pytest.raises(tl.ArgumentTypeError, match=r"matmul: argument 'M' must be hashable .* got list \[256\]"):
        ks.matmul([256], 128, 64, 64, 64, 32)
    with pytest.raises(tl.ArgumentTypeError, match="matmul: missing a required argument: 'block_K'"):
        ks.matmul(256, 128, 64, 64, 64)
    with pytest.raises(tl.DefinitionError, match="not_a_kernel: a lazy-style factory returns the @T.prim_func it defines; "
                       "it returned int 8"):
        ks.not_a_kernel(8)
    with pytest.raises(tl.DefinitionError, match="bad_out_idx: out_idx 5 is not the index of one of its 2 parameters"):
        ks.bad_out_idx(8)
    with pytest.raises(tl.DefinitionError, match="one_name_two_dims: two different dim variables are both named 'a'"):
        ks.one_name_two_dims()


def test_a_factory_failing_on_its_arguments_names_them_and_the_line(sm90, capfd, caplog) -> None:
    """A float where the factory's body needs an int fails inside TileLang: a KernelBuildError with the arguments,
    and not TileLang's log of the generated builder source before it."""
    with pytest.raises(tl.KernelBuildError, match=r"^matmul: running the factory with M=float 256.0, N=int 128, .* "
                                                  r"failed at .*lazy_style.py:\d+: "):
        ks.matmul(256.0, 128, 64, 64, 64, 32)
    assert "Failed to build prim_func" not in capfd.readouterr().err + caplog.text


def test_a_bare_assert_failing_in_tilelang_is_described_by_its_text(sm90) -> None:
    with pytest.raises(tl.KernelBuildError, match=r"^copies_a_point_into_a_tile: running the factory with N=int 64 "
                       r"failed at .*lazy_style.py:\d+: AssertionError: `assert len\(obj.indices\) == len\(exts\)` "
                       r"failed \(tilelang/utils/language.py:\d+\)$"):
        ks.copies_a_point_into_a_tile(64)


@pytest.mark.parametrize("here", [True, False], ids=["of its module", "of another module"])
def test_a_factory_failing_in_a_macro_names_its_line_then_the_macro_s(sm90, here: bool) -> None:
    """The prim_func's line that called the `T.macro`, then the macro's line that failed, whichever module holds it
    (a macro of the factory's module was named by its own line alone)."""
    from tests.kernels import helpers

    def line(module, marker):
        text = Path(module.__file__).read_text().splitlines()
        (found,) = [i for i, t in enumerate(text, 1) if t.rstrip().endswith(f"# FAILS HERE: {marker}")]
        return f"{module.__file__}:{found}"

    macro, module = ("copy_twice", ks) if here else ("copy_through", helpers)
    site = line(ks, f"calls_failing_macros {'here' if here else 'elsewhere'}")
    with pytest.raises(tl.KernelBuildError, match=re.escape(
            f"failed at {site} (in {macro} at {line(module, macro)}): TypeError: copy() got an unexpected keyword")):
        ks.calls_failing_macros(64, here)


def test_a_non_contiguous_tensor_is_refused_naming_it(sm90) -> None:
    x = torch.empty(96, 7, dtype=F32, device="meta").t()
    with pytest.raises(tl.ArgumentValueError, match=r"argument 'X' must be contiguous.*X\.contiguous\(\)"):
        ks.scale_rows(96).lower(x, meta(7, 96, dtype=F32), 1.0)


def test_a_kernel_is_built_from_the_values_its_factory_reads_now(sm90, monkeypatch) -> None:
    """A global read by the body: the next build reads its new value; one that sizes a tensor: the kernel object
    no longer matches the factory's kernel, and says so; the factory's next call makes a kernel object anew."""
    kernel = ks.copy_block(1000)
    assert "__launch_bounds__(128" in kernel.lower().cuda_source
    monkeypatch.setattr(ks, "BLOCK", 256)
    assert "__launch_bounds__(256" in kernel.lower().cuda_source
    widened = ks.widened(64)
    assert specs(widened) == {"X": "Tensor[float32, 128]"}
    monkeypatch.setattr(ks, "WIDTH", 3)
    with pytest.raises(tl.KernelBuildError, match=r"widened: the factory now returns a kernel with signature .*192"):
        widened.lower()
    assert specs(ks.widened(64)) == {"X": "Tensor[float32, 192]"}


WARM = textwrap.dedent("""
    import json, sys
    from tests.kernels import lazy_style as ks
    kernel = ks.matmul(256, 128, 64, 64, 64, 32)  # (a `T.dynamic` argument would import TileLang itself)
    tuned = ks.row_sum(256, 64)  # an argument left at its `tl.tune` default: recorded under its space
    print(json.dumps({"signature": str(kernel.signature), "tuned": str(tuned.signature),
                      "tilelang": "tilelang" in sys.modules}))
""")


def test_a_warm_process_gets_the_kernel_object_without_running_the_factory(tmp_path: Path) -> None:
    env = {**os.environ, "TLTYPED_CACHE_DIR": str(tmp_path), "TLTYPED_TARGET": "sm_90a",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    runs = [json.loads(subprocess.run([sys.executable, "-c", WARM], env=env, cwd=ROOT, check=True, capture_output=True,
                                      text=True).stdout.splitlines()[-1]) for _ in range(2)]
    assert runs[0] == {"signature": runs[1]["signature"], "tuned": runs[1]["tuned"], "tilelang": True}  # control
    assert runs[1]["tilelang"] is False
    assert "Tensor[float16, 256, 64]" in runs[1]["signature"]
    assert "Tensor[float32, 256, 64]" in runs[1]["tuned"]


def test_prim_func_annotations_are_read_wherever_tilelang_reads_them(sm90) -> None:
    """In the body (a bare parameter), as strings (postponed annotations), without a dtype (float32), and with a
    one-dim shape unbracketed."""
    from tests.kernels import lazy_postponed

    in_body = ks.annotated_in_body(8)
    assert specs(in_body) == {"X": "Tensor[float16, 8, 4]"}
    assert [str(o.tensor) for o in in_body.signature.outputs] == ["Tensor[float16, 8, 4]"]
    assert "__global__" in ks.annotated_in_body(8, T.float32).lower().cuda_source
    postponed = lazy_postponed.scale(16)
    assert specs(postponed) == {"X": "Tensor[float32, 16]"}
    postponed.lower()
    dtype_less = ks.without_dtype()
    assert specs(dtype_less) == {"X": "Tensor[float32, n]"}
    dtype_less.lower(meta(100, dtype=F32))
    with pytest.raises(tl.ArgumentTypeError, match="argument 'X' expects dtype float32, got float16"):
        dtype_less.lower(meta(100, dtype=F16))
    assert specs(ks.unbracketed(64)) == {"X": "Tensor[bfloat16, 64]"}
    made = ks.made_through_a_wrapper(64)  # the defining scope's M, not the wrapper's
    assert [int(d) for d in made.buffer_map[made.params[0]].shape] == [64]
    assert specs(ks.reads_a_name_bound_later(64)) == {"X": "Tensor[float32, 64]"}
    with pytest.raises(tl.Error, match=r"lazy_style.py:\d+: the annotation of parameter 'X' in the prim_func's body "
                                       r"names 'm', which the body cannot see"):
        ks.annotated_with_a_body_name()
    with pytest.raises(tl.Error, match=r"lazy_postponed.py:\d+: the annotation of parameter 'X' .* names 'dtype'"):
        lazy_postponed.scale_in_body(8)


def test_a_scalar_parameter_is_a_dyn_scalar(sm90) -> None:
    alpha = ks.scale_rows(96).signature.param("alpha")
    assert (alpha.kind, alpha.scalar) == (Kind.DYN, "float32")


@needs_nvcc
def test_the_compiled_kernel_answers_what_tilelang_s_does(sm90) -> None:
    """`get_kernel_source()`, `get_profiler()` (TileLang's Profiler, its inputs from the signature) and a call
    taking the runtime arguments only (checked before anything launches; the GPU suite runs it)."""
    kernel = ks.split_pad(100)
    compiled = kernel.compile()
    assert kernel.get_kernel_source() == compiled.cuda_source == compiled.get_kernel_source()
    assert "__global__" in compiled.cuda_source and [o.label for o in compiled.outputs] == ["output 'Lo'", "output 'Hi'"]
    profiler = kernel.get_profiler()
    assert [(list(p.shape), str(p.dtype)) for p in profiler.params] == [([200], "float32")]
    assert profiler.result_idx == []
    by_position, by_name = compiled(meta(200, dtype=F32)), compiled(X=meta(200, dtype=F32))  # meta: described only
    assert [(t.shape, t.dtype) for t in by_name] == [(t.shape, t.dtype) for t in by_position] == [
        ((100,), F32), ((101,), torch.float16)]
    with pytest.raises(tl.ArgumentTypeError, match=r"^split_pad: the compiled kernel takes \(X\): too many positional"):
        compiled(meta(200, dtype=F32), meta(200, dtype=F32))
    with pytest.raises(tl.ArgumentTypeError, match=r"^split_pad: the compiled kernel takes \(X\): missing a required argument: 'X'"):
        compiled(Y=meta(200, dtype=F32))


@needs_nvcc
def test_an_in_kernel_workspace_is_a_buffer_the_call_allocates(sm90) -> None:
    kernel = ks.with_workspace(1024)
    compiled = kernel.compile()
    assert [o.label for o in compiled.outputs] == ["output 'scratch'", "output 'Y'"]
    assert compiled.returns == (1,)  # the workspace is allocated for the launch, Y alone returned


def test_a_factory_argument_left_at_tl_tune_is_tuned_as_an_eager_kernel_s_const(sm90) -> None:
    kernel = ks.row_sum(256, 64)
    assert kernel is ks.row_sum(256, 64) and kernel is not ks.row_sum(256, 64, 32)  # a value given: no tuning
    assert specs(kernel) == {"X": "Tensor[float32, 256, 64]"}
    # inspection stands on the first candidate, as an eager kernel's does
    assert kernel.lower().cuda_source == ks.row_sum(256, 64, 32).lower().cuda_source
    assert kernel.lower().cuda_source != ks.row_sum(256, 64, 64).lower().cuda_source
    # a call on meta tensors elaborates every candidate and finds that they return alike
    out = kernel(meta(256, 64, dtype=F32))
    assert out.shape == (256,) and out.dtype == F32 and out.device.type == "meta"


def test_a_tuned_factory_argument_must_not_decide_the_kernel_s_signature(sm90) -> None:
    kernel = ks.first_rows(256, 64)
    assert [str(o.tensor) for o in kernel.signature.outputs] == ["Tensor[float32, 32, 64]"]  # the first candidate's
    with pytest.raises(tl.DefinitionError, match=r"first_rows: the factory returns a kernel with signature .*"
                       r"Tensor\[float32, 64, 64\].* for block=64, not .* as for the first candidate"):
        kernel(meta(256, 64, dtype=F32))
    assert ks.first_rows(256, 64, 64)(meta(256, 64, dtype=F32)).shape == (64, 64)  # given, it is a plain argument


def test_a_scalar_that_is_the_dim_variable_of_an_output_alone_sizes_it_at_each_call(sm90) -> None:
    """`n: n` for `n = T.dynamic("n")`, n on the output alone: the call's n is the output's length (one kernel for
    every n), on meta tensors as in a launch."""
    kernel = ks.first_n(256)
    assert kernel.signature.scalar_dims == ("n",) and dict(kernel.signature.dims) == {"n": True}
    assert [str(o.tensor) for o in kernel.signature.outputs] == ["Tensor[float32, n]"]
    assert kernel(meta(256, dtype=F32), 100).shape == (100,) and kernel(meta(256, dtype=F32), n=7).shape == (7,)
    with pytest.raises(tl.ArgumentValueError, match=r"^first_n: output 'Y' would have size -1 in dim 0"):
        kernel(meta(256, dtype=F32), -1)
    with pytest.raises(tl.ArgumentTypeError, match=r"dyn parameter 'n' expects an int, got float 7\.0"):
        kernel(meta(256, dtype=F32), 7.0)


@needs_nvcc
def test_a_compiled_kernel_sizes_an_output_by_the_scalar_that_is_its_dim(sm90) -> None:
    compiled = ks.first_n(256).compile()
    assert [(o.label, o.shape) for o in compiled.outputs] == [("output 'Y'", ("a1",))]  # the launch's argument n
    assert compiled(meta(256, dtype=F32), 33).shape == (33,) and compiled(X=meta(256, dtype=F32), n=34).shape == (34,)


def test_a_scalar_of_a_dim_variable_s_name_that_is_another_variable_is_refused_naming_both(sm90) -> None:
    """`n: T.int32` makes a variable of its own beside the `n` sizing Y (TileLang's host code cannot be made for
    such a kernel): refused when the factory is called, before any call or compile."""
    with pytest.raises(tl.DefinitionError, match=r"^first_n_of_its_own: scalar parameter 'n' is another variable "
                       r"than the dim 'n' in the shape of 'Y' .* annotate the parameter with the "
                       r'T\.dynamic\("n"\) variable'):
        ks.first_n_of_its_own(256)


def test_a_factory_whose_kernel_leaves_a_dim_undetermined_is_refused_naming_it() -> None:
    """A dyn dim only on the returned tensor, or only inside an expression: no input gives it (an eager kernel
    is refused alike), where the kernel object's call path had raised a KeyError."""
    from tests.kernels.lazy_style import undetermined_dim

    with pytest.raises(tl.DefinitionError, match=r'undetermined_dim: dim "n" is declared but no tensor has it as a plain dim'):
        tl.jit(out_idx=[1])(undetermined_dim)(T.dynamic("m"), T.dynamic("n"))


def test_a_factory_making_a_negative_size_is_refused_naming_the_tensor() -> None:
    from tests.kernels.lazy_style import undetermined_dim

    with pytest.raises(tl.DefinitionError, match=r"undetermined_dim: parameter 'X' has shape \[-1\]: a dim size must be non-negative"):
        tl.jit(out_idx=[1])(undetermined_dim)(-1, 4)


@pytest.mark.parametrize("style", ["eager", "lazy"])
def test_an_out_idx_of_another_type_is_refused_at_decoration(style: str) -> None:
    from tests.kernels.lazy_style import undetermined_dim
    from tests.kernels.torch_ops import head

    fn = head.__wrapped__ if style == "eager" else undetermined_dim
    with pytest.raises(tl.DefinitionError, match=r"out_idx must be an int or a list of ints, got float 1\.0"):
        tl.jit(out_idx=1.0)(fn)  # type: ignore[call-overload]


class _Settings:
    """A plain object: hashed and compared by identity, while its attributes may change."""

    def __init__(self, n: int) -> None:
        self.n = n


class _RaisingHash:
    def __hash__(self) -> int:
        raise ValueError("__hash__ raised")


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [(_Settings(64), tl.ArgumentTypeError, r"must be compared by value .*_Settings .*, compared by identity"),
     (torch.tensor(64), tl.ArgumentTypeError, r"must be a value, not a tensor .*`\.item\(\)`"),
     (_RaisingHash(), tl.ArgumentTypeError, r"must be hashable .*\(its __hash__ raised ValueError\)$"),
     (float("nan"), tl.ArgumentValueError, r"must compare equal to itself .*got float nan$")],
    ids=["compared by identity", "a tensor", "__hash__ raises", "nan"],
)
def test_a_factory_s_arguments_are_refused_as_a_const_is(sm90, value: object, error: type[Exception], message: str) -> None:
    """A kernel object is made once per set of values and served again for an equal set: an object compared by
    identity (or a tensor) was served the kernel its factory made before its attributes (contents) changed, and a
    raising `__hash__` raised its own ValueError out of the call."""
    with pytest.raises(error, match=r"^matmul: argument 'M' " + message):
        ks.matmul(value, 128, 64, 64, 64, 32)
    if not isinstance(value, _RaisingHash):  # (a tuning space refuses such a candidate itself: test_autotune.py)
        with pytest.raises(error, match=r"^row_sum: argument 'block' " + message):
            ks.row_sum(256, 64, tl.tune([32, value]))  # each candidate of a tuning space too
    assert ks.matmul(T.dynamic("m"), 128, 64, 64, 64, 32).signature.dims == {"m": True}  # TileLang's variables are values
