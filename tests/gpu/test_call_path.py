"""The call path on a GPU: streams, graphs, devices, threads, tuning and errors."""

from __future__ import annotations

import threading

import pytest
import torch

from examples.add import add
from examples.gemm import gemm
from tests.gpu.conftest import poison_allocator, rel_err
from tests.gpu.kernels import axpy, row_sum


def test_runs_on_the_current_stream() -> None:
    x = torch.randn(1 << 20, device="cuda")
    y = torch.randn(1 << 20, device="cuda")
    expected = y.double() + 2.0 * x.double()
    axpy(x, y.clone())  # compile outside the timed region
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)  # delay the side stream so a wrong-stream launch would run first
        out = torch.full_like(y, float("nan"))
        out.copy_(y)
        axpy(x, out)
    stream.synchronize()
    torch.cuda.synchronize()
    assert rel_err(out, expected) < 1e-6


def test_cuda_graph_capture_and_replay() -> None:
    n = 4096
    a = torch.randn(n, dtype=torch.float16, device="cuda")
    b = torch.randn(n, dtype=torch.float16, device="cuda")
    c = torch.empty_like(a)
    add(a, b, c)  # compile and warm up before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        add(a, b, c)
    for _ in range(3):
        a.copy_(torch.randn(n, dtype=torch.float16, device="cuda"))
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert rel_err(c, a.double() + b.double()) < 1e-3


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_runs_on_the_tensors_device_not_the_current_one() -> None:
    a = torch.randn(5000, dtype=torch.float16, device="cuda:1")
    b = torch.randn(5000, dtype=torch.float16, device="cuda:1")
    c = torch.full_like(a, float("nan"))
    with torch.cuda.device(0):
        add(a, b, c)
        assert torch.cuda.current_device() == 0
    torch.cuda.synchronize(1)
    assert rel_err(c, a.double() + b.double()) < 1e-3


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_launches_alternating_between_devices_each_run_on_their_tensors_device() -> None:
    """The launcher knows the current device by its context once it has seen it: every launch of a
    mix of devices, under each current device, runs where its tensors are and leaves the current one."""
    inputs = {d: [torch.randn(3000, dtype=torch.float16, device=f"cuda:{d}") for _ in range(2)] for d in (0, 1)}
    for current in (0, 1, 0):
        with torch.cuda.device(current):
            for d in (0, 1, 1, 0, 0, 1):
                a, b = inputs[d]
                c = torch.full_like(a, float("nan"))
                add(a, b, c)
                assert torch.cuda.current_device() == current
                torch.cuda.synchronize(d)
                assert rel_err(c, a.double() + b.double()) < 1e-3


def test_tensors_on_different_devices_are_rejected() -> None:
    a = torch.randn(100, dtype=torch.float16, device="cuda")
    b = torch.randn(100, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"argument 'B' is on cpu"):
        add(a, b, torch.empty_like(a))


def test_eight_threads_mixed_shapes_compile_each_key_once() -> None:
    from tests.gpu import kernels

    fn = kernels.axpy
    sizes = [1000, 2000, 3000, 4000]
    errors: list[BaseException] = []
    before = fn.cache_info().compiles

    def worker(seed: int) -> None:
        try:
            gen = torch.Generator(device="cuda").manual_seed(seed)
            for i in range(20):
                n = sizes[(seed + i) % len(sizes)]
                block = 128 if (seed + i) % 2 else 256
                x = torch.randn(n, device="cuda", generator=gen)
                y = torch.randn(n, device="cuda", generator=gen)
                expected = y.double() + 0.5 * x.double()
                fn(x, y, 0.5, block)
                torch.cuda.current_stream().synchronize()
                assert rel_err(y, expected) < 1e-6
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert fn.cache_info().compiles - before <= 2  # one per block size, whatever the thread interleaving


def test_tune_default_picks_a_config_and_computes_right() -> None:
    x = torch.randn(512, 64, device="cuda")
    out = row_sum(x)
    assert rel_err(out, x.double().sum(dim=1)) < 1e-5
    info = row_sum.cache_info()
    out2 = row_sum(torch.randn(512, 64, device="cuda"))
    assert row_sum.cache_info().compiles == info.compiles
    assert out2.shape == (512,)


def test_misaligned_view_is_rejected() -> None:
    base = torch.randn(1025, dtype=torch.float16, device="cuda")
    a = base[1:]
    with pytest.raises(ValueError, match="16-byte aligned"):
        add(a, a.clone(), a.clone())


