"""The TileLang internals tltyped relies on: these fail loudly when an upgrade changes them.

tltyped pins tilelang exactly and uses parts of it that are not public API:
- tilelang.language.eager.ast.mutate and tilelang.language.eager.builder.Builder
  (frames, eager_jit, eager_jit_subs, bind, get_parent_locals, prim_func, get,
  current_file/current_line, empty) and _patch_prim_func_attrs (frontend/elaborate.py);
- tilelang.jit.adapter.wrapper.TLCUDASourceWrapper (_TYPE_MAP, lib_code,
  get_dynamic_symbolic_set, _lookup_type) and tilelang.lower's artifact
  (kernel_source, host_mod, device_mod) (backend/lower.py, backend/launcher.py);
- tilelang.jit.adapter.utils.pythonic_expr (backend/launcher.py);
- the lowered device code's operations and the host function's
  `tma_descriptor_args`, from which LoweredKernel.written_params reads what a
  kernel writes (backend/lower.py; its kernels are in tests/unit/test_launcher.py);
- tilelang.language's Tensor/StridedTensor proxies, dtype objects, OutTensor
  (frontend, language.py), and the nvcc/include paths (backend/build.py).
Each test exercises the piece the way tltyped does, on a plain TileLang body
from tests/kernels/contract.py.
"""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path
from typing import Any

import pytest
import tilelang
import tilelang.language as T
import torch
from tilelang import tvm
from tilelang.language.eager import ast as tl_ast
from tilelang.language.eager import builder as tl_builder

from tests.kernels import contract
from tltyped.types import ALL_DTYPES, DType

ROOT = Path(__file__).resolve().parents[2]
TARGET = {"kind": "cuda", "arch": "sm_90a"}


def marker_line(marker: str) -> int:
    (line,) = [i for i, t in enumerate(Path(contract.__file__).read_text().splitlines(), 1) if marker in t]
    return line


def parameters(fn: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]


