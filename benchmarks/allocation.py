"""What a kernel that returns its output costs per call, and the allocation inside it.

One process, side by side (best of 5 loops of 20,000 calls, one sync per
loop): tltyped's cached call of an allocating add (`T.empty`, 128 fp16),
torch `A + B`, the launcher's allocation alone (`empty_outputs`, no launch),
each both ways a launcher allocates (tltyped's helper on torch's C++
allocator, and the fallback through torch's DLPack exchange API), and torch's
own allocation functions called from Python. Needs a GPU.

    python3 benchmarks/allocation.py
"""

import torch

from _timing import best_per_call, make_loop  # first: it puts the checkout on sys.path
import _startup_kernels as kernels
from tltyped.backend.torch_direct import torch_empty


def main() -> None:
    a = torch.randn(128, device="cuda", dtype=torch.float16)
    b = torch.randn(128, device="cuda", dtype=torch.float16)
    assert torch.equal(kernels.add(a, b), a + b)
    launcher = kernels.add.compile(a, b).module
    sync = torch.cuda.synchronize

    def time(stmt: str, **names: object) -> float:
        loop = make_loop(stmt, names)
        loop(1000)
        sync()
        return best_per_call(loop, 20000, 5, sync) * 1e6

    def both_ways(what: str, stmt: str, **names: object) -> dict[str, float]:
        launcher.set_allocator(None)
        fallback = time(stmt, **names)
        launcher.set_allocator(torch_empty())
        return {what: time(stmt, **names), f"{what}, DLPack fallback": fallback}

    rows = {
        **both_ways("tltyped add, allocating (cached call)", "f(A, B)", f=kernels.add, A=a, B=b),
        "torch A + B": time("A + B", A=a, B=b),
        **both_ways("launcher's allocation alone (empty_outputs)", "e(p, p, n, 0, 0)", e=launcher.empty_outputs, p=a.data_ptr(), n=128),
        "torch.empty((128,), dtype, device)": time("E((128,), dtype=d, device=v)", E=torch.empty, d=torch.float16, v=a.device),
        "torch.empty_strided": time("E((128,), (1,), dtype=d, device=v)", E=torch.empty_strided, d=torch.float16, v=a.device),
        "torch.empty_like": time("E(A)", E=torch.empty_like, A=a),
    }
    base = rows["torch A + B"]
    for what, us in rows.items():
        print(f"{what:60s} {us:6.2f} us  {us / base:.2f}x torch A + B")


if __name__ == "__main__":
    main()
