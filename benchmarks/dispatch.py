"""Host cost of a launch-bound call: tltyped against torch, TileLang, Triton and a C floor.

Every kernel here works on 128 fp16 elements (one block), so the GPU work is
negligible and the time per call is the cost of getting from Python to a
launch. Three cases separate the fixed cost from the per-argument cost:

  (a) C = A + B          3 tensors          (the anchors' case)
  (b) B = A * alpha      2 tensors, a dyn float
  (c) h = a + ... + g    8 tensors
  (d) C = A + B          2 tensors in, the output allocated by the call and returned; also inside a
                         torch.compile'd function (tltyped's kernel as an op, beside torch's A + B
                         compiled), and wrapped by hand in torch.library.custom_op
  (e) C = A + B          as (d), with A requiring grad: autograd records the call (the kernel has a
                         registered backward), beside torch's A + B and the hand-wrapped custom_op with
                         torch.library.register_autograd
  (f) C = A + B          as (a), written as TileLang's own kernels are: the tensors' dtype chosen in the
                         body from a const argument (`wide`), passed on every call, so the call is routed
                         (resolved per const value) before it reaches a fast path

Every competitor is built, called once (its result checked against torch)
and warmed up first; then the rows are timed in ROUNDS interleaved rounds,
each round timing every row in turn as the best of LOOPS loops of CALLS
calls with one torch.cuda.synchronize at the end of each loop. A row's
figure is its median over rounds, so a host that drifts during the run
(clocks settling after the compiles) weighs on every row alike. Figures are
compared as ratios to torch `A + B` measured in the same run (absolute times
drift between hosts). The C floor (launch_floor.cu, no Python) is built with nvcc here and
run as a subprocess.

    python3 benchmarks/dispatch.py [--calls 20000] [--loops 3] [--rounds 5] [--out table.md]

Without a GPU (or with --dry-run) every kernel is still built, for sm_90a, and
torch is timed on the CPU, so the whole script runs; nothing else is launched.
"""

# No `from __future__ import annotations`: tltyped reads the annotations of the
# kernels below as objects, and they refer to a TypeVar local to a function.

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, TypeVar

import torch

from _timing import NotLaunched, best_per_call, interleaved, make_loop, short

SIZE = 128  # elements: one block of 128 threads
ALPHA = 1.5
HERE = Path(__file__).resolve().parent
DRY_TARGET = "sm_90a"
CASES = {
    "a": "C = A + B, 3 fp16 tensors", "b": "B = A * alpha, 2 tensors + dyn float", "c": "h = a+b+..+g, 8 tensors",
    "d": "C = A + B, C allocated and returned", "e": "C = A + B returned, A requiring grad (autograd records it)",
    "f": "C = A + B, dtype from a const (routed)",
}


@dataclass
class Bench:
    """One competitor's timed call: a statement, the names it uses, and what to check."""

    stmt: str
    names: dict[str, Any]
    out: Optional[torch.Tensor] = None  # zeroed, then compared with `expected` after the first call
    expected: Optional[torch.Tensor] = None
    after: Optional[Callable[[], str]] = None  # a note computed once timing is done


@dataclass
class Row:
    case: str
    who: str
    call: str
    us: Optional[float] = None
    first_s: Optional[float] = None
    note: str = ""


class Inputs:
    """The arguments of each case, by parameter name, and the result torch expects."""

    def __init__(self, device: str) -> None:
        gen = torch.Generator().manual_seed(0)
        xs = [torch.randn(SIZE, generator=gen).to(device, torch.float16) for _ in range(7)]
        out = torch.zeros(SIZE, device=device, dtype=torch.float16)
        self.out = out
        self.args: dict[str, dict[str, Any]] = {
            "a": {"A": xs[0], "B": xs[1], "C": out},
            "b": {"A": xs[0], "B": out, "alpha": ALPHA},
            "c": {**dict(zip("abcdefg", xs)), "h": out},
            "d": {"A": xs[0], "B": xs[1]},
            "e": {"A": xs[0].clone().requires_grad_(), "B": xs[1]},
            "f": {"A": xs[0], "B": xs[1], "C": out, "wide": False},
        }
        total = xs[0]
        for x in xs[1:]:
            total = total + x
        self.expected = {"a": xs[0] + xs[1], "b": xs[0] * ALPHA, "c": total, "d": xs[0] + xs[1], "e": xs[0] + xs[1], "f": xs[0] + xs[1]}

    def call(self, case: str, fn: str = "fn_", extra: str = "") -> str:
        return f"{fn}({', '.join(self.args[case])}{extra})"


