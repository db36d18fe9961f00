"""Outputs the launcher allocates (T.empty / T.alloc_global), run on the GPU and checked against torch."""

from __future__ import annotations

import pytest
import torch

from tests.gpu.conftest import poison_allocator
from tests.kernels.outputs import even_elements, head_plus_one, two_outputs


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
