"""Spellings of TileLang's own examples that tltyped reads, lowers and checks (CPU; sm_90a).

No `from __future__ import annotations` here or in tests/kernels/upstream_spellings.py,
as in TileLang's examples: annotations are objects.
"""

import re
from pathlib import Path
from typing import Any

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.conftest import meta
from tests.kernels import upstream_spellings as ks
from tltyped.types.dtypes import as_dtype, is_dtype_like

KERNELS = Path(ks.__file__)
F32 = torch.float32


def line_of(marker: str) -> int:
    return next(i for i, text in enumerate(KERNELS.read_text().splitlines(), 1) if marker in text)


def resolved(fn: Any, **consts: Any) -> Any:
    """The signature a Router resolved for these const values."""
    return fn._dispatcher.child(consts).signature


# -- 1. `T.Tensor[shape, dtype]` with a computed shape ----------------------------------------

GEMM = dict(block_M=64, block_N=64, block_K=32, in_dtype=T.float16, out_dtype=T.float32, accum_dtype=T.float32,
            num_stages=2, threads=128)


def test_a_computed_shape_in_the_subscription_form_is_resolved_per_value() -> None:
    fn = ks.matmul_dynamic_mnk
    assert set(fn.signature.depends_on) >= {"trans_A", "trans_B"} and fn.signature.param("A").is_deferred
    plain = resolved(fn, trans_A=False, trans_B=False, in_dtype=T.float16)
    transposed = resolved(fn, trans_A=True, trans_B=True, in_dtype=T.float16)
    assert str(plain.param("A").tensor) == "Tensor[in_dtype, m, k]" and str(plain.param("B").tensor) == "Tensor[in_dtype, k, n]"
    assert str(transposed.param("A").tensor) == "Tensor[in_dtype, k, m]" and str(transposed.param("B").tensor) == "Tensor[in_dtype, n, k]"
    lowered = fn.lower(meta(256, 128), meta(128, 64), trans_A=False, trans_B=False, **GEMM)
    fn.lower(meta(128, 256), meta(64, 128), trans_A=True, trans_B=True, **GEMM)
    assert "wgmma" in lowered.cuda_source


def test_a_computed_shape_is_checked_naming_the_parameter() -> None:
    fn = ks.matmul_dynamic_mnk
    with pytest.raises(ValueError, match=r"dim k: 128 \(from A, axis 1\) vs 64 \(from B, axis 0\)"):
        fn.lower(meta(256, 128), meta(64, 128), trans_A=False, trans_B=False, **GEMM)
    with pytest.raises(TypeError, match="argument 'A' expects dtype float16, got float32"):
        fn.lower(meta(256, 128, dtype=F32), meta(128, 64), trans_A=False, trans_B=False, **GEMM)


def test_a_const_read_before_the_body_rebinds_it_keeps_its_parameter_value() -> None:
    signature = resolved(ks.grouped_rows, H=8, kv_group=2)
    assert str(signature.param("X").tensor) == "Tensor[float32, S, 8]"
    prim_func = ks.grouped_rows.lower(meta(5, 8, dtype=F32), 8, 2).prim_func
    (output,) = [prim_func.buffer_map[v] for v in prim_func.params[1:] if v in prim_func.buffer_map]
    assert int(output.shape[1]) == 4  # H rebound to H // kv_group after X's shape was computed


def test_a_two_element_subscription_is_read_in_the_order_its_values_say() -> None:
    fn = ks.both_orders
    assert {p.name: str(p.tensor) for p in fn.signature.tensors} == {"A": "Tensor[float32, N]", "B": "Tensor[float32, N, 2]"}
    fn.lower(meta(8, dtype=F32), meta(8, 2, dtype=F32))


# -- 2. several declarations in one assignment ----------------------------------------------


def test_a_tuple_of_declarations_declares_each_dim() -> None:
    fn = ks.tuple_of_declarations
    assert dict(fn.signature.dims) == {"R": True, "C": True, "K": False, "l": True}
    small = fn.lower(meta(100, 8, dtype=F32), meta(4, 9, 8, dtype=F32))
    large = fn.lower(meta(300, 16, dtype=F32), meta(4, 20, 16, dtype=F32))
    assert small.cuda_source == large.cuda_source  # R, C and l are dyn: one kernel
    assert "4" in small.tir and small.tir != fn.lower(meta(100, 8, dtype=F32), meta(5, 9, 8, dtype=F32)).tir  # K is const
    with pytest.raises(ValueError, match=r"dim C: 8 \(from A, axis 1\) vs 9 \(from B, axis 2\)"):
        fn.lower(meta(100, 8, dtype=F32), meta(4, 9, 9, dtype=F32))


def test_a_declaration_of_two_dims_for_one_name_is_refused_at_its_line() -> None:
    with pytest.raises(tl.DefinitionError) as info:
        tl.jit(ks.miscounted_declarations)
    message = str(info.value)
    assert f"{KERNELS}:{line_of('# <- two dims for one name')}:" in message
    assert 'T.dynamic("R, C") declares R, C but assigns to R' in message