def on_meta(args: dict[str, Any]) -> list[Any]:
    return [v.detach().to("meta") if isinstance(v, torch.Tensor) else v for v in args.values()]


# -- competitors: each returns a Bench, or raises (NotLaunched in a dry run) --------------


def tltyped_kernels() -> dict[str, Any]:
    """The three kernels, written with tltyped's signature form and a dyn length N."""
    import tltyped as tl
    import tltyped.language as T

    N = TypeVar("N", bound=tl.dyn[int])
    F16 = tl.Tensor[tl.float16, N]

    @tl.jit
    def add(A: F16, B: F16, C: F16):
        (n,) = A.shape
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    C[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]

    @tl.jit
    def scale(A: F16, B: F16, alpha: tl.dyn[float]):
        (n,) = A.shape
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    B[bx * 128 + i] = A[bx * 128 + i] * alpha

    @tl.jit
    def add7(a: F16, b: F16, c: F16, d: F16, e: F16, f: F16, g: F16, h: F16):
        (n,) = a.shape
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                j = bx * 128 + i
                if j < n:
                    h[j] = a[j] + b[j] + c[j] + d[j] + e[j] + f[j] + g[j]

    def make_add_new() -> Any:  # (d) and (e) each have their own, so that each row's cache counts are its own
        @tl.jit
        def add_new(A: F16, B: F16) -> F16:
            (n,) = A.shape
            C = T.empty((n,), tl.float16)
            with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
                for i in T.Parallel(128):
                    if bx * 128 + i < n:
                        C[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]
            return C

        return add_new

    recorded = make_add_new()
    recorded.register_autograd(lambda ctx, grad: (grad, grad))

    @tl.jit
    def add_routed(A, B, C, wide=False):
        n = T.dynamic("n")
        dtype = T.float32 if wide else T.float16
        A: T.Tensor((n,), dtype)
        B: T.Tensor((n,), dtype)
        C: T.Tensor((n,), dtype)
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    C[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]

    return {"a": add, "b": scale, "c": add7, "d": make_add_new(), "e": recorded, "f": add_routed}


def tltyped_lazy_kernels() -> dict[str, Any]:
    """Cases (a) and (d) in TileLang's lazy style: a factory whose kernel objects take the fast path too."""
    import tltyped as tl
    import tltyped.language as T

    @tl.jit
    def add(n):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float16), B: T.Tensor((n,), T.float16), C: T.Tensor((n,), T.float16)):
            with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
                for i in T.Parallel(128):
                    if bx * 128 + i < n:
                        C[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]

        return main

    add_new = tl.jit(out_idx=[-1])(add.__wrapped__)
    return {"a": add(T.dynamic("n")), "d": add_new(T.dynamic("n"))}


def tilelang_kernels(target: Any) -> dict[str, Any]:
    """The same kernels with TileLang 0.1.15's `@tilelang.jit`, annotations in the body."""
    import tilelang
    import tilelang.language as T

    jit = tilelang.jit(target=target, execution_backend="tvm_ffi")

    @jit
    def add(A, B, C):
        N = T.dynamic("N")
        A: T.Tensor[[N], T.float16]
        B: T.Tensor[[N], T.float16]
        C: T.Tensor[[N], T.float16]
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    C[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]

    @jit
    def scale(A, B, alpha):
        N = T.dynamic("N")
        A: T.Tensor[[N], T.float16]
        B: T.Tensor[[N], T.float16]
        alpha: T.float32
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    B[bx * 128 + i] = A[bx * 128 + i] * alpha

    @jit
    def add7(a, b, c, d, e, f, g, h):
        N = T.dynamic("N")
        a: T.Tensor[[N], T.float16]
        b: T.Tensor[[N], T.float16]
        c: T.Tensor[[N], T.float16]
        d: T.Tensor[[N], T.float16]
        e: T.Tensor[[N], T.float16]
        f: T.Tensor[[N], T.float16]
        g: T.Tensor[[N], T.float16]
        h: T.Tensor[[N], T.float16]
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    j = bx * 128 + i
                    h[j] = a[j] + b[j] + c[j] + d[j] + e[j] + f[j] + g[j]

    @jit
    def add_new(A, B):
        N = T.dynamic("N")
        A: T.Tensor[[N], T.float16]
        B: T.Tensor[[N], T.float16]
        C = T.empty([N], T.float16)
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < N:
                    C[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]
        return C

    return {"a": add, "b": scale, "c": add7, "d": add_new}


