"""Row softmax and RMSNorm (examples/softmax.py, examples/rms_norm.py) against HBM's roofline and torch, fp16.

Each example holds whole rows on chip, so it reads X once and writes Y once:
the roofline is that traffic (RMSNorm also reads W and writes one fp32 per
row) at the GPU's datasheet bandwidth (`_timing.HBM_NOMINAL`: 4.8 TB/s on an H200, 3.35 on an H100 SXM).
What HBM gives in practice is measured in the
same run: two copies of X (torch's `copy_` and a row-copy kernel) move the
same bytes, and "of copy" is each row's bandwidth over the faster copy's. Each example is run at a few of its consts
(rows per block, threads per block), and the softmax of a dyn width
(`softmax_dyn`, one kernel for every width) at its defaults; torch's eager op is the bar. Every
result is checked against fp32 torch first; the figures are the median of
interleaved batches of calls, timed with CUDA events.

    python3 benchmarks/norms.py [--shape 8192,4096] [--variants 1x128,1x256] [--out table.md]

Without a GPU (or with --dry-run) every variant is lowered for sm_90a only.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch
import torch.nn.functional as F

from _timing import NotLaunched, cuda_batch, hbm_bytes_per_s, interleaved, relative_error, short

from examples.rms_norm import rms_norm
from examples.softmax import softmax, softmax_dyn

import tltyped as tl
import tltyped.language as T

VARIANTS = "1x64,1x128,1x256,2x256,4x128,1x512"  # rows per block x threads, the default of --variants
DT = TypeVar("DT")
M = TypeVar("M", bound=tl.dyn[int])
N = TypeVar("N")


@tl.jit
def copy_rows(X: tl.Tensor[DT, M, N]) -> tl.Tensor[DT, M, N]:
    """Y = X, a row per block of 256 threads through registers: the examples' traffic with nothing else."""
    m, n = X.shape
    Y = T.empty((m, n), X.dtype)
    with T.Kernel(m, threads=256) as bx:
        x = T.alloc_fragment((1, n), X.dtype)
        T.copy(X[bx, 0], x)
        T.copy(x, Y[bx, 0])
    return Y


@dataclass(frozen=True)
class Candidate:
    op: str  # "copy", "softmax" or "rms_norm"
    call: Callable[[], Any]  # timed
    result: Callable[[], torch.Tensor]  # checked
    lower: Callable[[], Any] | None = None  # a tltyped variant's lowering, for a dry run


