"""The generated parser's own cost, measured without a GPU.

A cached tltyped call is the generated fast path (one `facts` call reading
every tensor's pointer, signature and sizes, the key lookup, the dim and
alignment checks) followed by the C launch. This times the fast path alone:
the three kernels of dispatch.py are decorated (nothing is compiled), their
fast paths are rebuilt with `build_fast_path` around a cache holding a no-op
launch under the key of CPU tensors, and each is called in a loop three
ways: as `@tl.jit` makes it, the whole cached call in C (`CachedCall`, where
the C facts build here); the same reached through the generated function
that forwards to it (what a machine's first process holds: its kernels were
defined before the C helper was built); the generated Python function with
the C `tensor_facts`; and the same with `python_facts`. A change to the template,
the key or the facts shows up here, in CI, with no device. Every call must
hit: a miss raises. Case (a) is timed once more with four watched globals
(what a body reading globals makes each call check, as
examples/flash_attention.py's does), and once with the guard its own
fingerprint gives it (a body reading no global: its function's code and
defaults).

So that the nanoseconds can be read, the same run times the pieces too:
`facts(...)` alone, a key lookup, the no-op launch stand-in, a plain Python
call, and torch's own accessors (`t.data_ptr()`, `t.shape`, ...) that a
pure-Python parser would be made of. "parser" is the fast path minus the
launch stand-in. CPU tensors report device -1 and stream 0, so on a GPU the
facts cost a little more (the current-stream lookup): compare CPU runs with
CPU runs.

    python benchmarks/parser_cpu.py [--calls 100000] [--loops 5]
"""

# No `from __future__ import annotations`: see dispatch.py's kernels.

import argparse
import sys
from collections.abc import Callable
from typing import Any

import torch

from _timing import best_per_call, make_loop
from dispatch import CASES, Inputs, tltyped_kernels


def noop_launch(*args: Any) -> None:
    """The cache entry's launch, doing nothing."""


class Case:
    """One kernel's fast path, rebuilt around our own cache, counter and slow path."""

    def __init__(
        self, name: str, fn: Any, args: dict[str, Any], facts: Callable[..., tuple[Any, ...]] | None, in_c: bool,
        forwarded: bool, watched: tuple[Any, ...] = (),
    ) -> None:
        from tltyped.callpath import tensors
        from tltyped.callpath.fastpath import build_fast_path

        self.name = name
        self.args = list(args.values())
        self.signature = fn.signature
        self.cache: dict[Any, Any] = {}
        native = tensors.native
        if forwarded:  # built as if the helper were not built yet, then given it, as the first call gives it
            tensors.native = lambda: None
        try:
            path = build_fast_path(fn._dispatcher.plan, fn.fast_path_source, self.cache, self._slow, facts, in_c)
        finally:
            tensors.native = native
        path.read_with(facts or tensors.tensor_facts())
        path.guard_with(watched)
        self.key, self.fast, self.hits = path.key, path.call, path.hits
        self.key_value = self.key(*self.args)
        self.launch_args = self._launch_args()
        self.cache[self.key_value] = noop_launch

    def _slow(self, *args: Any) -> None:
        raise AssertionError(f"{self.signature.name}: the fast path missed its cache (it must hit here)")

    def _launch_args(self) -> tuple[Any, ...]:
        """Call once through a recording launch: the parser must pass what the launcher expects."""
        seen: list[tuple[Any, ...]] = []
        self.cache[self.key_value] = lambda *a: seen.append(a)
        self.fast(*self.args)
        expected = [v.data_ptr() if isinstance(v, torch.Tensor) else v for v in self.args]
        expected += [len(self.args[0])] * len(self.signature.dyn_dims)  # every dyn dim here is the length
        expected += [0, -1]  # stream, device: CPU tensors
        tensors = [v for v in self.args if isinstance(v, torch.Tensor)]  # last: the launch bumps those it writes
        launched, given = list(seen[0][:len(expected)]), seen[0][len(expected):]
        if launched != expected or len(given) != len(tensors) or any(g is not t for g, t in zip(given, tensors)):
            raise AssertionError(f"{self.name}: the fast path launched with {seen[0]}, expected {tuple(expected)} "
                                 "and the tensors")
        return seen[0]

    def calls_made(self) -> int:
        return self.hits()


def time_ns(stmt: str, names: dict[str, Any], opts: argparse.Namespace) -> float:
    """ns per call; a loop is up to --calls calls, fewer for slow statements (about 50 ms a loop)."""
    loop = make_loop(stmt, names)
    estimate = best_per_call(loop, 1000, 1, lambda: None)  # also the warm-up
    calls = max(1000, min(opts.calls, int(0.05 / max(estimate, 1e-9))))
    return best_per_call(loop, calls, opts.loops, lambda: None) * 1e9


