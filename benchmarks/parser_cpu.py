"""The generated parser's own cost, measured without a GPU.

A cached tltyped call is the generated fast path (unpack shapes, build the
static key, look it up, read data pointers, check alignment) followed by the
C launch. This times the fast path alone: the three kernels of dispatch.py
are decorated (nothing is compiled), their fast paths are rebuilt with
`build_fast_path` around a cache holding a no-op launch under the key of CPU
(or meta) tensors, and each is called in a loop. A change to the template or
to the key shows up here, in CI, with no device.

So that the nanoseconds can be read, the same run also times the pieces the
parser is made of (`t.data_ptr()`, `t.shape`, a dict lookup, ...), the
generated `key` twin, and the stand-ins the cached call ends in (the no-op
launch, the stream function); "parser" is the fast path minus those stand-ins.
CPU tensors answer `get_device()` with -1 and `data_ptr()` a little faster
than CUDA ones, so compare runs with runs, not with GPU figures.

    python benchmarks/parser_cpu.py [--calls 100000] [--loops 5] [--device cpu|meta]
"""

# No `from __future__ import annotations`: see dispatch.py's kernels.

import argparse
import itertools
import sys
from typing import Any

import torch

from _timing import best_per_call, make_loop
from dispatch import CASES, Inputs, tltyped_kernels

STREAM = abs  # stands in for torch._C._cuda_getCurrentRawStream: a C function of the device index


def noop_launch(*args: Any) -> None:
    """The cache entry's launch, doing nothing."""


class Case:
    """One kernel's fast path, rebuilt around our own cache, stream and slow path."""

    def __init__(self, name: str, fn: Any, args: dict[str, Any]) -> None:
        from tltyped.codegen.fastpath import build_fast_path

        self.name = name
        self.args = args
        self.signature = fn.signature
        self.cache: dict[Any, Any] = {}
        self.hits = itertools.count()
        self.key, self.fast = build_fast_path(
            fn.signature, fn.fast_path_source, self.cache, self._slow, self.hits.__next__, STREAM
        )
        values = list(args.values())
        self.device = values[0].get_device()
        self.key_value = self.key(*values)
        self.launch_args = self._check_launch_args(values)
        self.cache[self.key_value] = (noop_launch, self.device)

    def _slow(self, *args: Any) -> None:
        raise AssertionError(f"{self.signature.name}: the fast path missed its cache (it must hit here)")

    def _check_launch_args(self, values: list[Any]) -> tuple[Any, ...]:
        """Call once through a recording launch: the parser must pass what the launcher expects."""
        seen: list[tuple[Any, ...]] = []
        self.cache[self.key_value] = (lambda *a: seen.append(a), self.device)
        self.fast(*values)
        expected = [v.data_ptr() if isinstance(v, torch.Tensor) else v for v in values]
        expected += [values[0].shape[0]] * len(self.signature.dyn_dims)  # every dyn dim here is the length
        expected += [STREAM(self.device), self.device]
        if list(seen[0]) != expected:
            raise AssertionError(f"{self.name}: the fast path launched with {seen[0]}, expected {tuple(expected)}")
        return seen[0]


def time_ns(stmt: str, names: dict[str, Any], opts: argparse.Namespace) -> float:
    loop = make_loop(stmt, names)
    loop(1000)
    return best_per_call(loop, opts.calls, opts.loops, lambda: None) * 1e9


