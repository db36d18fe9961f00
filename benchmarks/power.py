"""Throughput under the power cap: each kernel run back to back for seconds, with the SM clock and power it ran at.

An H200 held at full load draws its 700 W limit and lowers its SM clock
(1.3 to 1.8 GHz under these kernels, from 1.98), so a TFLOP/s figure says
as much about the power a kernel burns per flop as about its schedule. Each
row here runs one call back to back for about two seconds while
`nvidia-smi` is sampled every 0.1 s, and reports the median SM clock, the
power, what limits the clock (NVML's clock event reasons) and the share of
the tensor cores' peak at the clock measured (132 SMs x 4096 dense fp16
flops per clock on Hopper, twice that for fp8). A pure GEMM (cuBLAS, fp16)
is timed the same way: the share no kernel built on WGMMA is likely to pass
at that clock. Memory rows report GB/s against the datasheet bandwidth (`_timing.HBM_NOMINAL`).

Rows: flash attention forward and backward (examples/flash_attention*.py,
B8 H32 S4096 D128 fp16, without a mask and causal) against torch SDPA
(whose kernels are listed); the fp8 GEMM (examples/gemm_fp8.py) against
`torch._scaled_mm` with and without fast accumulation, and cuBLAS's fp16
GEMM, at 4096^3 and 8192^3; `copy_` of an [8192, 4096] fp16 tensor and of
1 GiB. "vs torch" is each tltyped row over the faster torch row of its
group. Every tltyped result is checked against torch (relative Frobenius
error) before it is timed.

    python3 benchmarks/power.py [--only attention,fp8,copy] [--seconds 2] [--out table.md]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from _timing import hbm_bytes_per_s, relative_error  # also puts the checkout on sys.path

FIELDS = "clocks.sm,power.draw,clocks_event_reasons.active"
REASONS = {0x1: "idle", 0x4: "power cap", 0x8: "HW slowdown", 0x20: "SW thermal", 0x40: "HW thermal", 0x80: "power brake"}


@dataclass
class Clocks:
    """nvidia-smi's samples while a loop runs."""

    samples: list[list[str]] = field(default_factory=list)

    def summary(self) -> tuple[float, float, str]:
        rows = self.samples[2:-1] or self.samples  # the first samples catch the clock ramping up
        mhz = statistics.median(float(r[0]) for r in rows)
        watts = statistics.median(float(r[1]) for r in rows)
        bits = 0
        for r in rows:
            bits |= int(r[2], 16)
        return mhz, watts, ", ".join(name for bit, name in REASONS.items() if bits & bit) or "none"


def query(uuid: str) -> list[str]:
    """One reading of the GPU `uuid` (as torch's device properties name it): SM MHz, watts, clock event reasons."""
    command = ["nvidia-smi", f"--id=GPU-{uuid}", f"--query-gpu={FIELDS}", "--format=csv,noheader,nounits"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip().split(", ")


@contextmanager
def sampled(uuid: str) -> Iterator[Clocks]:
    """Readings every 0.1 s while the block runs."""
    clocks, done = Clocks(), threading.Event()

    def poll() -> None:
        while not done.is_set():
            clocks.samples.append(query(uuid))
            time.sleep(0.1)

    thread = threading.Thread(target=poll)
    thread.start()
    try:
        yield clocks
    finally:
        done.set()
        thread.join()


@dataclass(frozen=True)
class Case:
    group: str
    name: str
    call: Callable[[], Any]
    work: float  # flops, or bytes moved for a "copy" group
    fp8: bool = False
    ours: bool = False
    error: str = "-"


@dataclass(frozen=True)
class Measured:
    case: Case
    ms: float
    rate: float  # TFLOP/s, or GB/s for a copy
    mhz: float
    watts: float
    reasons: str
    share: float  # of the tensor cores' peak at `mhz`, or of HBM's nominal bandwidth for a copy


def run_case(case: Case, seconds: float, peak_per_mhz: float) -> Measured:
    """Time `case.call` back to back for about `seconds` under the sampler."""
    case.call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    case.call()
    end.record()
    end.synchronize()
    calls = max(10, int(seconds * 1e3 / start.elapsed_time(end)))
    with sampled(str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)) as clocks:
        start.record()
        for _ in range(calls):
            case.call()
        end.record()
        end.synchronize()
    ms = start.elapsed_time(end) / calls
    mhz, watts, reasons = clocks.summary()
    rate = case.work / ms / (1e6 if case.group == "copy" else 1e9)
    hbm_gb_per_s = (hbm_bytes_per_s(torch.cuda.get_device_name()) or float("nan")) / 1e9
    share = rate / (hbm_gb_per_s if case.group == "copy" else peak_per_mhz * mhz * (2 if case.fp8 else 1))
    return Measured(case, ms, rate, mhz, watts, reasons, share)


def attention_cases(shape: tuple[int, int, int, int]) -> Iterator[Case]:
    from examples.flash_attention import attention
    from examples.flash_attention_backward import flash_attention

    b, h, s, d = shape
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.float16, device="cuda") for _ in range(3))
    qh, kh, vh = (x.transpose(1, 2).contiguous() for x in (q, k, v))
    dout = torch.randn_like(q)
    dout_h = dout.transpose(1, 2).contiguous()
    for causal in (False, True):
        mask = "causal" if causal else "no mask"
        flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
        sdpa = partial(F.scaled_dot_product_attention, qh, kh, vh, is_causal=causal)
        yield Case(f"attention, {mask}", "torch SDPA", sdpa, flops)
        error = relative_error(attention(q, k, v, causal), sdpa().transpose(1, 2))
        yield Case(f"attention, {mask}", "tltyped", partial(attention, q, k, v, causal), flops, ours=True, error=f"{error:.1e}")
        leaves_h = [x.clone().requires_grad_() for x in (qh, kh, vh)]
        sdpa_grad = partial(torch.autograd.grad, F.scaled_dot_product_attention(*leaves_h, is_causal=causal), leaves_h, dout_h,
                            retain_graph=True)
        refs = [g.transpose(1, 2) for g in sdpa_grad()]
        yield Case(f"backward, {mask}", "torch SDPA", sdpa_grad, 2.5 * flops)
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        grad = partial(torch.autograd.grad, flash_attention(*leaves, causal=causal), leaves, dout, retain_graph=True)
        errors = "/".join(f"{relative_error(g, r):.1e}" for g, r in zip(grad(), refs))
        yield Case(f"backward, {mask}", "tltyped", grad, 2.5 * flops, ours=True, error=errors)