def candidates(x: torch.Tensor, w: torch.Tensor, variants: list[tuple[int, int]]) -> dict[str, Candidate]:
    """torch's ops and each variant of the examples, by name."""
    n = x.shape[1]
    y = torch.empty_like(x)
    found = {
        "torch copy_": Candidate("copy", lambda: y.copy_(x), lambda: y.copy_(x)),
        "tltyped row copy": Candidate("copy", lambda: copy_rows(x), lambda: copy_rows(x), lambda: copy_rows.lower(x)),
        "torch.softmax": Candidate("softmax", lambda: torch.softmax(x, dim=-1), lambda: torch.softmax(x, dim=-1)),
        "F.rms_norm": Candidate("rms_norm", lambda: F.rms_norm(x, (n,), w, 1e-6), lambda: F.rms_norm(x, (n,), w, 1e-6)),
    }
    for rows, threads in variants:
        found[f"tltyped softmax rows={rows} threads={threads}"] = Candidate(
            "softmax", lambda r=rows, t=threads: softmax(x, r, t), lambda r=rows, t=threads: softmax(x, r, t),
            lambda r=rows, t=threads: softmax.lower(x, r, t),
        )
        found[f"tltyped rms_norm rows={rows} threads={threads}"] = Candidate(
            "rms_norm", lambda r=rows, t=threads: rms_norm(x, w, 1e-6, r, t),
            lambda r=rows, t=threads: rms_norm(x, w, 1e-6, r, t)[0], lambda r=rows, t=threads: rms_norm.lower(x, w, 1e-6, r, t),
        )
    found["tltyped softmax_dyn (width dyn)"] = Candidate(
        "softmax", lambda: softmax_dyn(x), lambda: softmax_dyn(x), lambda: softmax_dyn.lower(x)
    )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="8192,4096", help="rows,width")
    parser.add_argument("--rounds", type=int, default=20, help="interleaved rounds; the median counts")
    parser.add_argument("--per-batch", type=int, default=50, help="calls per timed batch")
    parser.add_argument("--variants", default=VARIANTS, help="the examples' consts to run: rows x threads, ...")
    parser.add_argument("--out", help="also write the table as markdown to this path")
    parser.add_argument("--dry-run", action="store_true", help="lower only (implied without a GPU)")
    opts = parser.parse_args()
    m, n = (int(s) for s in opts.shape.split(","))
    dry = opts.dry_run or not torch.cuda.is_available()
    if dry:
        os.environ.setdefault("TLTYPED_TARGET", "sm_90a")
    device = "meta" if dry else "cuda"
    gen = None if dry else torch.Generator(device="cuda").manual_seed(0)
    x = torch.empty(m, n, dtype=torch.float16, device=device) if dry else torch.randn(m, n, dtype=torch.float16, device=device, generator=gen)
    w = torch.empty(n, dtype=torch.float16, device=device) if dry else torch.rand(n, dtype=torch.float16, device=device, generator=gen) + 0.5
    traffic = {"copy": 2 * m * n * 2, "softmax": 2 * m * n * 2, "rms_norm": 2 * m * n * 2 + n * 2 + m * 4}
    references = {} if dry else {
        "copy": x.float(),
        "softmax": torch.softmax(x.float(), dim=-1),
        "rms_norm": F.rms_norm(x.float(), (n,), w.float(), 1e-6),
    }
    notes: dict[str, str] = {}
    timers: dict[str, Callable[[], float]] = {}
    variants = [(int(r), int(t)) for r, t in (v.split("x") for v in opts.variants.split(","))]
    found = candidates(x, w, variants)
    for name, candidate in found.items():
        try:
            if dry:
                if candidate.lower is not None:
                    candidate.lower()
                raise NotLaunched("lowered for sm_90a; not launched (dry run)" if candidate.lower else "not launched (dry run)")
            ref = references[candidate.op]
            err = relative_error(candidate.result(), ref)
            if err > 1e-2:
                raise NotLaunched(f"WRONG RESULT (relative error {err:.1e}); not timed")
            notes[name] = f"rel err {err:.1e}"
            timers[name] = cuda_batch(candidate.call, opts.per_batch)
        except Exception as exc:
            notes[name] = short(exc)
    times = interleaved(timers, opts.rounds)
    device = "dry run" if dry else torch.cuda.get_device_name()
    hbm = hbm_bytes_per_s(device)
    head = ["case", "op", "ms", f"% of {hbm / 1e12:g} TB/s" if hbm else "% of HBM (unknown GPU)", "of copy", "vs torch", "note"]
    lines = [f"norms: {m} x {n} fp16, {device}, torch {torch.__version__}",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    bars = {"copy": times.get("torch copy_"), "softmax": times.get("torch.softmax"), "rms_norm": times.get("F.rms_norm")}
    copies = [t for name, t in times.items() if found[name].op == "copy" and isinstance(t, float)]
    copy_bandwidth = traffic["copy"] / min(copies) if copies else None
    for name, candidate in found.items():
        op, ms = candidate.op, times.get(name)
        ok = isinstance(ms, float)
        bar = bars[op]
        cells = [
            name, op, f"{ms:.4f}" if ok else "-",
            f"{100 * traffic[op] / hbm * 1e3 / ms:.0f}%" if ok and hbm else "-",
            f"{100 * traffic[op] / ms / copy_bandwidth:.0f}%" if ok and copy_bandwidth else "-",
            f"{bar / ms:.2f}x" if ok and isinstance(bar, float) else "-",
            notes.get(name, "") if not isinstance(ms, Exception) else short(ms),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines), flush=True)
    if opts.out:
        Path(opts.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
