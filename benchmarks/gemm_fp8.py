"""fp8 GEMM throughput: tltyped's examples/gemm_fp8.py against torch._scaled_mm (cuBLAS).

e4m3 A [M, K] and B [N, K], per-tensor fp32 scales, bf16 out, M = N = K.
Rows: `torch._scaled_mm(A, B.t(), scale_a, scale_b, out_dtype=torch.bfloat16)`
with `use_fast_accum=True` (the bar: WGMMA's accumulation across the whole
of K, as the example's) and with its default `use_fast_accum=False` (partial
sums promoted into fp32 every few blocks, which costs throughput); the
example's `scaled_mm` tuned (`tl.tune` over its CONFIGS), and each of its
schedules fixed. Timed as benchmarks/gemm.py times (its harness: first call,
warm host time, relative error against an fp32 matmul of the same fp8 values
before any timing, back to back and L2-flushed TFLOP/s in interleaved rounds).
Inputs are random normal times 8, cast to e4m3; the scales are random.

    python3 benchmarks/gemm_fp8.py [--sizes 4096,8192] [--out table.md]

Without a GPU (or with --dry-run) every schedule of the first size is compiled
for sm_90a and nothing runs.
"""

import argparse
import os
from typing import Any

import torch

from gemm import DRY_TARGET, Row, build, compiled_only, measure_all, parse_options, report

FP8 = torch.float8_e4m3fn
BAR = "torch fast accum"


def example() -> Any:
    return __import__("examples.gemm_fp8", fromlist=["scaled_mm", "CONFIGS"])


def dry_run(opts: argparse.Namespace) -> list[Row]:
    """Compile every schedule of the first size for sm_90a; launch nothing."""
    os.environ.setdefault("TLTYPED_TARGET", DRY_TARGET)
    size = opts.sizes[0]
    a = torch.empty(size, size, dtype=FP8, device="meta")
    scale = torch.empty(1, dtype=torch.float32, device="meta")
    ex, why = build("tltyped", example)
    rows = []
    for schedule in ex.CONFIGS if ex else [None]:
        compile_kernel = ex and (lambda schedule=schedule: ex.scaled_mm.compile(a, a, scale, scale, schedule))
        row = compiled_only(Row(size, "tltyped", "x".join(map(str, schedule or ())), note=why), compile_kernel)
        rows.append(row)
        print(f"[{size}] tltyped {row.config:12s} {row.note}", flush=True)
    return rows


def run(opts: argparse.Namespace) -> list[Row]:
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference is a true fp32 matmul
    ex, why = build("tltyped", example)
    rows = []
    for size in opts.sizes:
        gen = torch.Generator(device="cuda").manual_seed(size)
        A = (torch.randn(size, size, device="cuda", generator=gen) * 8).to(FP8)
        B = (torch.randn(size, size, device="cuda", generator=gen) * 8).to(FP8)
        scale_a = torch.rand(1, device="cuda", generator=gen) + 0.5
        scale_b = torch.rand(1, device="cuda", generator=gen) * 0.01 + 0.001
        ref = (A.float() @ B.float().T) * (scale_a * scale_b)
        Bt = B.t()  # column-major [K, N], as torch._scaled_mm takes it
        torch_mm = lambda fast: torch._scaled_mm(A, Bt, scale_a, scale_b, out_dtype=torch.bfloat16, use_fast_accum=fast)
        candidates: list[tuple[str, str, Any, str]] = [
            (BAR, "cuBLAS, use_fast_accum=True", lambda: torch_mm(True), ""),
            ("torch", "cuBLAS, use_fast_accum=False", lambda: torch_mm(False), ""),
        ]
        if ex is not None:
            tuned = lambda: ex.scaled_mm(A, B, scale_a, scale_b)
            candidates.append(("tltyped tune", f"tl.tune, {len(ex.CONFIGS)} configs", tuned, ""))
            for schedule in ex.CONFIGS:
                call = lambda schedule=schedule: ex.scaled_mm(A, B, scale_a, scale_b, schedule)
                candidates.append(("tltyped", "x".join(map(str, schedule)), call, ""))
        else:
            candidates.append(("tltyped", "-", None, why))
        rows += measure_all(size, candidates, ref, opts)
        del A, B, Bt, ref
        torch.cuda.empty_cache()
    return rows


def main() -> None:
    opts = parse_options(__doc__.split("\n\n")[0], "gemm-fp8-cache-", lambda parser: None)
    rows = dry_run(opts) if opts.dry_run else run(opts)
    report(rows, opts, "gemm fp8: e4m3 in, per-tensor scales, fp32 accumulate, bf16 out", BAR, "vs torch fast accum")


if __name__ == "__main__":
    main()
