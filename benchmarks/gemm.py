"""GEMM throughput: tltyped's examples/gemm.py against cuBLAS and TileLang's own jit.

fp16 inputs with fp32 accumulation, M = N = K, for a few block configurations
of the example. Next to it: torch.matmul (cuBLAS, fp16 out) as the bar, and
the same kernel written for `@tilelang.jit` (annotations in the body, fp32
output from `T.empty`, same grid and threads), so that a difference between
the two TileLang-backed rows is the frontend's doing, not the kernel's.

For each row: the first call's time (compile, or a disk-cache load), the host
time of a warm call, a correctness check against an fp32 torch matmul (relative
Frobenius error, before any timing), and the kernel time two ways, as TFLOP/s:
back to back (the median over batches of calls between CUDA events; inputs
stay partly in L2 from the call before) and with L2 flushed before each call
(a 256 MiB write between calls, as `triton.testing.do_bench` and TileLang's
profiler do; what the tuner times). The rows of one size are timed in
interleaved rounds, a batch of each in turn, so a GPU that warms up and
lowers its clocks during the run weighs on every row alike. Inputs are
random normal.

    python3 benchmarks/gemm.py [--sizes 4096,8192] [--configs 128x128x32x3,...] [--out table.md]

Without a GPU (or with --dry-run) the kernels of the first size are compiled
for sm_90a and nothing runs.
"""

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from _timing import relative_error, short

ROOT = Path(__file__).resolve().parent.parent
DRY_TARGET = "sm_90a"
CONFIGS = "128x128x32x3,128x128x64x3,128x256x64x3"  # block_M x block_N x block_K x num_stages
TOLERANCE = 1e-2  # relative Frobenius error vs an fp32 matmul; fp16 inputs, fp32 accumulation sit near 1e-3 or below


@dataclass
class Row:
    size: int
    who: str
    config: str
    ms: Optional[float] = None  # back to back
    flushed_ms: Optional[float] = None  # L2 flushed before each call
    first_s: Optional[float] = None
    warm_us: Optional[float] = None
    rel_err: Optional[float] = None
    note: str = ""

    def tflops(self, ms: Optional[float]) -> Optional[float]:
        return 2 * self.size**3 / (ms * 1e-3) / 1e12 if ms else None


def tltyped_gemm() -> Any:
    """examples/gemm.py's `gemm`, loaded by path (this file is also called gemm)."""
    spec = importlib.util.spec_from_file_location("tltyped_example_gemm", ROOT / "examples" / "gemm.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.gemm


def tilelang_gemm(target: Any) -> Any:
    """The example's kernel for TileLang 0.1.15's `@tilelang.jit`: M, N const, K dyn, C from T.empty."""
    import tilelang
    import tilelang.language as T

    @tilelang.jit(target=target, execution_backend="tvm_ffi")
    def gemm(A, B, block_M: int = 128, block_N: int = 128, block_K: int = 32, num_stages: int = 3):
        M, N = T.const("M, N")
        K = T.dynamic("K")
        A: T.Tensor[[M, K], T.float16]
        B: T.Tensor[[K, N], T.float16]
        C = T.empty((M, N), T.float32)
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), T.float16)
            B_shared = T.alloc_shared((block_K, block_N), T.float16)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])
        return C

    return gemm


def time_side_by_side(timed: list[tuple[Row, Callable[[], Any]]], batches: int, per_batch: int) -> None:
    """Fill each row's `ms` and `flushed_ms`, timing the rows in interleaved rounds.

    Back to back: the median over `batches` of the mean of `per_batch` calls
    between CUDA events (calls queue up behind each other, so the host's cost
    is hidden while it is shorter than the kernel, as it is by far). Flushed:
    the median over `batches * per_batch` single calls, each after a write of
    256 MiB, more than the H200's L2.
    """
    flush = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")
    events: dict[int, tuple[list[Any], list[Any]]] = {id(row): ([], []) for row, _ in timed}
    new = lambda: torch.cuda.Event(enable_timing=True)
    for _ in range(batches):
        for row, fn in timed:
            together, alone = events[id(row)]
            start, end = new(), new()
            start.record()
            for _ in range(per_batch):
                fn()
            end.record()
            together.append((start, end))
            for _ in range(per_batch):
                flush.zero_()
                start, end = new(), new()
                start.record()
                fn()
                end.record()
                alone.append((start, end))
        torch.cuda.synchronize()
    for row, _ in timed:
        together, alone = events[id(row)]
        row.ms = statistics.median(s.elapsed_time(e) / per_batch for s, e in together)
        row.flushed_ms = statistics.median(s.elapsed_time(e) for s, e in alone)