def call(fn: str, values: list[Any]) -> tuple[str, dict[str, Any]]:
    names = {f"x{i}": v for i, v in enumerate(values)}
    return f"{fn}({', '.join(names)})", names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000, help="calls per timed loop, at most (fewer for slow calls)")
    parser.add_argument("--loops", type=int, default=5, help="timed loops; the best counts")
    opts = parser.parse_args()

    from tltyped.callpath.tensors import load_helpers, python_facts
    from tltyped.frontend.fingerprint import Watch, fingerprint

    helper = load_helpers()
    variants: dict[str, tuple[Any, bool, bool]] = {
        "C path": (None, True, False), "C path, forwarded": (None, True, True), "C facts": (helper.facts, False, False),
        "Python facts": (python_facts, False, False),
    } if helper is not None else {"Python facts (the C facts did not build)": (python_facts, False, False)}
    inputs = Inputs("cpu")
    kernels = tltyped_kernels()

    rows: list[tuple[str, str, float]] = []
    parser_ns: dict[tuple[str, str], float] = {}
    launch_ns: dict[str, float] = {}
    made = 0
    # (e)'s calls are recorded by autograd, never the fast path's; (f)'s route leads to a fast path like (a)'s, the
    # route itself timed by dispatch.py
    for name in (c for c in CASES if c not in ("e", "f")):
        cases = {v: Case(name, kernels[name], inputs.args[name], *how) for v, how in variants.items()}
        first = next(iter(cases.values()))
        tensors = sum(isinstance(v, torch.Tensor) for v in first.args)
        stmt, names = call("f", first.args)
        launch_stmt, launch_names = call("f", list(first.launch_args))
        launch = launch_ns[name] = time_ns(launch_stmt, {"f": noop_launch, **launch_names}, opts)
        for variant, case in cases.items():
            fast = time_ns(stmt, {"f": case.fast, **names}, opts)
            parser_ns[(name, variant)] = fast - launch
            rows.append((name, f"fast path {case.signature.name}(...), {tensors} tensors, {variant}", fast))
            rows.append((name, "  parser alone (minus the launch stand-in)", fast - launch))
            made += case.calls_made()
        rows.append((name, f"  launch stand-in: no-op Python function of {len(launch_names)} arguments", launch))
        rows.append((name, f"  a no-op Python function of the same {len(names)} arguments", time_ns(stmt, {"f": noop_launch, **names}, opts)))
        ranks = bytes(t.dim() for t in first.args if isinstance(t, torch.Tensor))
        tensor_names = {f"t{i}": t for i, t in enumerate(t for t in first.args if isinstance(t, torch.Tensor))}
        for variant, (facts, _, _) in variants.items():
            if facts is None:
                continue
            rows.append((name, f"  facts(ranks, {tensors} tensors) alone, {variant}",
                         time_ns(f"facts(ranks, {', '.join(tensor_names)})", {"facts": facts, "ranks": ranks, **tensor_names}, opts)))

    # guards: a kernel whose body reads globals, each call checking that each still holds its object
    # (flash_attention.py's body and helpers read four); and the guard its own fingerprint gives a kernel reading
    # no global and no helper (its function's code and defaults)
    own = fingerprint(kernels["a"]._dispatcher.fn).watched
    guards = {
        "4 watched": (tuple(Watch(globals(), name, globals()[name]) for name in ("Case", "noop_launch", "time_ns", "call")),
                      "4 watched globals"),
        "own": (own, f"its own fingerprint's guard ({len(own)} watched)"),
    }
    for guard, (watched, shown) in guards.items():
        for variant, how in variants.items():
            guarded = Case("a", kernels["a"], inputs.args["a"], *how, watched=watched)
            stmt, names = call("f", guarded.args)
            guarded_ns = time_ns(stmt, {"f": guarded.fast, **names}, opts)
            parser_ns[(f"a, {guard}", variant)] = guarded_ns - (parser_ns[("a", variant)] + launch_ns["a"])
            rows.append(("a", f"fast path, {shown}, {variant}", guarded_ns))
            made += guarded.calls_made()

    a = Case("a", kernels["a"], inputs.args["a"], *next(iter(variants.values())))
    t = a.args[0]
    pieces = {
        f"cache[key] ({len(a.key_value)}-item key, hit)": ("cache[k]", {"cache": a.cache, "k": a.key_value}),
        "t.data_ptr()": ("t.data_ptr()", {}),
        "tuple(t.shape)": ("tuple(t.shape)", {}),
        "n, = t.shape": ("n, = t.shape", {}),
        "t.dtype": ("t.dtype", {}),
        "t.get_device()": ("t.get_device()", {}),
        "t.is_contiguous()": ("t.is_contiguous()", {}),
        "t.stride()": ("t.stride()", {}),
        "empty loop step (harness)": ("pass", {}),
    }
    for what, (stmt, names) in pieces.items():
        rows.append(("-", what, time_ns(stmt, {"t": t, **names}, opts)))

    print(f"parser_cpu: {opts.calls} calls x best of {opts.loops}, CPU tensors; "
          f"python {sys.version.split()[0]}, torch {torch.__version__}")
    width = max(len(w) for _, w, _ in rows)
    print(f"{'case':4s}  {'what':{width}s}  {'ns/call':>8s}")
    for case_name, what, ns in rows:
        print(f"{case_name:4s}  {what:{width}s}  {ns:8.0f}")
    for variant in variants:
        per_tensor = (parser_ns[("c", variant)] - parser_ns[("a", variant)]) / 5
        print(f"{variant}: parser (a) {parser_ns[('a', variant)]:.0f} ns, (b) {parser_ns[('b', variant)]:.0f} ns, "
              f"(c) {parser_ns[('c', variant)]:.0f} ns; per extra tensor ((c)-(a))/5 {per_tensor:.0f} ns; "
              f"4 watched globals add {parser_ns[('a, 4 watched', variant)]:.0f} ns to (a), its own fingerprint's guard "
              f"{parser_ns[('a, own', variant)]:.0f} ns")
    print(f"fast-path calls made: {made}, all hits")


if __name__ == "__main__":
    main()
