"""The cached call of one kernel from several source trees, before and after a change, in alternating fresh processes.

Each round starts one process per tree, in turn; the process imports
tltyped and `examples/add.py` from that tree, checks one result of each of
its kernels against torch and times three calls, each its median over 5
interleaved rounds of the best of 3 loops of 20,000 calls: the cached
out-parameter `add(A, B, C)` (3 fp16 tensors of 128), the cached allocating
`scale(X, 1.5)` (128 fp32 in, a new tensor out) and torch `A + B`. Each call's ratio to torch `A + B` is taken within its process, and
the table gives medians over rounds. Alternating fresh processes spread a
drifting host over every tree alike; `--cpu N` pins them to one core. A tree is a checkout or an exported commit, e.g.
`git archive 393bbc2 tltyped examples | tar -x -C /tmp/before`. Needs a GPU.

    python3 benchmarks/compare_trees.py /tmp/before . [--rounds 6] [--cpu 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(tree: str) -> None:
    """In the child: time the tree's cached add, its allocating scale and torch A + B; print the three in us."""
    sys.path.insert(0, tree)
    import torch

    from _timing import best_per_call, interleaved, make_loop
    from examples.add import add, scale

    a, b = (torch.randn(128, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.full_like(a, float("nan"))
    x = torch.randn(128, device="cuda")
    add(a, b, c)
    y = scale(x, 1.5)
    torch.cuda.synchronize()
    assert torch.equal(c, a + b), "the tree's add computed a wrong result"
    assert torch.allclose(y, x * 1.5), "the tree's scale computed a wrong result"
    sync = torch.cuda.synchronize
    def timer(stmt: str) -> Callable[[], float]:
        loop = make_loop(stmt, {"add": add, "scale": scale, "A": a, "B": b, "C": c, "X": x})
        loop(2000)
        return lambda: best_per_call(loop, 20000, 3, sync) * 1e6

    times = interleaved({stmt: timer(stmt) for stmt in ("add(A, B, C)", "scale(X, 1.5)", "A + B")}, 5)
    print(*times.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", help="source trees holding tltyped/ and examples/")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--cpu", type=int, help="pin every process to this core")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        return measure(opts.child)
    trees = [str(Path(t).resolve()) for t in opts.trees]
    pin = ["taskset", "-c", str(opts.cpu)] if opts.cpu is not None else []
    results: dict[str, list[list[float]]] = {t: [] for t in trees}
    for _ in range(opts.rounds):
        for index, tree in enumerate(trees):  # each tree its own kernel cache: no tree loads another's build
            env = {**os.environ, "TLTYPED_CACHE_DIR": str(Path(tempfile.gettempdir()) / f"tltyped-compare-{index}")}
            run = subprocess.run([*pin, sys.executable, __file__, "--child", tree], env=env, cwd=HERE,
                                 capture_output=True, text=True)
            if run.returncode:
                sys.exit(f"{tree}: the measuring process failed:\n{run.stderr}")
            results[tree].append([float(t) for t in run.stdout.split()[-3:]])
    lines = ["| tree | add(A, B, C) us per round | median | vs A + B | scale(X, 1.5) us, median | vs A + B "
             "| torch A + B us, median |", "|---|---|---|---|---|---|---|"]
    for tree, rows in results.items():
        median = [statistics.median(r[i] for r in rows) for i in range(3)]
        ratio = [statistics.median(r[i] / r[2] for r in rows) for i in range(2)]
        lines.append(f"| {tree} | {' '.join(f'{r[0]:.2f}' for r in rows)} | {median[0]:.2f} | {ratio[0]:.3f} | "
                     f"{median[1]:.2f} | {ratio[1]:.3f} | {median[2]:.2f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