class Competitors:
    """Builds each competitor's Bench; kernels are defined once and shared between cases."""

    def __init__(self, inputs: Inputs, dry_run: bool) -> None:
        self.inputs = inputs
        self.dry_run = dry_run
        self._tltyped: Optional[dict[str, Any]] = None
        self._tltyped_lazy: Optional[dict[str, Any]] = None
        self._tilelang: Optional[dict[str, Any]] = None

    def _bench(self, case: str, fn: Any, after: Optional[Callable[[], str]] = None) -> Bench:
        """`fn_(args...)`, checked against torch (`fn_`: case (c) has a parameter named `f`).

        In cases (d) and (e) the output is what the call returns: checked after timing, by one more call.
        """
        inp = self.inputs
        if case not in ("d", "e"):
            return Bench(inp.call(case), {"fn_": fn, **inp.args[case]}, inp.out, inp.expected[case], after)

        def check_returned() -> str:
            returned = fn(*inp.args[case].values())
            wrong = check(Bench("", {}, returned.detach(), inp.expected[case]))
            if case == "e" and returned.grad_fn is None:
                wrong = "; ".join(n for n in (wrong, "NOT RECORDED by autograd") if n)
            return "; ".join(n for n in (wrong, after() if after else "") if n)

        return Bench(inp.call(case), {"fn_": fn, **inp.args[case]}, after=check_returned)

    def tltyped(self, case: str) -> Bench:
        if self._tltyped is None:
            self._tltyped = tltyped_kernels()
        fn = self._tltyped[case]
        if self.dry_run:
            fn.compile(*on_meta(self.inputs.args[case]))
            raise NotLaunched(f"compiled for {DRY_TARGET}; not launched (dry run)")

        def cache_note() -> str:
            info = fn.cache_info()
            slow = f"; SLOW PATH TAKEN {info.misses - 1} extra times" if info.misses > 1 else ""
            if case == "e":  # autograd's calls are the slow path's, by design: recorded by the kernel's op's formula
                slow = "; every recorded call is the slow path's"
            return f"hits={info.hits} misses={info.misses}{slow}{facts_note()}{path_note(fn)}"

        return self._bench(case, fn, after=cache_note)

    def tltyped_lazy(self, case: str) -> Bench:
        if self._tltyped_lazy is None:
            self._tltyped_lazy = tltyped_lazy_kernels()
        kernel = self._tltyped_lazy[case]
        if self.dry_run:
            kernel.compile()
            raise NotLaunched(f"compiled for {DRY_TARGET}; not launched (dry run)")
        return self._bench(case, kernel)

    def compiled(self, who: str) -> Bench:
        """(d) called inside a `torch.compile`d function (inductor, fullgraph): tltyped's kernel, one op in the
        graph, beside torch's own `A + B` compiled the same way."""
        if self.dry_run:
            raise NotLaunched("torch.compile runs on the GPU; not run (dry run)")
        if who == "tltyped":
            kernel = tltyped_kernels()["d"]  # its own kernel: tracing takes its slow path, not the (d) row's
            return self._bench("d", torch.compile(lambda A, B: kernel(A, B), fullgraph=True, dynamic=False))
        return self._bench("d", torch.compile(lambda A, B: A + B, fullgraph=True, dynamic=False))

    def custom_op(self, case: str) -> Bench:
        """(d) tltyped's kernel wrapped by hand in `torch.library.custom_op` with a fake implementation, called
        eagerly: what a user writes today to get a kernel into torch.compile, and what it costs every call;
        (e) the same with the backward given to `torch.library.register_autograd`."""
        kernel = tltyped_kernels()["d"]
        if self.dry_run:
            raise NotLaunched("not launched (dry run)")

        @torch.library.custom_op(f"tltyped_bench::add_new_{case}", mutates_args=())
        def add_new(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
            return kernel(A, B)

        @add_new.register_fake
        def _(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
            return torch.empty_like(A)

        add_new.register_autograd(lambda ctx, grad: (grad, grad))
        return self._bench(case, add_new)

    def _tilelang_jit(self, case: str) -> Any:
        if self._tilelang is None:
            self._tilelang = tilelang_kernels({"kind": "cuda", "arch": DRY_TARGET} if self.dry_run else None)
        return self._tilelang[case]

    def tilelang_jit(self, case: str) -> Bench:
        fn = self._tilelang_jit(case)
        if self.dry_run:
            fn.compile(*self.inputs.args[case].values())
            raise NotLaunched(f"compiled for {DRY_TARGET}; not launched (dry run)")
        return self._bench(case, fn)

    def tilelang_kernel(self, case: str) -> Bench:
        kernel = self._tilelang_jit(case).compile(*self.inputs.args[case].values())
        if self.dry_run:
            raise NotLaunched(f"compiled ({type(kernel).__name__}); not launched (dry run)")
        return self._bench(case, kernel)

    def triton(self, case: str) -> Bench:
        import triton

        import _triton_kernels

        kernel = _triton_kernels.KERNELS[case]
        if self.dry_run:
            from triton.backends.compiler import GPUTarget
            from triton.compiler import ASTSource

            source = ASTSource(kernel, _triton_kernels.SIGNATURES[case], {"BLOCK": 128})
            triton.compile(source, target=GPUTarget("cuda", 90, 32))
            raise NotLaunched(f"compiled for sm_90 (triton {triton.__version__}); not launched (dry run)")
        names = {"k_": kernel, "grid_": (triton.cdiv(SIZE, 128),), "n_": SIZE, **self.inputs.args[case]}
        stmt = self.inputs.call(case, "k_[grid_]", ", n_, BLOCK=128")
        return Bench(stmt, names, self.inputs.out, self.inputs.expected[case])

    def torch_op(self, case: str, stmt: str, check: bool = True) -> Bench:
        names = dict(self.inputs.args[case], torch=torch)
        if not check:
            return Bench(stmt, names)
        return Bench(stmt, names, self.inputs.out, self.inputs.expected[case])


def facts_note() -> str:
    """Which tensor-facts reader tltyped's fast path uses: the C one, or the much slower Python fallback."""
    try:
        from tltyped.callpath import tensors as facts
    except Exception:
        return ""
    return "; facts=Python FALLBACK" if facts.tensor_facts() is facts.python_facts else "; facts=C"


def path_note(fn: Any) -> str:
    """Which call the jit function is: the C cached call, the generated function handing each call to one (a kernel
    defined before the C helper was built, in a machine's first process), or the generated function alone."""
    if type(fn).__name__ == "CachedCall":
        return "; C cached call"
    fast_path = getattr(getattr(fn, "_dispatcher", None), "fast_path", None)
    if fast_path is None:  # a router: its calls reach a fast path of their specialisation's
        return ""
    return "; generated, forwarding to the C cached call" if fast_path.c_call() is not None else "; generated Python"


def noop(*args: Any) -> None:
    """The harness row's callee: what a Python call with these arguments costs by itself."""


def plan(c: Competitors) -> list[tuple[str, str, str, Callable[[], Bench]]]:
    """(case, who, call, build) for every row, in table order."""
    rows: list[tuple[str, str, str, Callable[[], Bench]]] = [
        ("a", "harness", "no-op Python function f(A, B, C)", lambda: Bench(c.inputs.call("a"), {"fn_": noop, **c.inputs.args["a"]})),
        ("a", "torch", "A + B (allocates)", lambda: c.torch_op("a", "A + B", check=False)),
        ("a", "torch", "torch.add(A, B, out=C)", lambda: c.torch_op("a", "torch.add(A, B, out=C)")),
        ("b", "torch", "torch.mul(A, alpha, out=B)", lambda: c.torch_op("b", "torch.mul(A, alpha, out=B)")),
        ("d", "torch", "A + B (allocates)", lambda: c.torch_op("d", "A + B", check=False)),
        ("e", "torch", "A + B (A requires grad)", lambda: c.torch_op("e", "A + B", check=False)),
    ]
    for case in CASES:
        shown = c.inputs.call(case, "f")
        if case == "d":  # Triton kernels take their output as an argument
            rows += [
                (case, "tltyped", f"@tl.jit {shown}", lambda case=case: c.tltyped(case)),
                (case, "tltyped lazy", f"lazy-style kernel object {c.inputs.call(case, 'k')}", lambda case=case: c.tltyped_lazy(case)),
                (case, "TileLang jit", f"@tilelang.jit {shown}", lambda case=case: c.tilelang_jit(case)),
                (case, "TileLang kernel", f"kernel object (tvm-ffi) {c.inputs.call(case, 'k')}", lambda case=case: c.tilelang_kernel(case)),
                (case, "tltyped compiled", "torch.compile(lambda A, B: f(A, B))(A, B)", lambda: c.compiled("tltyped")),
                (case, "torch compiled", "torch.compile(lambda A, B: A + B)(A, B)", lambda: c.compiled("torch")),
                (case, "custom_op", "f wrapped in torch.library.custom_op (+ fake) by hand", lambda: c.custom_op("d")),
            ]
            continue
        if case == "f":
            rows.append((case, "tltyped", f"@tl.jit {shown}, routed by `wide`", lambda: c.tltyped("f")))
            continue
        if case == "e":
            rows += [
                (case, "tltyped", f"@tl.jit {shown}, its backward registered", lambda: c.tltyped("e")),
                (case, "custom_op", "f in torch.library.custom_op (+ fake, register_autograd) by hand", lambda: c.custom_op("e")),
            ]
            continue
        rows += [
            (case, "tltyped", f"@tl.jit {shown}", lambda case=case: c.tltyped(case)),
            *([(case, "tltyped lazy", f"lazy-style kernel object {c.inputs.call(case, 'k')}", lambda case=case: c.tltyped_lazy(case))]
              if case == "a" else []),
            (case, "TileLang jit", f"@tilelang.jit {shown}", lambda case=case: c.tilelang_jit(case)),
            (case, "TileLang kernel", f"kernel object (tvm-ffi) {c.inputs.call(case, 'k')}", lambda case=case: c.tilelang_kernel(case)),
            (case, "Triton", f"@triton.jit {c.inputs.call(case, 'k[(1,)]', ', n, BLOCK=128')}", lambda case=case: c.triton(case)),
        ]
    order = {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4, "f": 5}
    return sorted(rows, key=lambda r: order[r[0]])  # stable: within a case, the order above


# -- running ---------------------------------------------------------------------------------


def prepare_row(case: str, who: str, call: str, build: Callable[[], Bench], opts: argparse.Namespace,
                sync: Callable[[], None]) -> tuple[Row, Optional[Callable[[int], None]], Optional[Bench]]:
    """Build a row's competitor, make its first call (timed: a compile or a disk-cache load) and check it, warm up.

    Returns the row and, where it can be timed, its loop and bench.
    """
    row = Row(case, who, call)
    try:
        bench = build()
    except NotLaunched as exc:
        row.note = str(exc)
        return row, None, None
    except Exception as exc:
        row.note = f"n/a ({short(exc)})"
        return row, None, None
    try:
        loop = make_loop(bench.stmt, bench.names)
        if bench.out is not None:
            bench.out.zero_()
        sync()
        start = time.perf_counter()
        loop(1)  # the first call: compiles (or loads from a disk cache) where the competitor does
        sync()
        row.first_s = time.perf_counter() - start
        row.note = check(bench)
        loop(opts.warmup)
        sync()
    except Exception as exc:
        row.note = f"n/a ({short(exc)})"
        return row, None, None
    return row, loop, bench


def time_rows(timed: list[tuple[Row, Callable[[int], None], Bench]], opts: argparse.Namespace,
              sync: Callable[[], None]) -> None:
    """Each row's `us`: the median over interleaved rounds of its best loop; then its notes."""
    def timer(loop: Callable[[int], None]) -> Callable[[], float]:
        return lambda: best_per_call(loop, opts.calls, opts.loops, sync) * 1e6

    figures = interleaved({id(row): timer(loop) for row, loop, _ in timed}, opts.rounds)
    for row, _, bench in timed:
        figure = figures[id(row)]
        if isinstance(figure, Exception):
            row.note = f"n/a ({short(figure)})"
            continue
        row.us = figure
        try:
            notes = [row.note, bench.after() if bench.after is not None else ""]
        except Exception as exc:
            notes = [row.note, f"n/a ({short(exc)})"]
        row.note = "; ".join(n for n in notes if n)


def check(bench: Bench) -> str:
    if bench.out is None or bench.expected is None:
        return ""
    out, expected = bench.out.float(), bench.expected.float()
    if torch.allclose(out, expected, rtol=1e-2, atol=5e-2):  # fp16 sums, rounded in different orders
        return ""
    return f"WRONG RESULT (max abs err {(out - expected).abs().max().item():.3g})"


def launch_floor(opts: argparse.Namespace) -> list[Row]:
    """Build launch_floor.cu with nvcc and run it: the same add launched from C++, three ways."""
    labels = {
        "runtime": "C++ add<<<1, 128>>>, no Python",
        "driver": "C++ cuLaunchKernel, no Python",
        "tilelang": "C++ cudaLaunchKernelEx+PDL+checks (tltyped's C side)",
    }
    try:
        nvcc = shutil.which("nvcc") or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
        if opts.dry_run:
            arch = DRY_TARGET
        else:
            major, minor = torch.cuda.get_device_capability()
            arch = f"sm_{major}{minor}{'a' if major >= 9 else ''}"
        with tempfile.TemporaryDirectory(prefix="launch-floor-") as tmp:
            exe = os.path.join(tmp, "launch_floor")
            build = subprocess.run(
                [nvcc, "-O3", f"-arch={arch}", "-o", exe, str(HERE / "launch_floor.cu")],
                capture_output=True, text=True, timeout=300,
            )
            if build.returncode != 0:
                raise RuntimeError(f"nvcc failed: {(build.stderr or build.stdout).strip()[-300:]}")
            if opts.dry_run:
                return [Row("a", "C floor", label, note=f"built for {arch}; not run (dry run)") for label in labels.values()]
            run = subprocess.run([exe, str(opts.calls), str(opts.loops * opts.rounds)], capture_output=True, text=True, timeout=300)
            if run.returncode != 0:
                raise RuntimeError(f"launch_floor exited {run.returncode}: {run.stderr.strip()[-300:]}")
    except Exception as exc:
        return [Row("a", "C floor", "launch_floor.cu", note=f"n/a ({short(exc)})")]
    times = {}
    for line in run.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "launch":
            times[parts[1]] = float(parts[2])
    return [Row("a", "C floor", label, us=times.get(way), note="" if way in times else "n/a (no figure)") for way, label in labels.items()]


# -- reporting -------------------------------------------------------------------------------


def find(rows: list[Row], case: str, who: str, call_prefix: str = "") -> Optional[float]:
    for row in rows:
        if row.case == case and row.who == who and row.call.startswith(call_prefix) and row.us is not None:
            return row.us
    return None


def summary(rows: list[Row]) -> list[str]:
    lines = []
    for who in ("tltyped", "TileLang jit", "TileLang kernel", "Triton"):
        a, c = find(rows, "a", who), find(rows, "c", who)
        cost = f"{(c - a) / 5:.3f} us" if a is not None and c is not None else "n/a"
        lines.append(f"per extra tensor ((c)-(a))/5, {who}: {cost}")
    base, beside, allocating = find(rows, "a", "torch", "A + B"), find(rows, "d", "torch", "A + B"), find(rows, "d", "tltyped")
    if base is not None and beside is not None and allocating is not None:
        lines.append(f"tltyped (d), allocating its output, vs torch A + B: {allocating / base:.2f}x "
                     f"({allocating / beside:.2f}x against (d)'s own torch row)")
    torch_e, recorded, by_hand = find(rows, "e", "torch", "A + B"), find(rows, "e", "tltyped"), find(rows, "e", "custom_op")
    if torch_e is not None and recorded is not None and by_hand is not None:
        lines.append(f"tltyped (e), a call autograd records, vs torch A + B requiring grad: {recorded / torch_e:.2f}x "
                     f"(the custom_op wrapped by hand: {by_hand / torch_e:.2f}x)")
    ours, routed = find(rows, "a", "tltyped"), find(rows, "f", "tltyped")
    if ours is not None and routed is not None:
        lines.append(f"tltyped (f), routed by a const, above (a): {routed - ours:.2f} us ({routed / ours:.2f}x)")
    for row in rows:
        if row.who == "C floor":
            if ours is not None and row.us is not None:
                lines.append(f"tltyped (a) above {row.call}: {ours - row.us:.2f} us ({ours / row.us:.2f}x)")
            else:
                lines.append(f"tltyped (a) above {row.call}: n/a")
    return lines


def table(rows: list[Row], base: Optional[float], markdown: bool) -> list[str]:
    def cells(row: Row) -> list[str]:
        us = f"{row.us:.2f}" if row.us is not None else "-"
        ratio = f"{row.us / base:.2f}" if row.us is not None and base else "-"
        first = f"{row.first_s:.3f}" if row.first_s is not None else "-"
        return [row.case, row.who, row.call, us, ratio, first, row.note]

    head = ["case", "who", "call", "us/call", "vs A+B", "1st call s", "note"]
    body = [cells(r) for r in rows]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return lines + ["| " + " | ".join(c.replace("|", "\\|") for c in cells_) + " |" for cells_ in body]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head) - 1)]
    fmt = lambda cs: "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(cs, widths))) + "  " + cs[-1]
    return [fmt(head)] + [fmt(r) for r in body]