def measure(row: Row, fn: Callable[[], torch.Tensor], ref: torch.Tensor) -> bool:
    """First call, correctness, warm host time; fills `row`, never raises. True: the row is to be timed."""
    try:
        torch.cuda.synchronize()
        start = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        row.first_s = time.perf_counter() - start
        row.rel_err = relative_error(out, ref)
        del out
        if not row.rel_err <= TOLERANCE:  # also catches NaN
            row.note = f"WRONG RESULT (rel err {row.rel_err:.2e}); not timed"
            return False
        fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(10):
            fn()
        row.warm_us = (time.perf_counter() - start) / 10 * 1e6  # host time only: the GPU is still busy
        torch.cuda.synchronize()
        return True
    except Exception as exc:
        row.note = f"n/a ({short(exc)})"
    return False


def measure_all(
    size: int, candidates: list[tuple[str, str, Callable[[], Any] | None, str]], ref: torch.Tensor,
    opts: argparse.Namespace,
) -> list[Row]:
    """Each candidate (who, label, call or None, why not) checked against `ref` with its first call timed, then
    the right ones timed side by side."""
    rows, timed = [], []
    for who, label, fn, failed in candidates:
        row = Row(size, who, label, note=failed)
        if fn is not None and measure(row, fn, ref):
            timed.append((row, fn))
        rows.append(row)
        print(f"[{size}] {who:16s} {label:28s} first call {row.first_s or 0:.2f} s  {row.note}", flush=True)
    time_side_by_side(timed, opts.batches, opts.per_batch)
    return rows


def parse_configs(text: str) -> list[tuple[int, int, int, int]]:
    configs = []
    for item in text.split(","):
        parts = [int(p) for p in item.lower().split("x")]
        if len(parts) != 4:
            raise SystemExit(f"--configs: {item!r} is not block_M x block_N x block_K x num_stages")
        configs.append((parts[0], parts[1], parts[2], parts[3]))
    return configs


def build(name: str, make: Callable[[], Any]) -> tuple[Any, str]:
    """Define one frontend's kernel; on failure its rows say why."""
    try:
        return make(), ""
    except Exception as exc:
        return None, f"n/a ({short(exc)})"


def compiled_only(row: Row, compile_kernel: Callable[[], Any] | None) -> Row:
    """A dry run's row: the kernel built for DRY_TARGET (its build time as the first call), not launched."""
    if compile_kernel is not None:
        try:
            start = time.perf_counter()
            compile_kernel()
            row.first_s = time.perf_counter() - start
            row.note = f"compiled for {DRY_TARGET} (1st call s = compile); not launched (dry run)"
        except Exception as exc:
            row.note = f"n/a ({short(exc)})"
    return row


def dry_run(opts: argparse.Namespace, configs: list[tuple[int, int, int, int]]) -> list[Row]:
    """Compile every configuration of the first size for sm_90a; launch nothing."""
    os.environ.setdefault("TLTYPED_TARGET", DRY_TARGET)
    size = opts.sizes[0]
    rows = []
    a = torch.empty(size, size, dtype=torch.float16, device="meta")
    ours, why = build("tltyped", tltyped_gemm)
    theirs, why_tl = build("TileLang", lambda: tilelang_gemm({"kind": "cuda", "arch": DRY_TARGET}))
    for cfg in configs:
        label = "x".join(map(str, cfg))
        for who, fn, failed in (("tltyped", ours, why), ("TileLang jit", theirs, why_tl)):
            row = compiled_only(Row(size, who, label, note=failed), fn and (lambda fn=fn: fn.compile(a, a, *cfg)))
            rows.append(row)
            print(f"[{size}] {who:13s} {label:14s} {row.note}", flush=True)
    return rows


def run(opts: argparse.Namespace, configs: list[tuple[int, int, int, int]]) -> list[Row]:
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 reference is a true fp32 matmul
    ours, why = build("tltyped", tltyped_gemm)
    theirs, why_tl = build("TileLang", lambda: tilelang_gemm(None))
    rows = []
    for size in opts.sizes:
        gen = torch.Generator(device="cuda").manual_seed(size)
        A = torch.randn(size, size, device="cuda", dtype=torch.float16, generator=gen)
        B = torch.randn(size, size, device="cuda", dtype=torch.float16, generator=gen)
        ref = A.float() @ B.float()
        candidates: list[tuple[str, str, Any, str]] = [("torch.matmul", "cuBLAS, fp16 out", lambda: torch.matmul(A, B), "")]
        for cfg in configs:
            label = "x".join(map(str, cfg))
            candidates.append(("tltyped", label, ours and (lambda cfg=cfg: ours(A, B, *cfg)), why))
            candidates.append(("TileLang jit", label, theirs and (lambda cfg=cfg: theirs(A, B, *cfg)), why_tl))
        example = __import__("examples.gemm_tuned", fromlist=["matmul", "CONFIGS"])
        tuned, why_tuned = build("tltyped tune", lambda: example.matmul)
        label = f"tl.tune, {len(example.CONFIGS)} configs, fp16 out"
        candidates.append(("tltyped tune", label, tuned and (lambda: tuned(A, B)), why_tuned))
        rows += measure_all(size, candidates, ref, opts)
        del A, B, ref
        torch.cuda.empty_cache()
    return rows


