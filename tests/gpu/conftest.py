"""GPU tests: real kernels on a CUDA device, checked against torch references.

Every test draws fresh random inputs, poisons outputs with NaN before the
kernel runs (outputs the kernel allocates are poisoned through torch's caching
allocator: a NaN-filled block of the same size is freed just before the call,
so the kernel's output is likely handed that block) and compares in float64
by relative norm.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

pytestmark = pytest.mark.gpu


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "tests/gpu" in str(item.fspath):
            item.add_marker(pytest.mark.gpu)
            if not torch.cuda.is_available():
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_seed(request: pytest.FixtureRequest) -> Iterator[None]:
    torch.manual_seed(hash(request.node.nodeid) % 2**31)
    yield


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64; NaN anywhere fails."""
    out64, ref64 = out.detach().double(), ref.detach().double()
    if torch.isnan(out64).any():
        return float("inf")
    return float((out64 - ref64).norm() / ref64.norm())


def poison_allocator(*shapes_dtypes: tuple[tuple[int, ...], torch.dtype], device: str = "cuda") -> None:
    """Leave NaN-filled blocks of these sizes in torch's cache for the next allocations."""
    blocks = [torch.full(shape, float("nan"), dtype=dtype, device=device) for shape, dtype in shapes_dtypes]
    del blocks
