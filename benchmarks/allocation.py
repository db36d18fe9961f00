"""What a kernel that returns its output costs per call, and the allocation inside it.

One process, side by side: tltyped's cached call of an allocating add
(`T.empty`, 128 fp16), torch `A + B`, the launcher's allocation alone
(`empty_outputs`, no launch), each both ways a launcher allocates (tltyped's
helper on torch's C++ allocator, and the fallback through torch's DLPack
exchange API), and torch's own allocation functions called from Python. The
rows are timed in interleaved rounds (each the best of 3 loops of 20,000
calls, one sync per loop); a row's figure is its median over rounds. Needs a
GPU.

    python3 benchmarks/allocation.py [--rounds 7]
"""

import argparse
from collections.abc import Callable
from typing import Any

import torch

from _timing import best_per_call, interleaved, make_loop  # first: it puts the checkout on sys.path
import _startup_kernels as kernels
from tltyped.callpath.torch_direct import torch_empty


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    opts = parser.parse_args()
    a = torch.randn(128, device="cuda", dtype=torch.float16)
    b = torch.randn(128, device="cuda", dtype=torch.float16)
    assert torch.equal(kernels.add(a, b), a + b)
    launcher = kernels.add.compile(a, b).module
    sync = torch.cuda.synchronize

    def timer(stmt: str, before: Callable[[], object] = lambda: None, **names: Any) -> Callable[[], float]:
        """Times `stmt`, after `before()` each time (which sets how the launcher allocates)."""
        loop = make_loop(stmt, names)
        before()
        loop(1000)
        sync()

        def time() -> float:
            before()
            return best_per_call(loop, 20000, 3, sync) * 1e6

        return time

    def both_ways(what: str, stmt: str, **names: Any) -> dict[str, Callable[[], float]]:
        helper, fallback = torch_empty(), None  # the fallback: torch's DLPack exchange API
        return {what: timer(stmt, lambda: launcher.set_allocator(helper), **names),
                f"{what}, DLPack fallback": timer(stmt, lambda: launcher.set_allocator(fallback), **names)}

    rows = interleaved({
        **both_ways("tltyped add, allocating (cached call)", "f(A, B)", f=kernels.add, A=a, B=b),
        "torch A + B": timer("A + B", A=a, B=b),
        **both_ways("launcher's allocation alone (empty_outputs)", "e(p, p, n, 0, 0)", e=launcher.empty_outputs, p=a.data_ptr(), n=128),
        "torch.empty((128,), dtype, device)": timer("E((128,), dtype=d, device=v)", E=torch.empty, d=torch.float16, v=a.device),
        "torch.empty_strided": timer("E((128,), (1,), dtype=d, device=v)", E=torch.empty_strided, d=torch.float16, v=a.device),
        "torch.empty_like": timer("E(A)", E=torch.empty_like, A=a),
    }, opts.rounds)
    launcher.set_allocator(torch_empty())
    base = rows["torch A + B"]
    assert isinstance(base, float), base
    print(f"allocation: median of {opts.rounds} interleaved rounds of best of 3 x 20000 calls")
    for what, us in rows.items():
        print(f"{what:60s} {us:6.2f} us  {us / base:.2f}x torch A + B" if isinstance(us, float) else f"{what:60s} n/a ({us})")


if __name__ == "__main__":
    main()
