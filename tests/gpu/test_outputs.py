"""Outputs the launcher allocates (T.empty / T.alloc_global), run on the GPU and checked against torch."""

from __future__ import annotations

import pytest
import torch

from tests.gpu.conftest import poison_allocator
from tests.kernels.outputs import even_elements, head_plus_one, two_outputs
from tltyped.callpath.torch_direct import torch_empty


@pytest.mark.parametrize("m", [0, 1, 200, 4095])
def test_output_sized_by_a_dyn_scalar(m: int) -> None:
    a = torch.randn(4096, dtype=torch.float32, device="cuda")
    poison_allocator(((m + 1,), torch.float32))
    b = head_plus_one(a, m)
    assert (b.shape, b.dtype, b.device) == ((m + 1,), torch.float32, a.device)
    assert torch.equal(b, a[: m + 1])


def test_two_outputs_in_return_order() -> None:
    a = torch.randn(256, 72, dtype=torch.float32, device="cuda")
    poison_allocator(((256, 72), torch.float16), ((256,), torch.float32))
    first, half = two_outputs(a)
    assert torch.equal(first, a[:, 0])
    assert torch.equal(half, a.half())


@pytest.mark.parametrize("k", [2, 101, 10_000])
def test_output_sized_by_a_floor_division(k: int) -> None:
    a = torch.randn(k, dtype=torch.float32, device="cuda")
    poison_allocator(((k // 2,), torch.float32))
    even = even_elements(a)
    assert torch.equal(even, a[0 : 2 * (k // 2) : 2])


def test_outputs_are_ordinary_tensors_on_the_current_stream() -> None:
    """The caching allocator hands an output's block to the current stream: work queued there sees it whole."""
    a = torch.randn(1 << 20, dtype=torch.float32, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        b = head_plus_one(a, (1 << 20) - 1)
        total = b.sum()  # queued on the same stream, after the kernel
    side.synchronize()
    assert torch.allclose(total, a.sum(), rtol=1e-4)
    b.add_(1)  # an ordinary, writable torch tensor
    del b
    torch.cuda.synchronize()


def test_outputs_follow_the_inputs_device_not_the_current_one() -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    a = torch.randn(512, dtype=torch.float32, device="cuda:1")
    with torch.cuda.device(0):
        b = head_plus_one(a, 99)
    assert b.device == a.device
    assert torch.equal(b, a[:100])


def test_outputs_of_calls_alternating_between_devices_follow_each_call_s_inputs() -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    for current in (0, 1):
        with torch.cuda.device(current):
            for d in (0, 1, 1, 0):
                a = torch.randn(512, dtype=torch.float32, device=f"cuda:{d}")
                b = head_plus_one(a, 99)
                assert b.device == a.device and torch.cuda.current_device() == current
                assert torch.equal(b, a[:100])


def test_an_output_too_big_for_the_device_is_torch_out_of_memory_naming_it() -> None:
    a = torch.randn(256, 8, dtype=torch.float32, device="cuda")
    kernel = two_outputs.compile(a)
    with pytest.raises(torch.OutOfMemoryError, match=r"two_outputs: allocating output 'Half' \(shape 256, d0\) failed"):
        kernel.empty_outputs(a.data_ptr(), 2**31 - 1, device=0)  # 256 x (2**31 - 1) halves: 1 TiB
    first, half = two_outputs(a)  # the device is fine afterwards
    assert torch.equal(half, a.half())


def test_the_dlpack_fallback_allocates_the_same_outputs() -> None:
    """Where tltyped's allocator helper cannot be built, launchers allocate through torch's DLPack exchange API."""
    a = torch.randn(256, 40, dtype=torch.float32, device="cuda")
    kernel = two_outputs.compile(a)
    kernel.module.set_allocator(None)
    try:
        poison_allocator(((256, 40), torch.float16), ((256,), torch.float32))
        first, half = two_outputs(a)
    finally:
        kernel.module.set_allocator(torch_empty())
    assert (half.dtype, half.device, first.device) == (torch.float16, a.device, a.device)
    assert torch.equal(first, a[:, 0]) and torch.equal(half, a.half())
