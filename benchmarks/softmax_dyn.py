"""Row softmax with a dyn width against the same kernel with a const width, fp16.

One kernel body (`softmax_rows`, a `T.macro`), three signatures: the width
const (the kernel is specialised on 4096), dyn, and dyn with `assert
X.shape[1] // 8 * 8 == X.shape[1]`, which every call checks and the kernel
receives as `T.assume(n % 8 == 0)`: with it the fp16 rows are loaded and
stored 16 bytes at a time (`uint4`), as with the const width; without it,
one element at a time behind a bounds check. torch.softmax is the bar.

Each row is checked against an fp32 torch softmax first, then the rows are
timed in interleaved rounds (a batch of calls of each in turn, between CUDA
events; the median batch counts). "% of roofline": the time the kernel's
unavoidable traffic (read X once, write Y once) takes at the H200's 4.8 TB/s,
over the time measured.

    python3 benchmarks/softmax_dyn.py [--shape 8192,4096] [--out table.md]

Without a GPU (or with --dry-run) the three kernels are lowered for sm_90a and
the table says whether each one's global loads are vectorised.
"""

import argparse
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, TypeVar

import torch

from _timing import cuda_batch, interleaved, short

import tltyped as tl
import tltyped.language as T

DRY_TARGET = "sm_90a"
HBM_BYTES_PER_S = 4.8e12  # H200
TOLERANCE = 1e-2  # max abs error against an fp32 softmax; fp16 outputs in [0, 1] are good to about 5e-4
BLOCK = 1024  # columns per tile: 8 fp16 (16 bytes) per thread at 128 threads

M = TypeVar("M", bound=tl.dyn[int])
W = TypeVar("W", bound=tl.dyn[int])  # a dyn width
C = TypeVar("C")  # a const width


@T.macro
def softmax_rows(X, Y, block):
    """Y = softmax(X) along rows, one row per thread block, in tiles of `block` columns.

    First pass: the running max and sum of exponentials (online softmax);
    second pass: exp(x - max) / sum, written out.
    """
    m, n = X.shape
    with T.Kernel(m, threads=128) as row:
        x = T.alloc_fragment((block,), T.float16)
        e = T.alloc_fragment((block,), T.float32)
        tile = T.alloc_fragment((1,), T.float32)
        row_max = T.alloc_var(T.float32, init=-T.infinity(T.float32))
        row_sum = T.alloc_var(T.float32, init=0.0)
        for k in T.serial(T.ceildiv(n, block)):
            T.copy(X[row, k * block], x)
            for j in T.Parallel(block):
                e[j] = T.if_then_else(k * block + j < n, T.cast(x[j], T.float32), -T.infinity(T.float32))
            T.reduce_max(e, tile, dim=0)
            new_max = T.max(row_max, tile[0])
            for j in T.Parallel(block):
                e[j] = T.exp(e[j] - new_max)
            T.reduce_sum(e, tile, dim=0)
            row_sum = row_sum * T.exp(row_max - new_max) + tile[0]
            row_max = new_max
        for k in T.serial(T.ceildiv(n, block)):
            T.copy(X[row, k * block], x)
            for j in T.Parallel(block):
                x[j] = T.cast(T.exp(T.cast(x[j], T.float32) - row_max) / row_sum, T.float16)
            T.copy(x, Y[row, k * block])


@tl.jit
def softmax_const(X: tl.Tensor[tl.float16, M, C]) -> tl.Tensor[tl.float16, M, C]:
    m, n = X.shape
    Y = T.empty((m, n), tl.float16)
    softmax_rows(X, Y, BLOCK)
    return Y


@tl.jit
def softmax_dyn(X: tl.Tensor[tl.float16, M, W]) -> tl.Tensor[tl.float16, M, W]:
    m, n = X.shape
    Y = T.empty((m, n), tl.float16)
    softmax_rows(X, Y, BLOCK)
    return Y


@tl.jit
def softmax_dyn_aligned(X: tl.Tensor[tl.float16, M, W]) -> tl.Tensor[tl.float16, M, W]:
    assert X.shape[1] // 8 * 8 == X.shape[1]
    m, n = X.shape
    Y = T.empty((m, n), tl.float16)
    softmax_rows(X, Y, BLOCK)
    return Y


KERNELS = {
    "const width": softmax_const,
    "dyn width": softmax_dyn,
    "dyn width, assert % 8": softmax_dyn_aligned,
}


@dataclass
class Row:
    who: str
    ms: Optional[float] = None
    max_err: Optional[float] = None
    note: str = ""