# -- 3. tltyped's dtype classes in TileLang's functions -------------------------------------


def test_dtype_classes_build_the_same_kernel_as_tilelang_dtypes() -> None:
    fn = ks.dtype_functions
    ours = fn.lower(meta(64), meta(64, 4, dtype=F32), "tltyped")
    theirs = fn.lower(meta(64), meta(64, 4, dtype=F32), "TileLang")
    assert ours.tir == theirs.tir
    assert 'T.infinity("float32")' in ours.tir and "T.float32(65504.0)" in ours.tir  # float16's largest value
    assert f"T.float32({-torch.finfo(F32).max:.1f})" in ours.tir


# -- 4. every TileLang dtype is a dtype ------------------------------------------------------


def tilelang_dtypes() -> dict[str, Any]:
    import tilelang.language as language

    found = {name: getattr(language, name) for name in dir(language)}
    return {name: d for name, d in found.items() if isinstance(d, language.dtype) and d.lanes == 1}


def test_every_tilelang_dtype_is_a_dtype_of_its_width() -> None:
    dtypes = tilelang_dtypes()
    assert "tfloat32" in dtypes and len(dtypes) > 30
    for name, d in dtypes.items():
        assert is_dtype_like(d), name
        row = as_dtype(d)
        assert row.bits == d.bits, name
        if row.name == str(d):  # the row is this dtype, not another spelling of its storage
            assert row.dlpack_code == int(d.type_code), name


def test_tfloat32_is_a_const_dtype() -> None:
    fn = ks.rounded_through
    plain = fn.lower(meta(64, dtype=F32), meta(64, dtype=F32))
    rounded = fn.lower(meta(64, dtype=F32), meta(64, dtype=F32), via=T.tfloat32)
    assert "tfloat32" not in plain.cuda_source and "tfloat32_t" in rounded.cuda_source


def test_a_tfloat32_argument_is_float32_in_memory() -> None:
    """Upstream declares tensors `T.Tensor(shape, T.tfloat32)` and passes float32 tensors (deepseek_mhc)."""
    assert str(tl.jit(ks.tfloat32_tensor).signature.param("A").tensor) == "Tensor[float32, N]"
    assert tl.jit(ks.tfloat32_scalar).signature.param("scale").scalar == "float32"
    assert str(T.empty((4,), T.tfloat32).dtype) == "float32"


@pytest.mark.parametrize(("kernel", "parameter"), [("fnuz_tensor", "A"), ("fnuz_scalar", "scale")])
def test_no_argument_holds_a_compute_type(kernel: str, parameter: str) -> None:
    """(The sub-byte int4 and float4_e2m1fn are argument types, held packed: tests/unit/test_subbyte_args.py.)"""
    with pytest.raises(tl.DefinitionError, match=f"parameter '{parameter}': float8_e4m3fnuz is a type of the kernel's "
                       "computation"):
        tl.jit(getattr(ks, kernel))


def test_no_output_holds_a_compute_type() -> None:
    with pytest.raises(TypeError, match="float8_e4m3fnuz is a type of the kernel's computation"):
        T.empty((4,), T.float8_e4m3fnuz)


# -- 5. shape asserts reach the kernel as T.assume -------------------------------------------


def global_access(source: str, vector: str) -> set[str]:
    """The tensors (X, Y) that the CUDA reads or writes `vector` at a time."""
    return set(re.findall(rf"\*\({vector}\*\)\(([XY]) \+", source))


@pytest.mark.parametrize("kernel", ["exp_rows_aligned", "exp_rows_mod_8"])
def test_an_assert_over_dyn_dims_lets_the_kernel_vectorise(kernel: str) -> None:
    fn = getattr(ks, kernel)
    x = meta(8192, 4096)
    plain, aligned = ks.exp_rows.lower(x), fn.lower(x)
    assert "T.assume" not in plain.tir and "T.assume(n % 8 == 0)" in aligned.tir
    assert global_access(plain.cuda_source, "uint4") == set()
    assert global_access(aligned.cuda_source, "uint4") == {"X", "Y"}  # 8 fp16 at a time
    assert aligned.cuda_source == fn.lower(meta(3, 4104)).cuda_source  # still one kernel for every width


@pytest.mark.parametrize(
    ("kernel", "relation"), [("exp_rows_aligned", "X.shape[1] // 8 * 8 == X.shape[1]"), ("exp_rows_mod_8", "X.shape[1] % 8 == 0")]
)
def test_the_assumed_relation_is_still_checked_at_every_call(kernel: str, relation: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"shape check `{relation}` fails")):
        getattr(ks, kernel).lower(meta(16, 4100))


def test_a_relation_over_const_dims_adds_nothing_to_the_kernel() -> None:
    lowered = ks.exp_rows_const_width.lower(meta(64, 4096), meta(64, 4096))
    assert "T.assume" not in lowered.tir
