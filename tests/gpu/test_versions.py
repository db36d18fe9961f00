"""A kernel that writes a tensor is an in-place op on it: each launch bumps the tensor's version, as torch's in-place
ops do, so that autograd refuses a backward that would read a tensor it saved before the kernel wrote it."""

from __future__ import annotations

import pytest
import torch

import tltyped as tl
from tests.gpu.conftest import rel_err
from tests.gpu.kernels import axpy, axpy_asserted
from tltyped.callpath import tensors


N = 5000


def fresh() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(N, device="cuda"), torch.randn(N, device="cuda")


@pytest.mark.parametrize("path", ["C cached call", "forwarded to the C cached call", "generated fast path"])
def test_each_call_bumps_the_version_of_the_tensor_written_only(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A jit function's call is the C cached call when the C helper is built as it is defined, else the generated
    # function, which hands each call to a C cached call once the helper is built (a machine's first process):
    # axpy is defined here again, after the helper is built, or as if before. axpy_asserted's checks keep it in
    # Python.
    tensors.load_helpers()
    if path == "forwarded to the C cached call":
        monkeypatch.setattr(tensors, "native", lambda: None)
    kernel = tl.jit(axpy.__wrapped__) if path != "generated fast path" else axpy_asserted
    monkeypatch.undo()
    assert (type(kernel).__name__ == "CachedCall") == (path == "C cached call")
    c_call = kernel._dispatcher.fast_path.c_call
    x, y = fresh()
    expected = y.double()
    for call in range(4):  # the first call misses (the slow path), the others hit
        before = (x._version, y._version)
        kernel(x, y)
        expected += 2.0 * x.double()
        assert (x._version, y._version) == (before[0], before[1] + 1), f"call {call}"
    assert rel_err(y, expected) < 1e-5
    assert (c_call() is None) == (path == "generated fast path")
    if c_call() is not None:
        assert c_call().hits == 3  # the calls after the first, served in C


def test_a_compiled_kernel_object_bumps_the_version_too() -> None:
    x, y = fresh()
    compiled = axpy.compile(x, y)
    before = y._version
    compiled(x, y)
    assert y._version == before + 1


def test_a_backward_that_would_read_a_saved_tensor_the_kernel_wrote_since_is_refused() -> None:
    x = torch.randn(N, device="cuda", requires_grad=True)
    w = torch.randn(N, device="cuda")
    (x * w).sum().backward()  # the control: unwritten, the backward runs and its gradient is w
    assert rel_err(x.grad, w.double()) == 0
    loss = (x * w).sum()  # autograd saves w
    axpy(torch.randn(N, device="cuda"), w)  # and the kernel writes it
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_an_inference_tensor_is_written_without_complaint() -> None:
    """Inference tensors have no version counter: nothing autograd saved can hold one (torch's own in-place ops
    refuse them outside inference mode; a kernel writing one is not refused)."""
    with torch.inference_mode():
        x, y = fresh()
    expected = y.double() + 2.0 * x.double()
    axpy(x, y)
    assert rel_err(y, expected) < 1e-5
    with torch.inference_mode():  # a normal tensor written in inference mode: its version goes up
        x, y = fresh()
    x, y = x.clone(), y.clone()
    with torch.inference_mode():
        before = y._version
        axpy(x, y)
    assert y._version == before + 1