def test_installed_tilelang_is_the_pinned_one() -> None:
    pin = re.search(r'"tilelang==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pin is not None, "pyproject.toml no longer pins tilelang exactly"
    assert tilelang.__version__ == pin.group(1)


# -- mutate + Builder: elaboration ---------------------------------------------------------


def build(fn: Any, subs: dict[str, Any], **kwargs: Any) -> tuple[Any, Any]:
    """TileLang's eager route, as tltyped takes it: (PrimFunc with attrs, builder)."""
    generator = tl_ast.mutate(fn)
    builder = tl_builder.Builder()
    builder.eager_jit = "phase2"
    builder.eager_jit_subs = subs
    with builder.prim_func(fn.__name__):
        generator.gen(builder)(**kwargs)
    return tl_builder._patch_prim_func_attrs(builder.get(), builder), builder


def test_mutate_signature_and_result() -> None:
    assert parameters(tl_ast.mutate) == [("func", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    generator = tl_ast.mutate(contract.scale)
    assert callable(generator.gen)
    assert callable(generator.gen(tl_builder.Builder()))


def test_builder_state_tltyped_reads_and_sets() -> None:
    builder = tl_builder.Builder()
    assert builder.frames == []
    assert builder.eager_jit == "none"
    assert builder.eager_jit_subs == {}
    assert isinstance(builder.current_file, str)
    assert builder.current_line == 0
    assert builder.empty is tl_ast.BaseBuilder.empty
    assert callable(builder.get_parent_locals) and callable(builder.get)


def test_builder_bind_signature() -> None:
    assert parameters(tl_builder.Builder.bind) == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), ("name", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("value", inspect.Parameter.POSITIONAL_OR_KEYWORD), ("annot", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("loop_target", inspect.Parameter.KEYWORD_ONLY),
    ]
    assert inspect.signature(tl_builder.Builder.bind).parameters["annot"].default is tl_ast.BaseBuilder.empty
    # tltyped overrides get_parent_locals because bind reads the body's locals through it
    assert "self.get_parent_locals()" in inspect.getsource(tl_builder.Builder.bind)


def test_prim_func_frame_is_innermost_in_the_function_body() -> None:
    builder = tl_builder.Builder()
    with builder.prim_func("probe"):
        assert isinstance(builder.frames[-1], tl_builder.tirx.frame.PrimFuncFrame)
        assert tl_builder.Builder.current() is builder


def test_patch_prim_func_attrs_signature() -> None:
    assert [name for name, _ in parameters(tl_builder._patch_prim_func_attrs)] == ["pf", "builder"]


def test_eager_route_builds_a_prim_func_with_outputs() -> None:
    pf, builder = build(contract.scale, {"M": 256}, A=T.Tensor([256], "float32"), factor=3)
    assert [int(i) for i in pf.attrs["tilelang_out_idx"]] == [-1]
    names = [pf.buffer_map[p].name for p in pf.params]
    assert names == ["A", "out"]
    assert [int(s) for s in pf.buffer_map[pf.params[1]].shape] == [256]  # T.const("M") took eager_jit_subs["M"]
    assert builder.current_file == contract.__file__
    assert builder.current_line == marker_line("# LAST LINE: scale")


def test_dyn_dim_through_eager_jit_subs() -> None:
    n = tvm.tirx.Var("M", "int32")
    pf, _ = build(contract.scale, {"M": n}, A=T.Tensor([n], "float32"), factor=2)
    assert isinstance(pf.buffer_map[pf.params[0]].shape[0], tvm.tirx.Var)


def test_strided_tensor_proxy() -> None:
    buffer = T.StridedTensor([4, 8], [1, 4], "float16")
    assert [int(s) for s in buffer.strides] == [1, 4]
    assert str(buffer.dtype) == "float16"
    from tilelang.language.proxy import TensorProxy

    assert isinstance(T.Tensor, TensorProxy)


def test_failure_position_is_the_users_line() -> None:
    builder = tl_builder.Builder()
    builder.eager_jit = "phase2"
    generator = tl_ast.mutate(contract.fails)
    with pytest.raises(TypeError, match="no_such_argument"):
        with builder.prim_func("fails"):
            generator.gen(builder)(A=T.Tensor([128], "float32"))
    assert (builder.current_file, builder.current_line) == (contract.__file__, marker_line("# FAILS HERE: fails"))


def test_returning_a_non_empty_buffer_message() -> None:
    """elaborate._describe recognises this message to explain the rule."""
    source = inspect.getsource(tl_builder.Builder.ret)
    assert "Only tensor allocated from `T.empty` can be returned" in source


def test_out_tensor_constructor() -> None:
    assert [name for name, _ in parameters(tl_builder.OutTensor)] == ["shape", "dtype"]


def test_dtype_objects() -> None:
    assert issubclass(T.dtype, str)  # why typing turns them into forward references (see test_types)
    assert isinstance(T.float16, T.dtype)
    assert T.dtype("float8_e4m3fn").as_torch() == torch.float8_e4m3fn
    assert T.dtype("bfloat16").as_torch() == torch.bfloat16


# -- lowering and the host wrapper ---------------------------------------------------------


@pytest.fixture(scope="module")
def lowered() -> tuple[Any, Any]:
    n = tvm.tirx.Var("M", "int32")
    pf, _ = build(contract.scale, {"M": n}, A=T.Tensor([n], "float32"), factor=2)
    with tvm.target.Target(TARGET):
        artifact = tilelang.lower(pf, target=TARGET)
    return pf, artifact


def test_lower_artifact(lowered) -> None:
    assert "target" in inspect.signature(tilelang.lower).parameters
    _, artifact = lowered
    assert isinstance(artifact.kernel_source, str) and "__global__" in artifact.kernel_source
    assert isinstance(artifact.host_mod, tvm.IRModule)
    assert isinstance(artifact.device_mod, tvm.IRModule)


def host_wrapper(pf: Any, artifact: Any) -> Any:
    from tilelang.jit.adapter.wrapper import TLCUDASourceWrapper

    with tvm.target.Target(TARGET):
        return TLCUDASourceWrapper(
            tvm.IRModule({pf.attrs["global_symbol"]: pf}), artifact.kernel_source, tvm.target.Target(TARGET),
            device_mod=artifact.device_mod, host_mod=artifact.host_mod, pass_configs={},
        )


def test_cuda_source_wrapper(lowered) -> None:
    from tilelang.jit.adapter.wrapper import TLCUDASourceWrapper

    assert [name for name, _ in parameters(TLCUDASourceWrapper.__init__)][:7] == [
        "self", "scheduled_ir_module", "source", "target", "device_mod", "host_mod", "pass_configs",
    ]
    assert isinstance(TLCUDASourceWrapper._TYPE_MAP, dict)
    pf, artifact = lowered
    wrapper = host_wrapper(pf, artifact)
    code = wrapper.lib_code
    # the C entry points tltyped's launcher template calls
    assert re.search(r"\bint init\(\)", code)
    assert re.search(r"\bint call\(", code)
    assert "get_last_error" in code
    assert wrapper.get_dynamic_symbolic_set(pf) == [("M", "int32")]
    assert wrapper._lookup_type("float32") == "float"


def test_host_code_checks_every_runtime_call_it_makes() -> None:
    """The launcher reports a launch's failures without asking the runtime for its last error: the host
    code's runtime calls are the launch and function attributes (both redirected to the driver, which
    reports failures itself), error strings, and calls TILELANG_CHECK wraps. TileLang's templates also
    hold an L2 persistence window whose calls go unchecked; this TileLang never emits it, even for a
    kernel annotated `T.annotate_l2_hit_ratio`."""
    n = tvm.tirx.Var("M", "int32")
    pf, _ = build(contract.l2_persisting, {"M": n}, A=T.Tensor([n], "float32"), B=T.Tensor([n], "float32"))
    with tvm.target.Target(TARGET):
        artifact = tilelang.lower(pf, target=TARGET)
    code = host_wrapper(pf, artifact).lib_code
    redirected = {"cudaLaunchKernelEx", "cudaFuncSetAttribute", "cudaGetErrorString"}
    checked = {m.group(1) for m in re.finditer(r"TILELANG_CHECK\((cuda\w+)\(", code)}
    calls = set(re.findall(r"\b(cuda[A-Z]\w*)\(", code))
    assert "cudaLaunchKernelEx" in calls
    assert calls <= redirected | checked, calls - redirected - checked


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_the_dtype_table_names_the_c_types_tilelang_generates(dtype: type[DType]) -> None:
    """launcher.describe_abi casts buffer pointers and converts scalars with the table's `c_name`;
    TileLang's host code declares them with its own type map: the two must agree."""
    from tilelang.jit.adapter.wrapper import TLCUDASourceWrapper

    assert TLCUDASourceWrapper._TYPE_MAP[dtype.name] == dtype.c_name


def test_pythonic_expr() -> None:
    from tilelang.jit.adapter.utils import pythonic_expr

    params = inspect.signature(pythonic_expr).parameters
    assert list(params)[:1] == ["expr"] and "floor_div_op" in params and "ignore_cast" in params
    k = tvm.tirx.Var("K", "int32")
    assert pythonic_expr(k * 2 + 1) == "K * 2 + 1"
    assert pythonic_expr(tvm.tirx.floordiv(k, 2), floor_div_op="//") == "K // 2"
    assert pythonic_expr(tvm.tirx.Cast("int64", k) * 2, ignore_cast=True) == "K * 2"


def test_the_operations_written_params_tells_apart() -> None:
    from tltyped.backend import lower

    for name in (lower._ACCESS_PTR, lower._ADDRESS_OF, *lower._READS_THROUGH_DESCRIPTOR):
        assert tvm.ir.Op.get(name).name == name


def test_substitute() -> None:
    from tvm.tirx.stmt_functor import substitute

    k, d = tvm.tirx.Var("K", "int32"), tvm.tirx.Var("_tl_d0", "int32")
    assert str(substitute(k + 1, {k: d})) == "_tl_d0 + 1"


def test_build_paths() -> None:
    from tilelang.contrib.nvcc import get_nvcc_compiler
    from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH

    assert callable(get_nvcc_compiler)
    assert os.path.isdir(TILELANG_TEMPLATE_PATH)
    assert os.path.isdir(CUTLASS_INCLUDE_DIR)


def test_the_pass_configs_tilelang_takes_from_the_environment_are_the_ones_tltyped_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every environment variable TileLang declares set at once: the pass configs its normalisation then adds are
    exactly tltyped's table (options.py), with the values tltyped reads, so a kernel's key holds each of them."""
    from tilelang.env import EnvVar, Environment
    from tilelang.transform.pass_config import normalize_pass_configs

    from tltyped.backend.options import ENVIRONMENT_PASS_CONFIGS, environment_pass_configs

    variables = [v.key for v in vars(Environment).values() if isinstance(v, EnvVar)]
    assert set(ENVIRONMENT_PASS_CONFIGS.values()) <= set(variables)
    for variable in variables:
        monkeypatch.setenv(variable, f" {variable.lower()} ")
    from_tilelang = normalize_pass_configs({})
    assert from_tilelang == environment_pass_configs()
    assert set(from_tilelang) == set(ENVIRONMENT_PASS_CONFIGS)
    explicit = {key: "explicit" for key in ENVIRONMENT_PASS_CONFIGS}
    assert normalize_pass_configs(explicit) == explicit  # an explicit value wins, as in lower()


def test_a_value_forced_through_tilelang_env_counts_before_the_variable_in_tilelang_and_in_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`tilelang.env.env.X = value` overrides the variable X for TileLang's normalisation: tltyped applies and keys
    the forced value, so a kernel built under it is another kernel than one built under the variable's."""
    from tilelang.env import EnvVar, Environment, env
    from tilelang.transform.pass_config import normalize_pass_configs

    from tltyped.backend.options import ENVIRONMENT_PASS_CONFIGS, BuildOptions, environment_pass_configs

    declared = {v.key: (name, v) for name, v in vars(Environment).items() if isinstance(v, EnvVar)}
    for variable in ENVIRONMENT_PASS_CONFIGS.values():
        monkeypatch.setenv(variable, "from-the-environment")
    unforced = BuildOptions().describe()
    try:
        for variable in ENVIRONMENT_PASS_CONFIGS.values():
            setattr(env, declared[variable][0], " forced ")
        assert normalize_pass_configs({}) == environment_pass_configs() == dict.fromkeys(ENVIRONMENT_PASS_CONFIGS, "forced")
        assert BuildOptions().describe() != unforced
    finally:
        for variable in ENVIRONMENT_PASS_CONFIGS.values():
            declared[variable][1]._forced_value = None
    assert BuildOptions().describe() == unforced


@pytest.mark.parametrize("forced", ["", "  ", 0, False], ids=repr)
def test_a_falsy_value_forced_through_tilelang_env_still_overrides_the_variable(
    monkeypatch: pytest.MonkeyPatch, forced: object,
) -> None:
    """TileLang takes a forced value whenever one is set (`_forced_value is not None`), falsy or not: an empty one
    hides the variable (no pass config), and `0` or `False` is read as its text. tltyped applies and keys the same."""
    from tilelang.env import EnvVar, Environment, env
    from tilelang.transform.pass_config import normalize_pass_configs

    from tltyped.backend.options import ENVIRONMENT_PASS_CONFIGS, environment_pass_configs

    declared = {v.key: (name, v) for name, v in vars(Environment).items() if isinstance(v, EnvVar)}
    for variable in ENVIRONMENT_PASS_CONFIGS.values():
        monkeypatch.setenv(variable, "from-the-environment")
    try:
        for variable in ENVIRONMENT_PASS_CONFIGS.values():
            setattr(env, declared[variable][0], forced)
        assert environment_pass_configs() == normalize_pass_configs({})
    finally:
        for variable in ENVIRONMENT_PASS_CONFIGS.values():
            declared[variable][1]._forced_value = None