def test_a_negated_view_is_refused_after_its_base_was_launched_on() -> None:
    """`.conj().imag` shares memory holding its elements' negatives, and keys as a plain tensor: never launched."""
    a, b = torch.randn(1024, dtype=torch.float16, device="cuda"), torch.randn(1024, dtype=torch.float16, device="cuda")
    c = torch.full_like(a, float("nan"))
    add(a, b, c)  # the cache holds the key a negated view would have
    assert rel_err(c, a.double() + b.double()) < 1e-3
    with pytest.raises(ValueError, match=r"argument 'A' is a negated view"):
        add(torch._neg_view(a), b, c)


def test_a_strided_view_with_dyn_dims_gets_a_kernel_for_its_layout() -> None:
    a = torch.randn(64, 256, dtype=torch.float16, device="cuda").t()  # (256, 64), K=64 dyn, strided
    b = torch.randn(64, 128, dtype=torch.float16, device="cuda")
    poison_allocator(((256, 128), torch.float32))
    c = gemm(a, b)
    assert rel_err(c, a.double() @ b.double()) < 1e-3


def test_wrong_dtype_on_gpu_names_parameter() -> None:
    a = torch.randn(128, 64, device="cuda")
    b = torch.randn(64, 128, dtype=torch.float16, device="cuda")
    with pytest.raises(TypeError, match=r"argument 'A' expects dtype float16, got float32"):
        gemm(a, b)


def test_shared_dyn_dim_disagreement_on_the_fast_path() -> None:
    a = torch.randn(128, 64, dtype=torch.float16, device="cuda")
    b = torch.randn(64, 128, dtype=torch.float16, device="cuda")
    gemm(a, b)  # compiled: the next call's key hits, only the dyn check can catch K
    b_bad = torch.randn(32, 128, dtype=torch.float16, device="cuda")
    a_k32 = torch.randn(128, 32, dtype=torch.float16, device="cuda")
    gemm(a_k32, b_bad)
    with pytest.raises(ValueError, match=r"dim K: 64 \(from A, axis 1\) vs 32 \(from B, axis 0\)"):
        gemm(a, b_bad)


class _DoubledByAKernel(torch.autograd.Function):
    """y = 2x, whose backward (run by autograd in a thread of its own) calls a tltyped kernel."""

    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
        out = torch.full_like(grad, float("nan"))
        add(grad.contiguous(), grad.contiguous(), out)
        return out


def test_a_kernel_launches_in_a_thread_where_no_cuda_context_is_current() -> None:
    """A new thread, and the one torch's autograd runs a backward in, start with no CUDA context current; the
    kernel (launched in the main thread first) makes its device's context current there too."""
    a, b = torch.randn(1000, device="cuda", dtype=torch.float16), torch.randn(1000, device="cuda", dtype=torch.float16)
    first = torch.full_like(a, float("nan"))
    add(a, b, first)
    out = torch.full_like(a, float("nan"))
    errors: list[BaseException] = []

    def work() -> None:
        try:
            add(a, b, out)  # the thread's first CUDA call
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    torch.cuda.synchronize()
    assert not errors, errors
    assert rel_err(out, a.double() + b.double()) < 1e-3 and rel_err(first, a.double() + b.double()) < 1e-3
    x = torch.randn(1000, device="cuda", dtype=torch.float16, requires_grad=True)
    _DoubledByAKernel.apply(x).sum().backward()
    assert x.grad is not None and rel_err(x.grad, torch.full_like(x, 2.0, dtype=torch.float64)) == 0


@pytest.mark.parametrize("scalars, extra", [
    (dict(i8=-3, u8=200, i16=-1000, u16=60000, u32=4_000_000_000, u64=5, f16=0.5, f64=-0.25), None),
    (dict(i8=0, u8=0, i16=0, u16=0, u32=0, u64=2**63 + 2**40, f16=0.0, f64=0.0), float(2**63 + 2**40)),
], ids=["narrow and unsigned", "uint64's upper half"])
def test_every_scalar_type_reaches_the_kernel_as_given(scalars: dict[str, float], extra: float | None) -> None:
    """Y = X * f32 + each scalar cast to float32: the launcher passes each type by value, unsigned and narrow ones
    too, through the fast path as through the first call."""
    from tests.kernels.scalars import every_scalar

    x = torch.randn(1000, device="cuda")
    want = x.double() * 1.5 + (sum(scalars.values()) if extra is None else extra)
    for _ in range(2):  # the first call (slow path), then a cached one
        y = every_scalar(x, f32=1.5, **scalars)
        assert rel_err(y, want) < 1e-6, (y[:4], want[:4])


def test_a_kernel_of_no_arguments_launches() -> None:
    """No tensor says where: it runs on the current device, and the device is fine afterwards."""
    from tests.kernels.eager_style import layout_probe

    assert layout_probe(4, 32) is None and layout_probe(4, 32) is None  # the second from the fast path
    torch.cuda.synchronize()
    assert layout_probe.cache_info().hits == 1
