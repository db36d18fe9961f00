"""Flash attention, forward and backward: tltyped's tuned examples against torch SDPA.

B=8, H=32, S=4096, D=128, fp16, causal and not (by default). tltyped's kernel
takes BSHD tensors; torch.nn.functional.scaled_dot_product_attention takes
BHSD, so it gets its own contiguous BHSD copies and neither side pays for a
transpose. Each kernel is checked against SDPA (relative Frobenius error)
before it is timed; the two sides are then timed in interleaved rounds (each
round one TileLang do_bench median of each, L2 flushed; the median round
counts), so a GPU drifting under its power cap weighs on both alike, and
TFLOP/s count 4*B*H*S*S*D flops (half of that when causal). The first call
of tltyped's kernel tunes it (every candidate built and timed); its time is
shown, and the tuning result is saved in the disk cache.

The backward rows (unless --no-backward) time the backward alone, the same
way on both sides: `torch.autograd.grad(out, (q, k, v), dout,
retain_graph=True)` of SDPA's output and of examples/flash_attention_backward.py's
`flash_attention` (its registered backward: the Delta, main and dQ-cast
kernels of `attention_backward`), 10*B*H*S*S*D flops (half when causal).
Each side's dQ, dK, dV are compared with SDPA's in fp32 (relative
Frobenius error, listed dQ/dK/dV); the first call's time includes tuning
the backward.

    python3 benchmarks/attention.py [--shape 8,32,4096,128] [--rounds 5] [--no-backward] [--out table.md]
"""

import argparse
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from _timing import interleaved, relative_error  # also puts the checkout on sys.path


def side_by_side(sdpa, ours, rounds: int) -> tuple[float, float]:
    """SDPA's and tltyped's milliseconds, timed in `rounds` interleaved rounds of a TileLang do_bench each."""
    from tilelang.profiler import do_bench

    times = interleaved({side: (lambda fn=fn: float(do_bench(fn, warmup=100, rep=500, return_mode="median")))
                         for side, fn in (("sdpa", sdpa), ("ours", ours))}, rounds)
    sdpa_ms, ours_ms = times["sdpa"], times["ours"]
    for value in (sdpa_ms, ours_ms):
        if isinstance(value, Exception):
            raise value
    return float(sdpa_ms), float(ours_ms)


def backward_rows(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, flash_attention, configs: int,
                  rounds: int) -> list[str]:
    """The backward alone, timed the same way for SDPA (BHSD leaves) and tltyped (BSHD leaves)."""
    b, s, h, d = q.shape
    flops = 10 * b * h * s * s * d * (0.5 if causal else 1.0)
    mask = "causal" if causal else "none"
    dout = torch.randn_like(q)
    leaves32 = [x.float().transpose(1, 2).requires_grad_() for x in (q, k, v)]
    ref = torch.autograd.grad(F.scaled_dot_product_attention(*leaves32, is_causal=causal), leaves32,
                              dout.float().transpose(1, 2))
    ref = [x.transpose(1, 2) for x in ref]
    del leaves32

    def errors(grads) -> str:
        return "/".join(f"{relative_error(g, r):.1e}" for g, r in zip(grads, ref))

    leaves_h = [x.transpose(1, 2).contiguous().requires_grad_() for x in (q, k, v)]
    dout_h = dout.transpose(1, 2).contiguous()
    out_h = F.scaled_dot_product_attention(*leaves_h, is_causal=causal)
    sdpa_grads = [x.transpose(1, 2) for x in torch.autograd.grad(out_h, leaves_h, dout_h, retain_graph=True)]
    leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    out = flash_attention(*leaves, causal=causal)
    start = time.perf_counter()
    grads = torch.autograd.grad(out, leaves, dout, retain_graph=True)
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    worst = max(relative_error(g, r) for g, r in zip(grads, ref))
    if worst > 1e-2:
        return [f"| {mask}, backward | tltyped | - | - | - | {errors(grads)} | {first:.1f} | WRONG RESULT: not timed |"]
    sdpa_ms, ours = side_by_side(lambda: torch.autograd.grad(out_h, leaves_h, dout_h, retain_graph=True),
                                 lambda: torch.autograd.grad(out, leaves, dout, retain_graph=True), rounds)
    return [f"| {mask}, backward | torch SDPA | {sdpa_ms:.3f} | {flops / sdpa_ms / 1e9:.0f} | 1.00 | "
            f"{errors(sdpa_grads)} | - | default backend |",
            f"| {mask}, backward | tltyped (tuned over {configs}) | {ours:.3f} | {flops / ours / 1e9:.0f} | "
            f"{sdpa_ms / ours:.2f} | {errors(grads)} | {first:.1f} | Delta + main + dQ cast |"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="8,32,4096,128", help="B,H,S,D")
    parser.add_argument("--causal", default="false,true", help="which masks to run")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the median counts")
    parser.add_argument("--backward", action=argparse.BooleanOptionalAction, default=True, help="also time the backward")
    parser.add_argument("--out", help="also write the table as markdown to this path")
    opts = parser.parse_args()
    from examples.flash_attention import CONFIGS, attention
    from examples.flash_attention_backward import CONFIGS as BACKWARD_CONFIGS
    from examples.flash_attention_backward import flash_attention

    b, h, s, d = (int(x) for x in opts.shape.split(","))
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    qh, kh, vh = (x.transpose(1, 2).contiguous() for x in (q, k, v))
    lines = [f"attention B{b} H{h} S{s} D{d} fp16; {torch.cuda.get_device_name()}, torch {torch.__version__}", "",
             "| mask | who | ms | TFLOP/s | vs SDPA | rel. error | first call s | note |", "|---|---|---|---|---|---|---|---|"]
    for causal in (c.strip() == "true" for c in opts.causal.split(",")):
        flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
        mask = "causal" if causal else "none"
        ref = F.scaled_dot_product_attention(qh, kh, vh, is_causal=causal)
        start = time.perf_counter()
        out = attention(q, k, v, causal)
        torch.cuda.synchronize()
        first = time.perf_counter() - start
        err = relative_error(out.transpose(1, 2), ref)
        if err > 1e-2:
            lines.append(f"| {mask} | tltyped | - | - | - | {err:.2e} | {first:.1f} | WRONG RESULT: not timed |")
            continue
        sdpa_ms, ours = side_by_side(lambda: F.scaled_dot_product_attention(qh, kh, vh, is_causal=causal),
                                     lambda: attention(q, k, v, causal), opts.rounds)
        info = attention.cache_info()
        lines.append(f"| {mask} | torch SDPA | {sdpa_ms:.3f} | {flops / sdpa_ms / 1e9:.0f} | 1.00 | - | - | default backend |")
        lines.append(f"| {mask} | tltyped (tuned over {len(CONFIGS)}) | {ours:.3f} | {flops / ours / 1e9:.0f} | "
                     f"{sdpa_ms / ours:.2f} | {err:.1e} | {first:.1f} | {info} |")
        if opts.backward:
            lines += backward_rows(q, k, v, causal, flash_attention, len(BACKWARD_CONFIGS), opts.rounds)
    print("\n".join(lines))
    if opts.out:
        Path(opts.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
