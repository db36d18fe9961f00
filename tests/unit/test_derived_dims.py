"""Derived dims in the kernel: symbolic over dyn dims (one kernel for every N), folded over const dims."""

from __future__ import annotations

import re

import pytest
import torch

from examples.interleave import interleave, interleave_into
from tests.kernels import shapes


def meta(*shape: int) -> torch.Tensor:
    return torch.empty(*shape, dtype=torch.float32, device="meta")


def test_derived_dim_over_a_dyn_dim_stays_symbolic() -> None:
    small = interleave.lower(meta(10), meta(10), meta(21), 1.0)
    large = interleave.lower(meta(1000), meta(1000), meta(2001), 1.0)
    assert small.cuda_source == large.cuda_source
    assert "N * 2 + 1" in small.tir  # Out's extent, in terms of the one dyn variable


def test_signature_form_relation_over_dyn_dims_compiles_once() -> None:
    small = interleave_into.lower(meta(10), meta(10), meta(21), 1.0)
    large = interleave_into.lower(meta(33), meta(33), meta(67), 1.0)
    assert small.cuda_source == large.cuda_source


def test_derived_dim_over_a_const_dim_folds_and_specialises() -> None:
    five = shapes.derived.lower(meta(5), meta(11, 2))
    nine = shapes.derived.lower(meta(9), meta(19, 3))
    assert "(11, 2)" in five.tir and "(19, 3)" in nine.tir  # 2*N+1 and ceildiv(N, 4), folded
    assert five.tir != nine.tir


def test_shape_assert_over_a_dyn_dim_is_checked_by_the_call_not_built_into_the_kernel() -> None:
    lowered = shapes.asserted_then_allocates.lower(meta(16))
    assert not re.search(r"^\s*(assert|T\.Assert)\b", lowered.tir, re.MULTILINE)
    assert lowered.cuda_source == shapes.asserted_then_allocates.lower(meta(4096)).cuda_source
    with pytest.raises(ValueError, match=r"shape check `A.shape\[0\] // 4 \* 4 == A.shape\[0\]` fails: A.shape\[0\] // 4 \* 4 is 8, not 10 \(L = 10 from A, axis 0\): the length must be a multiple of 4$"):
        shapes.asserted_then_allocates.lower(meta(10))