def table(rows: list[Row], markdown: bool, bar: str = "torch.matmul", versus: str = "vs cuBLAS") -> list[str]:
    """The rows as text or markdown; ratios against the row of each size whose `who` is `bar`."""
    bars = {r.size: r for r in rows if r.who == bar and r.ms}
    head = ["size", "who", "config", "TFLOP/s", versus, "L2 flushed TFLOP/s", versus, "1st call s",
            "warm call us", "rel err", "note"]
    body = []
    for r in rows:
        cells = [str(r.size), r.who, r.config]
        cublas = bars.get(r.size)
        for ms, bar_ms in ((r.ms, cublas and cublas.ms), (r.flushed_ms, cublas and cublas.flushed_ms)):
            tf, bar = r.tflops(ms), r.tflops(bar_ms)
            cells += [f"{tf:.0f}" if tf else "-", f"{tf / bar:.3f}" if tf and bar else "-"]
        body.append([
            *cells,
            f"{r.first_s:.2f}" if r.first_s is not None else "-",
            f"{r.warm_us:.1f}" if r.warm_us is not None else "-",
            f"{r.rel_err:.1e}" if r.rel_err is not None else "-",
            r.note,
        ])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return lines + ["| " + " | ".join(cells) + " |" for cells in body]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head) - 1)]
    fmt = lambda cs: "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(cs, widths))) + "  " + cs[-1]
    return [fmt(head)] + [fmt(row) for row in body]


def parse_options(description: str, cache_prefix: str, add: Callable[[argparse.ArgumentParser], None]) -> argparse.Namespace:
    """The options of both GEMM benchmarks (`add` adds a script's own): a dry run without a GPU, and with
    --fresh-cache empty kernel caches, set before TileLang is imported (it reads its cache directory once)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sizes", default="4096,8192", help="comma-separated M = N = K")
    add(parser)
    parser.add_argument("--batches", type=int, default=20, help="timed batches; the median counts")
    parser.add_argument("--per-batch", type=int, default=10, help="calls per timed batch")
    parser.add_argument("--out", help="also write the table as markdown to this path")
    parser.add_argument("--dry-run", action="store_true", help="compile only (implied without a GPU)")
    parser.add_argument("--fresh-cache", action="store_true", help="empty kernel caches, so first calls show compile time")
    opts = parser.parse_args()
    opts.sizes = [int(s) for s in opts.sizes.split(",")]
    if not torch.cuda.is_available() and not opts.dry_run:
        print("no CUDA device: running as --dry-run", flush=True)
        opts.dry_run = True
    if opts.fresh_cache:
        fresh = tempfile.mkdtemp(prefix=cache_prefix)
        os.environ["TILELANG_CACHE_DIR"] = os.path.join(fresh, "tilelang")
        os.environ["TLTYPED_CACHE_DIR"] = os.path.join(fresh, "tltyped")
    return opts


def report(rows: list[Row], opts: argparse.Namespace, what: str, bar: str = "torch.matmul", versus: str = "vs cuBLAS") -> None:
    """The table, printed, and written as markdown to --out."""
    where = "DRY RUN (no GPU): compiled only" if opts.dry_run else torch.cuda.get_device_name()
    title = (f"{what}; medians of {opts.batches} interleaved rounds of {opts.per_batch} calls; "
             f"torch {torch.__version__}, {where}")
    print("\n" + title)
    print("\n".join(table(rows, markdown=False, bar=bar, versus=versus)))
    if opts.out:
        Path(opts.out).write_text("\n".join([f"# {title}", "", *table(rows, markdown=True, bar=bar, versus=versus)]) + "\n")
        print(f"wrote {opts.out}")


def main() -> None:
    opts = parse_options(
        __doc__.split("\n\n")[0], "gemm-cache-",
        lambda parser: parser.add_argument(
            "--configs", default=CONFIGS, help="comma-separated block_M x block_N x block_K x num_stages"
        ),
    )
    configs = parse_configs(opts.configs)
    rows = dry_run(opts, configs) if opts.dry_run else run(opts, configs)
    report(rows, opts, "gemm: fp16 in, fp32 accumulate")


if __name__ == "__main__":
    main()
