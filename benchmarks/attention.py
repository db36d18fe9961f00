"""Flash attention forward: tltyped's tuned examples/flash_attention.py against torch SDPA.

B=8, H=32, S=4096, D=128, fp16, causal and not (by default). tltyped's kernel
takes BSHD tensors; torch.nn.functional.scaled_dot_product_attention takes
BHSD, so it gets its own contiguous BHSD copies and neither side pays for a
transpose. Each kernel is checked against SDPA (relative Frobenius error)
before it is timed; times are TileLang's do_bench medians (L2 flushed), and
TFLOP/s count 4*B*H*S*S*D flops (half of that when causal). The first call
of tltyped's kernel tunes it (every candidate built and timed); its time is
shown, and the tuning result is saved in the disk cache.

    python3 benchmarks/attention.py [--shape 8,32,4096,128] [--out table.md]
"""

import argparse
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(1, str(ROOT))


def bench(fn) -> float:
    from tilelang.profiler import do_bench

    return float(do_bench(fn, warmup=100, rep=500, return_mode="median"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="8,32,4096,128", help="B,H,S,D")
    parser.add_argument("--causal", default="false,true", help="which masks to run")
    parser.add_argument("--out", help="also write the table as markdown to this path")
    opts = parser.parse_args()
    from examples.flash_attention import CONFIGS, attention

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
        sdpa_ms = bench(lambda: F.scaled_dot_product_attention(qh, kh, vh, is_causal=causal))
        lines.append(f"| {mask} | torch SDPA | {sdpa_ms:.3f} | {flops / sdpa_ms / 1e9:.0f} | 1.00 | - | - | default backend |")
        start = time.perf_counter()
        out = attention(q, k, v, causal)
        torch.cuda.synchronize()
        first = time.perf_counter() - start
        err = float((out.transpose(1, 2).double() - ref.double()).norm() / ref.double().norm())
        if err > 1e-2:
            lines.append(f"| {mask} | tltyped | - | - | - | {err:.2e} | {first:.1f} | WRONG RESULT: not timed |")
            continue
        ours = bench(lambda: attention(q, k, v, causal))
        info = attention.cache_info()
        lines.append(f"| {mask} | tltyped (tuned over {len(CONFIGS)}) | {ours:.3f} | {flops / ours / 1e9:.0f} | "
                     f"{sdpa_ms / ours:.2f} | {err:.1e} | {first:.1f} | {info} |")
    print("\n".join(lines))
    if opts.out:
        Path(opts.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
