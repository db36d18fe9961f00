"""Start-up costs a user feels: a new process whose kernels are all in the disk cache.

Each figure is measured in fresh processes (the best of --runs), all in one run:

  torch          `import torch`, CUDA initialised, one torch op: the baseline every program pays
  tltyped        the same, then `import tltyped` + defining the kernels + the first call of each
  C helpers      the cached call's and allocator's C helpers: compiled by the first call on a machine
                 (the cold process), loaded from the disk cache afterwards; importing tltyped and
                 defining kernels compiles nothing
  first call     the first call of a kernel already in the disk cache (elaboration, lowering and
                 nvcc must not run: the launch record maps its specialisation to its build)
  tuned          the first call of a `tl.tune`d kernel whose tuning result is on disk (no candidate
                 rebuilt or re-timed)

A cold process (empty cache) runs first and fills the cache; its times are shown too. It also
fills a bytecode cache the warm processes share (PYTHONPYCACHEPREFIX), so they import modules
from bytecode, as from an installed package, even where the checkout is read-only.
Whether TileLang (and TVM) were imported by the warm processes is reported: they must not be.

    python3 benchmarks/startup.py [--runs 5] [--out table.md]

Without a GPU nothing is launched, so only the import and definition times are measured.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

PROBE = r'''
import json, sys, time
t0 = time.perf_counter()
import torch
gpu = torch.cuda.is_available()
if gpu:
    x = torch.randn(4096, device="cuda", dtype=torch.float16)
    (x + x).sum().item()
t1 = time.perf_counter()
out = {"torch": t1 - t0}
if {with_tltyped}:
    import tltyped
    import _startup_kernels as k
    t2 = time.perf_counter()
    out["define"] = t2 - t1
    from tltyped.callpath.tensors import load_helpers
    load_helpers()  # what a first call does before anything else
    t2b = time.perf_counter()
    out["helpers"] = t2b - t2
    t2 = t2b
    if gpu:
        a = torch.randn(1 << 16, device="cuda", dtype=torch.float16)
        y = k.add(a, a); torch.cuda.synchronize()
        t3 = time.perf_counter()
        assert torch.equal(y, a + a)
        X = torch.randn(4096, 64, device="cuda")
        s = k.row_sum(X); torch.cuda.synchronize()
        t4 = time.perf_counter()
        assert torch.allclose(s, X.sum(dim=1), rtol=1e-4, atol=1e-3)
        out.update(first_call=t3 - t2, tuned=t4 - t3, total=t4 - t0,
                   add=k.add.cache_info()._asdict(), row_sum=k.row_sum.cache_info()._asdict())
    out["tilelang"] = "tilelang" in sys.modules
    out["tvm"] = "tvm" in sys.modules or "tvm_ffi" in sys.modules
print("RESULT " + json.dumps(out))
'''


def probe(env: dict[str, str], with_tltyped: bool) -> dict[str, object]:
    code = PROBE.replace("{with_tltyped}", str(with_tltyped))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900, cwd=HERE)
    if run.returncode != 0:
        raise RuntimeError(run.stderr[-3000:])
    line = next(x for x in run.stdout.splitlines() if x.startswith("RESULT "))
    result: dict[str, object] = json.loads(line[len("RESULT "):])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="warm processes per figure; the best counts")
    parser.add_argument("--out", help="also write the table as markdown to this path")
    opts = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="startup-cache-")
    env = {**os.environ, "TLTYPED_CACHE_DIR": os.path.join(cache, "tltyped"),
           "TILELANG_CACHE_DIR": os.path.join(cache, "tilelang"),
           "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "PYTHONPYCACHEPREFIX": os.path.join(cache, "bytecode")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cold = probe(env, True)
    warm = [probe(env, True) for _ in range(opts.runs)]
    base = [probe(env, False) for _ in range(opts.runs)]

    def best(runs: list[dict[str, object]], name: str) -> float | None:
        values = [float(r[name]) for r in runs if name in r]  # type: ignore[arg-type]
        return min(values) if values else None

    torch_s = best(base, "torch")
    rows = [
        ("import torch + CUDA init + one op (baseline)", torch_s, None),
        ("import tltyped + define 2 kernels (warm)", best(warm, "define"), cold.get("define")),
        ("C helpers: built (cold) or loaded (warm), at the first call", best(warm, "helpers"), cold.get("helpers")),
        ("first call, kernel in the disk cache (warm)", best(warm, "first_call"), cold.get("first_call")),
        ("first call, tuned kernel, tuning on disk (warm)", best(warm, "tuned"), cold.get("tuned")),
        ("whole process: torch + tltyped + both first calls", best(warm, "total"), cold.get("total")),
    ]
    total = best(warm, "total")
    own = [best(warm, n) for n in ("define", "helpers", "first_call", "tuned")]
    lines = [f"startup: best of {opts.runs} fresh processes; python {sys.version.split()[0]}", "",
             "| what | warm s | cold s (empty cache) |", "|---|---|---|"]
    for what, warm_s, cold_s in rows:
        lines.append(f"| {what} | {warm_s:.3f} |" if warm_s is not None else f"| {what} | - |")
        lines[-1] += f" {float(cold_s):.3f} |" if cold_s is not None else " - |"  # type: ignore[arg-type]
    lines.append("")
    if None not in own:
        define, helpers, first, tuned = own
        start = define + helpers + first  # type: ignore[operator]
        lines.append(f"- tltyped's own warm start (import + define, then the first call): {start:.3f} s; "
                     f"with the tuned kernel's first call too: {start + tuned:.3f} s")  # type: ignore[operator]
    tilelang = sorted({bool(r.get("tilelang")) for r in warm})
    lines.append(f"- TileLang imported in warm processes: {tilelang}; TVM: {sorted({bool(r.get('tvm')) for r in warm})}")
    for name in ("add", "row_sum"):
        infos = [r.get(name) for r in warm if name in r]
        if infos:
            lines.append(f"- {name}.cache_info() in a warm process: {infos[-1]} (cold: {cold.get(name)})")
    print("\n".join(lines))
    if opts.out:
        Path(opts.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
