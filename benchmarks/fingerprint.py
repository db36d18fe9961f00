"""What a new specialisation costs before anything is built: reading the values its kernel is built from.

Each call that misses the cache (a new shape, a new const, a warm process's
first call) reads the jit function's fingerprint (frontend/fingerprint.py):
its code, closures, the globals and helpers it reaches, by value. This
times `fingerprint(fn)` for the examples' kernels, in fresh processes that
alternate between source trees (a checkout, or a commit exported with
`git archive <commit> tltyped examples | tar -x -C DIR`): the first read in
the process, and the median of later reads. No GPU is needed; the table
gives each tree's milliseconds (the median over rounds) and the ratio of the
first tree's to each.

    python3 benchmarks/fingerprint.py /tmp/before . [--rounds 3] [--reads 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

KERNELS = {  # module -> the jit functions timed
    "examples.flash_attention": ("attention_lse",),
    "examples.flash_attention_backward": ("attention_backward",),
    "examples.gemm_fp8": ("scaled_mm",),
    "examples.rms_norm": ("rms_norm",),
}


def measure(tree: str, reads: int) -> None:
    """In the child: the first and the median later `fingerprint` of each kernel, in ms, as JSON on stdout."""
    import importlib
    import time

    sys.path.insert(0, tree)
    from tltyped.frontend.fingerprint import fingerprint

    times: dict[str, list[float]] = {}
    for module_name, names in KERNELS.items():
        module = importlib.import_module(module_name)
        for name in names:
            fn = getattr(module, name)._dispatcher.fn
            laps = []
            for _ in range(1 + reads):
                start = time.perf_counter()
                fingerprint(fn)
                laps.append((time.perf_counter() - start) * 1e3)
            times[name] = [laps[0], statistics.median(laps[1:])]
    print(json.dumps(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="*")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure(args.measure, args.reads)
    env = {**os.environ, "TLTYPED_TARGET": os.environ.get("TLTYPED_TARGET", "sm_90a")}
    results: dict[str, list[dict[str, list[float]]]] = {tree: [] for tree in args.trees}
    for _ in range(args.rounds):
        for tree in args.trees:
            root = str(Path(tree).resolve())
            out = subprocess.run([sys.executable, __file__, "--measure", root, "--reads", str(args.reads)],
                                 env={**env, "PYTHONPATH": root}, check=True, capture_output=True, text=True)
            results[tree].append(json.loads(out.stdout.splitlines()[-1]))
    first_tree = args.trees[0]
    print(f"fingerprint ms, median of {args.rounds} rounds (fresh processes, alternating trees); ratio: "
          f"{first_tree}'s ms / this tree's")
    print("| kernel | read | " + " | ".join(f"{t} ms | ratio" for t in args.trees) + " |")
    print("|---|---|" + "---|---|" * len(args.trees))
    for name in results[first_tree][0]:
        for index, read in enumerate(("first", "later")):
            ms = {t: statistics.median(r[name][index] for r in results[t]) for t in args.trees}
            cells = " | ".join(f"{ms[t]:.2f} | {ms[first_tree] / ms[t]:.1f}x" for t in args.trees)
            print(f"| {name} | {read} | {cells} |")


if __name__ == "__main__":
    main()