def environment(dry_run: bool) -> str:
    parts = [f"python {sys.version.split()[0]}", f"torch {torch.__version__}"]
    for mod in ("tilelang", "triton"):
        try:
            parts.append(f"{mod} {__import__(mod).__version__}")
        except Exception:
            parts.append(f"{mod} missing")
    parts.append("DRY RUN (no GPU): nothing launched but torch on CPU" if dry_run else torch.cuda.get_device_name())
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=None, help="calls per timed loop (20000; 2000 in a dry run)")
    parser.add_argument("--loops", type=int, default=3, help="timed loops per round; the best counts")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the median counts")
    parser.add_argument("--warmup", type=int, default=1000, help="calls before timing")
    parser.add_argument("--out", help="also write the table as markdown to this path")
    parser.add_argument("--dry-run", action="store_true", help="build everything, launch nothing (implied without a GPU)")
    parser.add_argument("--fresh-cache", action="store_true", help="empty kernel caches, so first calls show compile time")
    opts = parser.parse_args()
    if not torch.cuda.is_available() and not opts.dry_run:
        print("no CUDA device: running as --dry-run", flush=True)
        opts.dry_run = True
    if opts.calls is None:
        opts.calls = 2000 if opts.dry_run else 20000
    if opts.fresh_cache:  # before tilelang is imported: it reads its cache directory once
        fresh = tempfile.mkdtemp(prefix="dispatch-cache-")
        os.environ["TILELANG_CACHE_DIR"] = os.path.join(fresh, "tilelang")
        os.environ["TLTYPED_CACHE_DIR"] = os.path.join(fresh, "tltyped")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(fresh, "triton")
    if opts.dry_run:
        os.environ.setdefault("TLTYPED_TARGET", DRY_TARGET)
    sync = torch.cuda.synchronize if not opts.dry_run else (lambda: None)

    competitors = Competitors(Inputs("cpu" if opts.dry_run else "cuda"), opts.dry_run)
    rows = launch_floor(opts)
    timed = []
    for case, who, call, build in plan(competitors):
        row, loop, bench = prepare_row(case, who, call, build, opts, sync)
        rows.append(row)
        if loop is not None and bench is not None:
            timed.append((row, loop, bench))
        first = f"{row.first_s:.3f} s" if row.first_s is not None else "-"
        print(f"[{case}] {who:16s} first call {first:>9s}  {row.note}", flush=True)
    time_rows(timed, opts, sync)

    base = find(rows, "a", "torch", "A + B")
    title = (f"dispatch: median of {opts.rounds} interleaved rounds of best of {opts.loops} x {opts.calls} calls; "
             f"{environment(opts.dry_run)}")
    legend = "; ".join(f"({k}) {v}" for k, v in CASES.items())
    print("\n" + title + "\n" + legend)
    print("\n".join(table(rows, base, markdown=False)))
    print("\n".join(summary(rows)))
    if opts.out:
        text = [f"# {title}", "", legend, "", *table(rows, base, markdown=True), "", *(f"- {s}" for s in summary(rows))]
        Path(opts.out).write_text("\n".join(text) + "\n")
        print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