def vectorised(kernel: Any, x: torch.Tensor) -> str:
    """What the lowered CUDA says of the kernel's global loads of X."""
    source = kernel.lower(x).cuda_source
    return "16-byte loads (uint4)" if re.search(r"\*\(uint4\*\)\(X \+", source) else "scalar loads"


def dry_run(shape: tuple[int, int]) -> list[Row]:
    os.environ.setdefault("TLTYPED_TARGET", DRY_TARGET)
    x = torch.empty(shape, dtype=torch.float16, device="meta")
    rows = []
    for who, kernel in KERNELS.items():
        try:
            note = f"lowered for {DRY_TARGET}: {vectorised(kernel, x)}; not launched (dry run)"
        except Exception as exc:
            note = f"n/a ({short(exc)})"
        rows.append(Row(who, note=note))
        print(f"{who:24s} {note}", flush=True)
    return rows


def run(shape: tuple[int, int], batches: int, per_batch: int) -> list[Row]:
    x = torch.randn(shape, device="cuda", dtype=torch.float16, generator=torch.Generator(device="cuda").manual_seed(0))
    ref = torch.softmax(x.float(), dim=-1)
    candidates: list[tuple[str, Callable[[], torch.Tensor]]] = [("torch.softmax", lambda: torch.softmax(x, dim=-1))]
    candidates += [(who, lambda kernel=kernel: kernel(x)) for who, kernel in KERNELS.items()]
    rows, timed = [], []
    for who, fn in candidates:
        row = Row(who)
        try:
            row.max_err = (fn().float() - ref).abs().max().item()
            if row.max_err <= TOLERANCE:
                timed.append((row, fn))
            else:
                row.note = f"WRONG RESULT (max abs err {row.max_err:.1e}); not timed"
        except Exception as exc:
            row.note = f"n/a ({short(exc)})"
        rows.append(row)
    times = interleaved({id(row): cuda_batch(fn, per_batch) for row, fn in timed}, batches)
    for row, _ in timed:
        ms = times[id(row)]
        if isinstance(ms, Exception):
            row.note = f"n/a ({short(ms)})"
        else:
            row.ms = ms
    return rows


def table(rows: list[Row], shape: tuple[int, int], markdown: bool) -> list[str]:
    const = next((r.ms for r in rows if r.who == "const width"), None)
    roofline_ms = 2 * shape[0] * shape[1] * 2 / HBM_BYTES_PER_S * 1e3  # read X, write Y, fp16
    head = ["who", "ms", "vs const width", "% of roofline", "max abs err", "note"]
    body = [[
        r.who,
        f"{r.ms:.4f}" if r.ms else "-",
        f"{r.ms / const:.3f}" if r.ms and const else "-",
        f"{100 * roofline_ms / r.ms:.0f}%" if r.ms else "-",
        f"{r.max_err:.1e}" if r.max_err is not None else "-",
        r.note,
    ] for r in rows]
    if markdown:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(c) + " |" for c in body]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head) - 1)]
    fmt = lambda cs: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cs, widths))) + "  " + cs[-1]
    return [fmt(head)] + [fmt(row) for row in body]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="8192,4096", help="rows,width")
    parser.add_argument("--batches", type=int, default=20, help="timed batches; the median counts")
    parser.add_argument("--per-batch", type=int, default=50, help="calls per timed batch")
    parser.add_argument("--out", help="also write the table as markdown to this path")
    parser.add_argument("--dry-run", action="store_true", help="lower only (implied without a GPU)")
    opts = parser.parse_args()
    rows_, width = (int(s) for s in opts.shape.split(","))
    shape = (rows_, width)
    if not torch.cuda.is_available() and not opts.dry_run:
        print("no CUDA device: running as --dry-run", flush=True)
        opts.dry_run = True
    rows = dry_run(shape) if opts.dry_run else run(shape, opts.batches, opts.per_batch)
    where = "DRY RUN (no GPU): lowered only" if opts.dry_run else torch.cuda.get_device_name()
    title = (f"softmax {shape[0]}x{shape[1]} fp16, dyn vs const width; medians of {opts.batches} interleaved batches "
             f"of {opts.per_batch} calls; roofline {HBM_BYTES_PER_S / 1e12:.1f} TB/s; torch {torch.__version__}, {where}")
    print("\n" + title)
    print("\n".join(table(rows, shape, markdown=False)))
    if opts.out:
        Path(opts.out).write_text("\n".join([f"# {title}", "", *table(rows, shape, markdown=True)]) + "\n")
        print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
