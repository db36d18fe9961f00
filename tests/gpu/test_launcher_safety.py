"""Launches the launcher refuses, on the GPU: never an illegal memory access, always a ValueError naming why.

A tensor the kernel writes must share memory with no other argument and not
with itself (an expanded tensor), and an output must fit the int32 range the
kernel indexes it in. Each refusal is checked on the first call (the slow
path, which builds the kernel) and on the second (the cached call, through
the launcher's raw entry), and the device is synchronised after it: nothing
was launched. Correct calls next to them still compute what torch does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from examples.gemm_in_body import gemm as gemm_in_body
from tests.gpu.conftest import rel_err
from tests.kernels.launcher_safety import accumulate, add_into, copy_tiles, double_into, scale_in_place, widen

N = 4096


def nan(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def refused(call: Callable[[], Any], message: str) -> None:
    """`call` raises a ValueError matching `message`, on its first call and on its cached one, and launches nothing."""
    for _ in range(2):
        with pytest.raises(ValueError, match=message):
            call()
    torch.cuda.synchronize()


def test_add_into_computes_what_torch_does_and_is_served_by_the_cached_call() -> None:
    a, b, c = torch.randn(N, device="cuda"), torch.randn(N, device="cuda"), nan(N)
    add_into(a, b, c)
    hits = add_into.cache_info().hits
    c.fill_(float("nan"))
    add_into(a, b, c)
    assert add_into.cache_info().hits == hits + 1
    assert rel_err(c, a.double() + b.double()) < 1e-6


def test_an_expanded_out_parameter_is_refused() -> None:
    a, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    c = torch.zeros(1, device="cuda").expand(N)
    refused(lambda: add_into(a, b, c), r"add_into: argument 'C' is written by the kernel, but its dim 0 \(size 4096\) has stride 0")
    assert c[0].item() == 0.0


def test_an_out_parameter_overlapping_an_input_is_refused() -> None:
    x = torch.randn(2 * N, device="cuda")
    before = x.clone()
    a, b, c = x[:N], torch.randn(N, device="cuda"), x[N // 2 : N // 2 + N]
    refused(lambda: add_into(a, b, c), r"add_into: argument 'C', which the kernel writes, overlaps argument 'A' in memory")
    assert torch.equal(x, before)


def test_the_same_tensor_as_input_and_out_parameter_is_refused() -> None:
    a, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    before = a.clone()
    refused(lambda: add_into(a, b, a), r"add_into: argument 'C', which the kernel writes, is the same memory as argument 'A'")
    assert torch.equal(a, before)


def test_one_tensor_read_twice_is_fine() -> None:
    a, c = torch.randn(N, device="cuda"), nan(N)
    add_into(a, a, c)
    assert rel_err(c, 2 * a.double()) < 1e-6


def test_a_kernel_updating_a_tensor_in_place_takes_it_once() -> None:
    x = torch.randn(N, device="cuda")
    expected = 3 * x.double()
    scale_in_place(x, 3.0)
    assert rel_err(x, expected) < 1e-6


def test_a_strided_out_parameter() -> None:
    x, y = torch.randn(N, device="cuda"), nan(N, 2)
    double_into(x, y[:, 0])
    assert rel_err(y[:, 0], 2 * x.double()) < 1e-6
    assert torch.isnan(y[:, 1]).all()  # the other column untouched
    expanded = torch.zeros(1, device="cuda").expand(N)
    refused(lambda: double_into(x, expanded), r"double_into: argument 'Y' is written by the kernel, but its dim 0 \(size 4096\) has stride 0")


def test_atomic_adds_into_an_out_parameter() -> None:
    a, total = torch.rand(N, device="cuda"), torch.zeros(1, device="cuda")  # positive: a sum far from 0
    accumulate(a, total)
    assert rel_err(total, a.double().sum().reshape(1)) < 1e-5
    refused(lambda: accumulate(a, a[4:5]), r"accumulate: argument 'Total', which the kernel writes, overlaps argument 'A' in memory")


def test_a_tma_store_into_an_out_parameter() -> None:
    a, b = torch.randn(256, 128, dtype=torch.float16, device="cuda"), nan(256, 128, dtype=torch.float16)
    copy_tiles(a, b)
    assert torch.equal(b, a)
    refused(lambda: copy_tiles(a, a), r"copy_tiles: argument 'B', which the kernel writes, is the same memory as argument 'A'")


def test_a_gemm_writing_its_c_argument() -> None:
    a, b = torch.randn(256, 256, dtype=torch.float16, device="cuda"), torch.randn(256, 256, dtype=torch.float16, device="cuda")
    c = nan(256, 256)
    gemm_in_body(a, b, c)
    assert rel_err(c, a.double() @ b.double()) < 1e-3
    refused(lambda: gemm_in_body(a, b, a, out_dtype=torch.float16), r"gemm: argument 'C', which the kernel writes, is the same memory as argument 'A'")


def test_an_output_past_the_int32_range_the_kernel_indexes_in_is_refused() -> None:
    a = torch.zeros(2**30 + 1, dtype=torch.int8, device="cuda")
    refused(
        lambda: widen(a),
        r"widen: output 'B' would have 4294967300 elements in dim 0 \(N \* 4, with N = 1073741825\), "
        r"past the int32 range the kernel computes its indices in",
    )
    del a
    small = torch.randint(-128, 128, (1000,), dtype=torch.int8, device="cuda")
    assert torch.equal(widen(small), small.repeat_interleave(4))