def gemm_cases(size: int) -> Iterator[Case]:
    from examples.gemm_fp8 import scaled_mm

    fp8 = torch.float8_e4m3fn
    A, B = ((torch.randn(size, size, device="cuda") * 8).to(fp8) for _ in range(2))
    scale_a, scale_b = torch.rand(1, device="cuda") + 0.5, torch.rand(1, device="cuda") * 0.01 + 0.001
    flops = 2 * size**3
    for fast in (True, False):
        torch_mm = partial(torch._scaled_mm, A, B.t(), scale_a, scale_b, out_dtype=torch.bfloat16, use_fast_accum=fast)
        yield Case(f"fp8 {size}", f"torch._scaled_mm fast_accum={fast}", torch_mm, flops, fp8=True)
    ours = partial(scaled_mm, A, B, scale_a, scale_b)
    error = relative_error(ours(), (A.float() @ B.float().T) * (scale_a * scale_b))
    yield Case(f"fp8 {size}", "tltyped scaled_mm", ours, flops, fp8=True, ours=True, error=f"{error:.1e}")
    a, b = (torch.randn(size, size, device="cuda", dtype=torch.float16) for _ in range(2))
    yield Case(f"fp16 {size}", "cuBLAS fp16 GEMM", partial(torch.matmul, a, b), flops)


def copy_cases() -> Iterator[Case]:
    for x in (torch.randn(8192, 4096, device="cuda", dtype=torch.float16), torch.empty(1 << 30, dtype=torch.uint8, device="cuda")):
        y = torch.empty_like(x)
        size = "[8192, 4096] fp16" if x.dim() == 2 else "1 GiB"
        yield Case("copy", f"copy_ {size}", partial(y.copy_, x), 2 * x.numel() * x.element_size())


def sdpa_kernels(shape: tuple[int, int, int, int]) -> list[str]:
    """The CUDA kernels of one SDPA forward and backward."""
    from torch.profiler import ProfilerActivity, profile

    b, h, s, d = shape
    leaves = [torch.randn(b, h, s, d, dtype=torch.float16, device="cuda", requires_grad=True) for _ in range(3)]
    dout = torch.randn(b, h, s, d, dtype=torch.float16, device="cuda")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        F.scaled_dot_product_attention(*leaves).backward(dout)
        torch.cuda.synchronize()
    return sorted({e.name.split("(")[0][:120] for e in prof.events() if e.device_type.name == "CUDA"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="attention,fp8,copy", help="which groups to run")
    parser.add_argument("--shape", default="8,32,4096,128", help="attention's B,H,S,D")
    parser.add_argument("--sizes", default="4096,8192", help="GEMM sizes, M = N = K")
    parser.add_argument("--seconds", type=float, default=2.0, help="how long each row runs back to back")
    parser.add_argument("--out", help="also write the table as markdown to this path")
    opts = parser.parse_args()
    if not torch.cuda.is_available():
        print("power.py measures a GPU under load; there is none here")
        return
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    try:
        Clocks([query(str(props.uuid))]).summary()
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError) as exc:
        raise SystemExit(f"power.py reads clocks and power with nvidia-smi (fields {FIELDS}), which failed here: {exc}")
    peak_per_mhz = props.multi_processor_count * 4096 / 1e6  # TFLOP/s per MHz, dense fp16 WGMMA
    shape = tuple(int(x) for x in opts.shape.split(","))
    groups = opts.only.split(",")
    cases: list[Case] = []
    if "attention" in groups:
        print("SDPA's kernels:", *sdpa_kernels(shape), sep="\n  ", flush=True)
        cases += attention_cases(shape)
    if "fp8" in groups:
        for size in map(int, opts.sizes.split(",")):
            cases += gemm_cases(size)
    if "copy" in groups:
        cases += copy_cases()
    results = []
    for case in cases:
        results.append(run_case(case, opts.seconds, peak_per_mhz))
        print(f"{case.group:18s} {case.name:36s} {results[-1].ms:8.3f} ms {results[-1].rate:6.0f} at {results[-1].mhz:.0f} MHz",
              flush=True)
    lines = [
        f"{props.name}, torch {torch.__version__}, each row {opts.seconds:g} s back to back",
        "",
        "| group | who | ms | TFLOP/s or GB/s | vs torch | SM MHz | W | clock limited by | share of peak at that clock | rel. error |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        case = r.case
        bar = max((o.rate for o in results if o.case.group == case.group and not o.case.ours), default=None)
        ratio = f"{r.rate / bar:.3f}" if case.ours and bar else "-"
        lines.append(f"| {case.group} | {case.name} | {r.ms:.3f} | {r.rate:.0f} | {ratio} | {r.mhz:.0f} | {r.watts:.0f} | "
                     f"{r.reasons} | {r.share:.1%} | {case.error} |")
    table = "\n".join(lines)
    print(table)
    if opts.out:
        Path(opts.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