def call(fn: str, n: int) -> str:
    return f"{fn}({', '.join(f'x{i}' for i in range(n))})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000, help="calls per timed loop")
    parser.add_argument("--loops", type=int, default=5, help="timed loops; the best counts")
    parser.add_argument("--device", default="cpu", choices=["cpu", "meta"], help="where the argument tensors live")
    opts = parser.parse_args()

    inputs = Inputs("cpu")
    kernels = tltyped_kernels()
    cases = {}
    for name in CASES:
        args = {k: v.to(opts.device) if isinstance(v, torch.Tensor) else v for k, v in inputs.args[name].items()}
        cases[name] = Case(name, kernels[name], args)

    rows = []  # (case, what, ns)
    results: dict[str, dict[str, float]] = {}
    for name, case in cases.items():
        values = {f"x{i}": v for i, v in enumerate(case.args.values())}
        launch = {f"x{i}": v for i, v in enumerate(case.launch_args)}
        r = results[name] = {
            "fast": time_ns(call("f", len(values)), {"f": case.fast, **values}, opts),
            "key": time_ns(call("f", len(values)), {"f": case.key, **values}, opts),
            "call": time_ns(call("f", len(values)), {"f": noop_launch, **values}, opts),
            "launch": time_ns(call("f", len(launch)), {"f": noop_launch, **launch}, opts),
            "stream": time_ns("s(d)", {"s": STREAM, "d": case.device}, opts),
        }
        r["parser"] = r["fast"] - r["launch"] - r["stream"]
        tensors = sum(isinstance(v, torch.Tensor) for v in case.args.values())
        rows += [
            (name, f"fast path {case.signature.name}(...), {tensors} tensors, no-op launch", r["fast"]),
            (name, "  parser alone (fast path - launch stand-in - stream stand-in)", r["parser"]),
            (name, "  the generated key(...) twin (unpack + key tuple)", r["key"]),
            (name, f"  a no-op Python function of the same {len(values)} arguments", r["call"]),
            (name, f"  launch stand-in: no-op Python function of {len(launch)} arguments", r["launch"]),
        ]
    hits = sum(next(c.hits) for c in cases.values())  # each count has advanced past every timed call

    a = cases["a"]
    t, (x, y, z) = a.args["A"], a.args.values()
    pieces = {
        "t.data_ptr()": ("t.data_ptr()", {}),
        "tuple(t.shape)": ("tuple(t.shape)", {}),
        "n, = t.shape": ("n, = t.shape", {}),
        "t.dtype": ("t.dtype", {}),
        "t.get_device()": ("t.get_device()", {}),
        "t.is_contiguous()": ("t.is_contiguous()", {}),
        "t.stride()": ("t.stride()", {}),
        f"cache[key] ({len(a.key_value)}-tuple key, hit)": ("cache[k]", {"cache": a.cache, "k": a.key_value}),
        f"build the (a) key tuple from 3 tensors": (
            "(x.dtype, x.get_device(), x.is_contiguous() or x.stride(), y.dtype, y.get_device(), "
            "y.is_contiguous() or y.stride(), z.dtype, z.get_device(), z.is_contiguous() or z.stride())",
            {"x": x, "y": y, "z": z},
        ),
        "stream stand-in abs(device)": ("s(d)", {"s": STREAM, "d": a.device}),
        "hit counter next()": ("h()", {"h": itertools.count().__next__}),
        "empty loop step (harness)": ("pass", {}),
    }
    for what, (stmt, names) in pieces.items():
        rows.append(("-", what, time_ns(stmt, {"t": t, **names}, opts)))

    print(f"parser_cpu: {opts.calls} calls x best of {opts.loops}, {opts.device} tensors; "
          f"python {sys.version.split()[0]}, torch {torch.__version__}")
    width = max(len(w) for _, w, _ in rows)
    print(f"{'case':4s}  {'what':{width}s}  {'ns/call':>8s}")
    for case_name, what, ns in rows:
        print(f"{case_name:4s}  {what:{width}s}  {ns:8.0f}")
    per_tensor = (results["c"]["parser"] - results["a"]["parser"]) / 5
    print(f"parser per extra tensor ((c)-(a))/5: {per_tensor:.0f} ns")
    print(f"parser, 3-tensor case (a): {results['a']['parser']:.0f} ns; fast-path calls made: {hits}, slow path: 0")


if __name__ == "__main__":
    main()
