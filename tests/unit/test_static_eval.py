"""Point 4: Python code in a kernel body runs at elaboration, on const values.

A const may choose between kernel bodies, feed helper functions, and fold into
the TIR as a plain number; a dyn value stays symbolic. Everything here lowers on
meta tensors (no GPU, no nvcc).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tltyped as tl
from tests.conftest import ROOT, meta
from tests.kernels import elementwise, gemm_variants, in_body

pytestmark = pytest.mark.usefixtures("sm90")


def block_extents(tir: str) -> list[int]:
    """The blockIdx extents of a lowered kernel's TIR, in order."""
    return [int(n) for n in re.findall(r"T\.thread_binding\((\d+), thread=\"blockIdx\.[xyz]\"\)", tir)]


@pytest.fixture(scope="module")
def split_k_kernels() -> tuple[object, object]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TLTYPED_TARGET", "sm_90a")
        a, b = meta(256, 512), meta(512, 256)
        return gemm_variants.gemm_split_k.lower(a, b), gemm_variants.gemm_split_k.lower(a, b, True)


def test_bool_const_chooses_the_kernel_body(split_k_kernels) -> None:
    plain, split = split_k_kernels
    assert plain.tir != split.tir
    assert plain.cuda_source != split.cuda_source
    # the split body has two accumulators and two GEMM calls; the plain one has one of each
    assert plain.tir.count("T.gemm(") == 1
    assert split.tir.count("T.gemm(") == 2
    assert "C_high" in split.tir and "C_high" not in plain.tir


def test_const_branch_leaves_no_runtime_condition(split_k_kernels) -> None:
    """The `if split_k:` ran in Python: neither kernel tests it at run time, nor takes it as a parameter."""
    for lowered in split_k_kernels:
        body = lowered.tir.split("def gemm_split_k(", 1)[1].split("\n", 1)[1]
        assert "split_k" not in body
        params = [str(p.name) for p in lowered.prim_func.params]
        assert not any("split_k" in name for name in params)


def test_keyword_and_positional_const_give_the_same_kernel(split_k_kernels) -> None:
    _, split = split_k_kernels
    a, b = meta(256, 512), meta(512, 256)
    assert gemm_variants.gemm_split_k.lower(a, b, split_k=True).tir == split.tir


def test_bool_const_in_elementwise_kernel() -> None:
    a = meta(128, 64, dtype=torch.float32)
    add = elementwise.add_or_sub.lower(a, a).tir
    sub = elementwise.add_or_sub.lower(a, a, True).tir
    assert add != sub
    assert " + B[" in add and " - B[" not in add
    assert " - B[" in sub and " + B[" not in sub


