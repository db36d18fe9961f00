"""The cached call of one kernel from several source trees, before and after a change, in alternating fresh processes.

Each round starts one process per tree, in turn; the process imports
tltyped and `examples/add.py` from that tree (3 fp16 tensors of 128, an
out-parameter add), checks one result against torch and times the cached
call and torch `A + B`, best of 7 loops of 20,000 calls. Alternating fresh
processes spread a drifting host over every tree alike; `--cpu N` pins them
to one core. A tree is a checkout or an exported commit, e.g.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(tree: str) -> None:
    """In the child: time the tree's cached add and torch A + B, print both in us."""
    sys.path.insert(0, tree)
    import torch

    from _timing import best_per_call, make_loop
    from examples.add import add

    a, b, c = (torch.randn(128, device="cuda", dtype=torch.float16) for _ in range(3))
    add(a, b, c)
    torch.cuda.synchronize()
    assert torch.equal(c, a + b), "the tree's add computed a wrong result"
    sync = torch.cuda.synchronize
    times = []
    for stmt in ("add(A, B, C)", "A + B"):
        loop = make_loop(stmt, {"add": add, "A": a, "B": b, "C": c})
        loop(2000)
        times.append(best_per_call(loop, 20000, 7, sync) * 1e6)
    print(*times)


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
    results: dict[str, list[tuple[float, float]]] = {t: [] for t in trees}
    for _ in range(opts.rounds):
        for index, tree in enumerate(trees):  # each tree its own kernel cache: no tree loads another's build
            env = {**os.environ, "TLTYPED_CACHE_DIR": str(Path(tempfile.gettempdir()) / f"tltyped-compare-{index}")}
            run = subprocess.run([*pin, sys.executable, __file__, "--child", tree], env=env, cwd=HERE,
                                 capture_output=True, text=True)
            if run.returncode:
                sys.exit(f"{tree}: the measuring process failed:\n{run.stderr}")
            out = run.stdout.split()
            results[tree].append((float(out[-2]), float(out[-1])))
    lines = ["| tree | tltyped us per round | best | median | torch A + B us, median |", "|---|---|---|---|---|"]
    for tree, rows in results.items():
        ours = [r[0] for r in rows]
        lines.append(f"| {tree} | {' '.join(f'{t:.2f}' for t in ours)} | {min(ours):.2f} | "
                     f"{statistics.median(ours):.2f} | {statistics.median(r[1] for r in rows):.2f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