@pytest.mark.parametrize("rows", [128, 1024])
def test_helper_function_runs_at_elaboration(rows: int) -> None:
    calls_before = list(elementwise.HELPER_CALLS)
    lowered = elementwise.add_or_sub.lower(meta(rows, 64, dtype=torch.float32), meta(rows, 64, dtype=torch.float32))
    new_calls = elementwise.HELPER_CALLS[len(calls_before):]
    assert new_calls and set(new_calls) == {rows}  # called with the const dim's value
    per_block = elementwise.rows_per_block(rows)
    elementwise.HELPER_CALLS.pop()
    assert block_extents(lowered.tir) == [-(-rows // per_block)]
    assert f"T.parallel({per_block})" in lowered.tir


def helper_argument_types(fn: object) -> set[type]:
    before = len(elementwise.HELPER_CALLS)
    a = meta(128, 64, dtype=torch.float32)
    fn.lower(a, a)  # type: ignore[attr-defined]
    types = {type(c) for c in elementwise.HELPER_CALLS[before:]}
    del elementwise.HELPER_CALLS[before:]
    return types


def test_in_body_const_dims_are_python_ints() -> None:
    assert helper_argument_types(elementwise.add_in_body) == {int}


def test_signature_form_const_dims_from_shape_are_python_ints() -> None:
    assert helper_argument_types(elementwise.add_or_sub) == {int}


def test_both_forms_build_the_same_kernel_body() -> None:
    a = meta(128, 64, dtype=torch.float32)
    sig, body = elementwise.add_or_sub.lower(a, a), elementwise.add_in_body.lower(a, a)
    del elementwise.HELPER_CALLS[-2:]
    assert sig.cuda_source.replace("add_or_sub", "K") == body.cuda_source.replace("add_in_body", "K")


def test_helper_result_depends_on_the_const_dim() -> None:
    small = elementwise.add_or_sub.lower(meta(128, 64, dtype=torch.float32), meta(128, 64, dtype=torch.float32))
    large = elementwise.add_or_sub.lower(meta(1024, 64, dtype=torch.float32), meta(1024, 64, dtype=torch.float32))
    assert elementwise.rows_per_block(128) != elementwise.rows_per_block(1024)
    del elementwise.HELPER_CALLS[-2:]
    assert small.tir != large.tir


def test_helper_does_not_run_at_decoration() -> None:
    before = len(elementwise.HELPER_CALLS)
    tl.jit(elementwise.add_or_sub.__wrapped__)
    assert len(elementwise.HELPER_CALLS) == before


def test_const_values_fold_into_the_tir(seed_gemm) -> None:
    a, b = meta(1024, 512), meta(512, 256)
    small = seed_gemm.gemm.lower(a, b, block_M=64, block_N=64)
    large = seed_gemm.gemm.lower(a, b, block_M=128, block_N=128)
    assert block_extents(small.tir) == [256 // 64, 1024 // 64]
    assert block_extents(large.tir) == [256 // 128, 1024 // 128]
    for lowered in (small, large):
        assert "block_M" not in lowered.tir and "block_N" not in lowered.tir


def test_tune_argument_lowers_its_first_candidate(seed_gemm) -> None:
    a, b = meta(1024, 512), meta(512, 256)
    tuned = seed_gemm.gemm.lower(a, b, tl.tune([64, 128]))
    fixed = seed_gemm.gemm.lower(a, b, 64)
    assert tuned.tir == fixed.tir


def test_dyn_dim_stays_symbolic_const_dims_fold(seed_gemm) -> None:
    tir = seed_gemm.gemm.lower(meta(1024, 512), meta(512, 256)).tir
    assert "K = T.int32()" in tir
    assert "(1024, K)" in tir and "(K, 256)" in tir
    assert "M = T.int32()" not in tir and "N = T.int32()" not in tir


def test_in_body_dynamic_dim_is_symbolic_and_shared() -> None:
    a = meta(128, 100, dtype=torch.float32)
    tir = in_body.scale_rows.lower(a, a, 2.0).tir
    assert tir.count("N = T.int32()") == 1
    assert "(128, N)" in tir  # M const, folded; N one shared variable for A and B
    assert "alpha: T.float32" in tir  # a dyn scalar is a kernel parameter


def test_dyn_scalar_value_is_not_specialised_on() -> None:
    a = meta(128, 100, dtype=torch.float32)
    assert in_body.scale_rows.lower(a, a, 2.0).tir == in_body.scale_rows.lower(a, a, -7.5).tir


def test_const_names_with_trailing_space() -> None:
    lowered = in_body.const_names_with_trailing_space.lower(meta(4, 8, dtype=torch.float32))
    assert "(4, 8)" in lowered.tir


PROBE_DTYPE_CONST = """
import sys, torch
from tests.kernels import in_body
assert "tilelang" not in sys.modules
a = torch.empty(64, dtype=torch.float16, device="meta")
lowered = in_body.converted.lower(a, torch.empty(64, dtype=torch.float64, device="meta"), "float64")
listed = in_body.converted_as_listed.lower(a, torch.empty(64, dtype=torch.float64, device="meta"), ("float64",))
print("__global__" in lowered.cuda_source, "__global__" in listed.cuda_source, "tilelang" in sys.modules)
"""


def test_a_dtype_const_builds_in_a_process_that_imports_tilelang_only_to_build_it(tmp_path: Path) -> None:
    """`out_dtype: T.dtype` (and `tuple[T.dtype, ...]`) under postponed annotations, decorated before anything
    imports TileLang: the annotation read again at the build (TileLang imported by then) is the same const, so the
    kernel builds."""
    env = {**os.environ, "TLTYPED_CACHE_DIR": str(tmp_path), "TLTYPED_TARGET": "sm_90a",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", PROBE_DTYPE_CONST], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["True", "True", "True"]
