"""Every example of TileLang, lowered on CPU twice: as written under TileLang, and migrated under tltyped.

    .venv/bin/python -m tests.upstream.corpus --write        # run every example, rewrite CORPUS.md
    .venv/bin/python -m tests.upstream.corpus FILE...       # some examples (paths under examples/), print results
    python -m tests.upstream.corpus --gpu OUT_DIR           # on a GPU host: run the examples for real through tltyped
    .venv/bin/python -m tests.upstream.corpus --tests --write  # TileLang's test files instead, rewrite CORPUS_TESTS.md

The unit is an example file of TileLang at COMMIT (`examples/**/*.py` less
`conftest.py` and the examples' own checks, `test_*.py`). Each is run from
its entry point (the `if __name__ == "__main__":` block, `sys.argv` holding
the file alone, so argparse takes its defaults) in two modes:

- "tilelang": the file as written, under TileLang, with compilation replaced
  by lowering (`tilelang.lower` for sm_90a): `tilelang.compile`,
  `@tilelang.jit`'s compile and `par_compile` lower the PrimFunc and hand
  back a `LoweredOnly` object; `@autotune` lowers its first configuration
  instead of compiling and timing them all.
- "tltyped": the file migrated (source.migrate: TileLang's jit and
  `@autotune` become tltyped's, `tilelang.language` becomes
  `tltyped.language`; example modules the file imports are migrated alike),
  with `tltyped.jit` (and what `tltyped.autotune` remakes) wrapped so that a
  call with tensors lowers instead of compiling and launching
  (`fn.lower(*args)`: a tuned kernel's first configuration), and a factory's
  kernel object lowers (`k.lower()`) when made. A call with no tensor at all
  (nothing puts it on the meta device) returns meta outputs from the lowered
  PrimFunc where the factory names them (`out_idx`), else stops the file
  after lowering (CpuOnly). A definition tltyped refuses at decoration fails
  where its kernel is first used (Refused), so the file's other kernels run.

In both modes CUDA is the meta device (MetaCuda): tensors have shapes and
dtypes but no data, so the example's own torch code runs shape-only, and a
kernel call returns meta tensors shaped from the lowered PrimFunc's outputs.
Timing (`do_bench`, a kernel's profiler) runs nothing and reports 1 ms.

Each (file, mode) runs in a child forked from this process once torch,
TileLang and tltyped are imported (importing them costs seconds; forking,
milliseconds), with a time limit, and reports a `Result`: the kernels
lowered, the first error, and where it happened:

- "lower": a kernel failed to build (elaboration or lowering; in tltyped mode
  any tltyped error, or any error from a call into tltyped's jit);
- "after": the file stopped after lowering kernels, at a step that needs
  data or a GPU (`.item()` of a meta tensor, `.cpu()`, CUDA events...): not a
  lowering failure;
- "before": it stopped before any kernel was built (an import, a missing
  package, arguments...); "timeout": it ran past the limit.

A file "lowers" when at least one kernel lowered and none failed. At most
CAP kernels are lowered per file (examples that sweep configurations would
otherwise lower hundreds); the file stops cleanly there.

With `--tests` the units are TileLang's own tests instead (CORPUS_TESTS.md):
each test function (`file::test`) of the files `tested_files` lists
(`testing/python/{language,issue,jit,kernel,cuda,tilelibrary}/test_*.py` that
mention `tilelang.jit`), run in both modes as above, except that the file is
loaded as a module (not `__main__`) and the test function is called with the
first value of each of its parametrize marks (`call_arguments`). A unit that
pytest would skip here (a skip mark, a true skipif, a `pytest.skip()`) or that
needs a fixture stops "before", and so is not lowered; skip marks for the
absence of a CUDA device are ignored, since CUDA is faked (an H200, compute
capability 9.0). In tltyped mode `Result.other` counts the kernels lowered by
TileLang's own `tilelang.compile`, which the migration keeps.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.abc
import importlib.machinery
import faulthandler
import io
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from tests.upstream.source import COMMIT, ENV, REPO, migrate, root

TARGET = {"kind": "cuda", "arch": "sm_90a"}
CAP = 8
"""Kernels lowered per file at most (the file then stops as if done)."""
TIMEOUT = 90.0
"""Seconds one file may run, per mode."""
CORPUS_MD = Path(__file__).with_name("CORPUS.md")
COMMAND = ".venv/bin/python -m tests.upstream.corpus --write"
CORPUS_TESTS_MD = Path(__file__).with_name("CORPUS_TESTS.md")
TESTS_COMMAND = ".venv/bin/python -m tests.upstream.corpus --tests --write"


# --- the corpus -------------------------------------------------------------------------------------------------


def examples_dir() -> Path:
    src = root()
    if src is None:
        raise FileNotFoundError(f"TileLang's sources: set {ENV}, or put them at ../shared/tilelang-a35008a")
    return src / "examples"


def example_files() -> list[str]:
    """Every example file, as a path relative to TileLang's root, sorted: examples/**/*.py less checks and conftests."""
    base = examples_dir()
    return sorted(
        str(p.relative_to(base.parent))
        for p in base.rglob("*.py")
        if p.name != "conftest.py" and not p.name.startswith("test_")
    )


# --- results ----------------------------------------------------------------------------------------------------


@dataclass
class Result:
    file: str  # relative to TileLang's root, e.g. examples/gemm/example_gemm.py
    mode: str  # "tilelang" | "tltyped"
    lowered: int = 0  # kernels lowered
    error: str | None = None  # the first error: "Type: message", one line
    phase: str | None = None  # None (ran to the end or to CAP), "lower", "after", "before", "timeout"
    seconds: float = 0.0
    other: int = 0  # tltyped mode: kernels built by TileLang itself (a `tilelang.compile` the migration keeps)
    stacks: str = ""  # a timed-out child's threads, where each waited (faulthandler's dump)

    @property
    def lowers(self) -> bool:
        return self.lowered > 0 and self.phase not in ("lower", "timeout")


def one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:limit]


# --- CUDA as the meta device ------------------------------------------------------------------------------------


class CpuOnly(RuntimeError):
    """A step that needs a GPU or data (raised where the harness knows one is reached)."""


class Enough(BaseException):
    """CAP kernels lowered: the file stops here, successfully (a BaseException, so examples' `except` don't catch it)."""


def _is_cuda(device: Any) -> bool:
    import torch

    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.split(":")[0] == "cuda"
    return isinstance(device, int) and not isinstance(device, bool)  # `.to(0)`, `device=0`: a CUDA ordinal


def meta_cuda_mode() -> Any:
    """A TorchFunctionMode under which CUDA is the meta device: `device="cuda"`, `.cuda()`, `.to("cuda")` -> meta."""
    import torch
    from torch.overrides import TorchFunctionMode

    class MetaCuda(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if func is torch.Tensor.cuda:
                return args[0].to("meta")
            if _is_cuda(kwargs.get("device")):
                kwargs["device"] = "meta"
            if func is torch.Tensor.to and len(args) > 1 and _is_cuda(args[1]):
                args = (args[0], "meta", *args[2:])
            return func(*args, **kwargs)

    return MetaCuda()


def meta(x: Any) -> Any:
    """`x` with every tensor in it moved to the meta device (a kernel's arguments)."""
    import torch

    if isinstance(x, torch.Tensor):
        return x if x.is_meta else x.to("meta")
    if isinstance(x, (list, tuple)):
        return type(x)(meta(v) for v in x)
    if isinstance(x, dict):
        return {k: meta(v) for k, v in x.items()}
    return x


def _fake_cuda() -> None:
    """torch.cuda as a CPU process sees an H200: queries answer, synchronisation does nothing."""
    import torch

    cuda = torch.cuda
    cuda.is_available = lambda: True  # type: ignore[assignment]
    cuda.device_count = lambda: 1  # type: ignore[assignment]
    cuda.current_device = lambda: 0  # type: ignore[assignment]
    cuda.get_device_capability = lambda device=None: (9, 0)  # type: ignore[assignment]
    cuda.get_device_name = lambda device=None: "NVIDIA H200 (meta)"  # type: ignore[assignment]
    for name in ("synchronize", "empty_cache", "set_device", "manual_seed", "manual_seed_all", "reset_peak_memory_stats"):
        setattr(cuda, name, lambda *a, **k: None)


# --- meta outputs of a lowered kernel ---------------------------------------------------------------------------


def _torch_dtype(dtype: Any) -> Any:
    import torch

    name = str(dtype)
    aliases = {"float8_e4m3": "float8_e4m3fn", "float8_e5m2": "float8_e5m2", "bool": "bool", "uint1": "bool"}
    name = aliases.get(name, name)
    found = getattr(torch, name, None)
    return found if isinstance(found, torch.dtype) else torch.uint8  # a dtype torch lacks (int4, fp4...): bytes


def meta_outputs(prim_func: Any, inputs: dict[int, Any], outputs: Sequence[int]) -> list[Any]:
    """Meta tensors for `prim_func`'s parameters `outputs`, dyn dims bound from the `inputs` (param index -> arg)."""
    import torch
    from tilelang import tvm

    params = list(prim_func.params)
    bound: dict[str, int] = {}
    for i, arg in inputs.items():
        buf = prim_func.buffer_map.get(params[i]) if i < len(params) else None
        if buf is None:
            if isinstance(arg, int) and i < len(params):
                bound[params[i].name] = arg
            continue
        if isinstance(arg, torch.Tensor) and arg.dim() == len(buf.shape):
            for dim, size in zip(buf.shape, arg.shape):
                if isinstance(dim, tvm.tirx.Var):
                    bound[dim.name] = int(size)

    def size(dim: Any) -> int:
        if hasattr(dim, "value"):
            return int(dim.value)
        if isinstance(dim, tvm.tirx.Var):
            return bound.get(dim.name, 1)
        try:  # an expression of dyn dims
            return int(tvm.arith.Analyzer().simplify(tvm.tirx.stmt_functor.substitute(dim, {
                v: tvm.tirx.IntImm(v.dtype, bound.get(v.name, 1)) for v in _vars(dim)
            })))
        except Exception:
            return 1

    out = []
    for i in outputs:
        buf = prim_func.buffer_map[params[i]]
        out.append(torch.empty([size(d) for d in buf.shape], dtype=_torch_dtype(buf.dtype), device="meta"))
    return out


def _vars(expr: Any) -> list[Any]:
    from tilelang import tvm

    found: list[Any] = []
    tvm.tirx.stmt_functor.post_order_visit(expr, lambda n: found.append(n) if isinstance(n, tvm.tirx.Var) else None)
    return found


def _returned(outputs: list[Any]) -> Any:
    return None if not outputs else outputs[0] if len(outputs) == 1 else outputs


class MetaProfiler:
    """A kernel's profiler with nothing to time: `do_bench` runs nothing and says 1 ms; checks pass vacuously."""

    def do_bench(self, *args: Any, **kwargs: Any) -> float:
        return 1.0

    def assert_allclose(self, *args: Any, **kwargs: Any) -> None:
        pass

    def manual_assert_close(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        raise CpuOnly(f"profiler.{name} needs a GPU")


def meta_do_bench(fn: Any = None, *args: Any, **kwargs: Any) -> float:
    """`do_bench` (TileLang's profiler, triton's): run `fn` once, shape-only, and say 1 ms."""
    if callable(fn):
        fn()
    return 1.0


# --- a run's bookkeeping ----------------------------------------------------------------------------------------


@dataclass
class Tally:
    lowered: int = 0
    other: int = 0  # of those, the kernels TileLang's own compile lowered
    failure: BaseException | None = None  # the first kernel that failed to build

    def lowering(self) -> None:
        """Called before each kernel is lowered: stops the file once CAP kernels are."""
        if self.lowered >= CAP:
            raise Enough()

    def failed(self, exc: BaseException) -> None:
        if self.failure is None:
            self.failure = exc


TALLY = Tally()


# --- TileLang, with compilation replaced by lowering ------------------------------------------------------------


class LoweredOnly:
    """What TileLang's compile returns here: the lowered kernel, callable with meta tensors for meta outputs."""

    def __init__(self, prim_func: Any, artifact: Any, out_idx: Any) -> None:
        self.prim_func = prim_func
        self.artifact = artifact
        n = len(prim_func.params)
        idx = [] if out_idx is None else [out_idx] if isinstance(out_idx, int) else list(out_idx)
        self.out_idx = [i % n for i in idx]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ins = [i for i in range(len(self.prim_func.params)) if i not in self.out_idx]
        return _returned(meta_outputs(self.prim_func, dict(zip(ins, args)), self.out_idx))

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        return str(self.artifact.kernel_source)

    def get_profiler(self, *args: Any, **kwargs: Any) -> MetaProfiler:
        return MetaProfiler()

    def __getattr__(self, name: str) -> Any:
        raise CpuOnly(f"JITKernel.{name} needs the compiled kernel")


def tilelang_lower(func: Any, out_idx: Any = None, *args: Any, pass_configs: Any = None, **kwargs: Any) -> LoweredOnly:
    """Replaces tilelang.cache.cached (where every TileLang compile ends): lower for TARGET, nothing more."""
    import tilelang
    from tilelang import tvm

    TALLY.lowering()
    configs = dict(func.attrs["tilelang_pass_configs"]) if func.attrs and "tilelang_pass_configs" in func.attrs else {}
    configs.update(pass_configs or {})
    try:
        with tvm.transform.PassContext(opt_level=3, config=configs), tvm.target.Target(TARGET):
            artifact = tilelang.lower(func, target=TARGET)
    except Exception as exc:
        TALLY.failed(exc)
        raise
    TALLY.lowered += 1
    TALLY.other += 1
    return LoweredOnly(func, artifact, out_idx)


def patch_tilelang() -> None:
    import tilelang
    import tilelang.autotuner.tuner as tuner
    import tilelang.cache
    import tilelang.profiler

    jit = sys.modules["tilelang.jit"]  # `import tilelang.jit as jit` gives the function tilelang.jit

    jit.cached = tilelang.cache.cached = tilelang_lower  # type: ignore[assignment]
    jit.par_compile = lambda funcs, out_idx=None, *a, ignore_error=False, **k: [  # type: ignore[assignment]
        jit.compile(f, out_idx=out_idx, pass_configs=k.get("pass_configs")) for f in funcs
    ]
    tilelang.profiler.do_bench = meta_do_bench  # type: ignore[assignment]
    original_compile = jit.JITImpl.compile

    def compile(self: Any, *args: Any, **kwargs: Any) -> Any:  # elaboration errors are the kernel's failures too
        try:
            return original_compile(self, *args, **kwargs)
        except Exception as exc:
            TALLY.failed(exc)
            raise

    jit.JITImpl.compile = compile  # type: ignore[method-assign]

    def first_config(self: Any, *args: Any, **kwargs: Any) -> Any:
        """AutoTuner.run: lower the first configuration (there is nothing to time)."""
        if callable(self.configs):
            k_args, k_kwargs = self._kernel_parameters
            self.configs = self.configs(*k_args, **dict(k_kwargs))
        config = dict(next(iter(self.configs)))
        config.pop("pass_configs", None)
        compile_fn, _ = self._ensure_jit_functions()
        return SimpleNamespace(kernel=compile_fn(**config), config=config, latency=1.0, ref_latency=1.0, func=None)

    tuner.AutoTuner.run = first_config  # type: ignore[method-assign]


# --- tltyped, lowering instead of launching ---------------------------------------------------------------------


def _entry(call: Callable[[], Any]) -> Any:
    """A call into tltyped: any error from it is the kernel's failure."""
    try:
        return call()
    except Enough:
        raise
    except Exception as exc:
        TALLY.failed(exc)
        raise


def _has_tensor(args: Sequence[Any]) -> bool:
    import torch

    return any(isinstance(a, torch.Tensor) for a in args)


class LoweringKernel:
    """A tltyped kernel object (a factory's result, or what `fn.compile` gives), lowered when made. A call with meta
    tensors is tltyped's own: it returns meta outputs; the profiler has nothing to time. A call with no tensor at
    all would run on the current CUDA device (no tensor puts it on meta): it returns meta outputs made from the
    lowered PrimFunc and the factory's `out_idx`, as TileLang's mode does (LoweredOnly), or, without an `out_idx`,
    stops the unit there (CpuOnly)."""

    def __init__(self, lower: Callable[[], Any], call: Callable[..., Any], out_idx: Any = None) -> None:
        TALLY.lowering()
        self.lowered = _entry(lower)
        TALLY.lowered += 1
        self.call = call
        self.out_idx = out_idx

    def __call__(self, *args: Any) -> Any:
        if not _has_tensor(args):
            if self.out_idx is None:
                raise CpuOnly("a kernel call with no tensor runs on the current CUDA device")
            return LoweredOnly(self.lowered.prim_func, self.lowered.artifact, self.out_idx)(*args)
        return _entry(lambda: self.call(*args))

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        return str(self.lowered.cuda_source)

    def get_profiler(self, *args: Any, **kwargs: Any) -> MetaProfiler:
        return MetaProfiler()

    def lower(self) -> Any:
        return self.lowered

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lowered, name)


class LoweringJit:
    """`tltyped.jit`'s function, lowering each kernel it is asked for: a call with tensors lowers it (`fn.lower`)
    and returns meta outputs (tltyped's own call with meta tensors); a factory's call gives a LoweringKernel, and
    so does `fn.compile(...)`, around tltyped's compiled kernel."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.__wrapped__ = getattr(fn, "__wrapped__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from tltyped.callpath.factory import Factory

        if isinstance(self.fn, Factory) or not _has_tensor((*args, *kwargs.values())):  # a factory's call
            if not isinstance(self.fn, Factory):  # an eager kernel called without tensors: it would run on the GPU
                TALLY.lowering()
                _entry(lambda: self.fn.lower(*args, **kwargs))
                TALLY.lowered += 1
                raise CpuOnly("a kernel call with no tensor runs on the current CUDA device")
            made = _entry(lambda: self.fn(*args, **kwargs))
            if not hasattr(made, "lower"):
                name = getattr(self.fn, "__name__", "jit function")
                _entry(lambda: _raise(TypeError(f"{name}(...) gave {type(made).__name__}, not a kernel object with .lower()")))
            return LoweringKernel(made.lower, made, self.fn.out_idx)
        TALLY.lowering()
        _entry(lambda: self.fn.lower(*meta(args), **meta(kwargs)))
        TALLY.lowered += 1
        return _entry(lambda: self.fn(*meta(args), **meta(kwargs)))

    def compile(self, *args: Any, **kwargs: Any) -> LoweringKernel:
        """tltyped's own `compile` (nvcc, no GPU needed): its kernel is called with the tensors alone, as TileLang's."""
        compiled: list[Any] = []

        def build() -> Any:
            compiled.append(self.fn.compile(*meta(args), **meta(kwargs)))
            return self.fn.lower(*meta(args), **meta(kwargs))

        return LoweringKernel(build, lambda *tensors: compiled[0](*meta(tensors)))

    def par_compile(self, configs: Any, *args: Any, **kwargs: Any) -> list[LoweringKernel]:
        """tltyped's `par_compile`: `compile` of each configuration, in turn (each lowered and counted)."""
        return [self.compile(**config) if isinstance(config, dict) else self.compile(*config) for config in configs]

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        TALLY.lowering()
        lowered = _entry(lambda: self.fn.lower(*meta(args), **meta(kwargs)))
        TALLY.lowered += 1
        return lowered

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        return str(self.lower(*args, **kwargs).cuda_source)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fn, name)


def _raise(exc: Exception) -> None:
    raise exc


class Refused:
    """What the jit decorator gives where tltyped refuses the definition: its error is the kernel's failure where the
    kernel is used (called, or asked for anything), so that a file's other kernels still run."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _entry(lambda: _raise(self.exc))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _entry(lambda: _raise(self.exc))


def patch_tltyped() -> None:
    import tltyped

    real = tltyped.jit

    def jit(fn: Any = None, /, **options: Any) -> Any:
        if fn is None:
            return lambda f: jit(f, **options)
        try:
            return LoweringJit(real(**options)(fn) if options else real(fn))
        except Exception as exc:
            return Refused(exc)

    tltyped.jit = jit  # type: ignore[assignment]
    real_autotune = tltyped.autotune

    def autotune(fn: Any = None, /, **options: Any) -> Any:
        tune = real_autotune(fn, **options)

        def remake(lowering: Any) -> Any:  # the kernel remade with tuned defaults, lowering
            try:
                return lowering if isinstance(lowering, Refused) else LoweringJit(tune(lowering.fn))
            except Exception as exc:
                return Refused(exc)

        return remake

    tltyped.autotune = autotune  # type: ignore[assignment]


class MigratingFinder(importlib.abc.MetaPathFinder):
    """Imports of example modules (files under `directory`) load their migrated text, as the file itself is."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory.resolve()

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        if self.directory not in Path(spec.origin).resolve().parents:
            return None
        spec.loader = MigratingLoader(name, spec.origin)
        return spec


class MigratingLoader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname: str) -> Any:  # never a cached .pyc of the unmigrated file
        path = self.get_filename(fullname)
        return compile(migrate(Path(path).read_text()), path, "exec", dont_inherit=True)


# --- running one file -------------------------------------------------------------------------------------------


def run_main(path: Path, text: str) -> None:
    """Run `text` as the script `path` (its `__main__` block): argv holds the file alone, cwd is its folder."""
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    os.chdir(path.parent)
    module = ModuleType("__main__")
    module.__file__ = str(path)
    module.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules["__main__"] = module
    exec(compile(text, str(path), "exec", dont_inherit=True), module.__dict__)


def run_file(file: str, mode: str) -> Result:
    """Run one unit in this process (a forked child), lowering its kernels; see the module's docstring: an example
    from its `__main__` block, or (`file` is `path::test`) one test function of a test file."""
    name, _, test = file.partition("::")
    path = examples_dir().parent / name
    result = Result(file, mode)
    start = time.perf_counter()
    _fake_cuda()
    patch_tilelang()
    if test:
        _fake_h200_details()
    text = path.read_text()
    if mode == "tltyped":
        patch_tltyped()
        sys.meta_path.insert(0, MigratingFinder(examples_dir().parent / "testing" if test else examples_dir()))
        text = migrate(text)

    try:
        with meta_cuda_mode():
            if test:
                run_test(path, text, test)
            else:
                run_main(path, text)
    except (Enough, SystemExit) as exc:
        if isinstance(exc, SystemExit) and exc.code not in (0, None):
            result.error, result.phase = f"SystemExit: {exc.code}", "before"
    except BaseException as exc:  # noqa: BLE001  (an example may raise anything)
        if TALLY.failure is None and _is_skip(exc):
            result.error = f"skipped: {' '.join(str(exc).split())}"[:300]
            result.phase = "after" if TALLY.lowered else "before"
        else:
            result.error = one_line(TALLY.failure or exc)
            result.phase = "lower" if TALLY.failure is not None else "after" if TALLY.lowered else "before"
            if LOG_DIR is not None:
                traceback.print_exception(TALLY.failure or exc)
    if TALLY.failure is not None and result.phase != "lower":  # a failure the example caught and went on from
        result.error, result.phase = one_line(TALLY.failure), "lower"
        if LOG_DIR is not None:
            traceback.print_exception(TALLY.failure)
    result.lowered = TALLY.lowered
    result.other = TALLY.other if mode == "tltyped" else 0
    result.seconds = round(time.perf_counter() - start, 2)
    return result


# --- the test files: one unit per test function -------------------------------------------------------------------


TEST_DIRS = ("language", "issue", "jit", "kernel", "cuda", "tilelibrary")
"""The folders of `testing/python/` whose test files the tests mode runs."""
NO_DEVICE = re.compile(r"(Run-time|Compile-time) support for (gpu|CUDA) not present|No device exists for target cuda")
"""The reasons of `tilelang.testing.requires_cuda`'s skip marks that a CPU process meets: CUDA is faked here."""


def tested_files() -> list[str]:
    """The test files of the tests mode, relative to TileLang's root, sorted: `testing/python/{TEST_DIRS}/test_*.py`
    that mention `tilelang.jit` (only jit kernels go through tltyped; `tilelang.compile` stays TileLang's)."""
    base = examples_dir().parent
    return sorted(
        str(p.relative_to(base))
        for d in TEST_DIRS
        for p in (base / "testing" / "python" / d).glob("test_*.py")
        if "tilelang.jit" in p.read_text()
    )


def units_of(path: Path, name: str | None = None) -> list[str]:
    """The units of a test file: `name::test` for each top-level `def test*` (as pytest collects them), in order,
    but those a decorator other than pytest's or `tilelang.testing`'s makes something else (a `@tilelang.jit` kernel)."""

    def test_decorator(dec: ast.expr) -> bool:
        return re.match(r"(pytest|tilelang\.testing)\.", ast.unparse(dec.func if isinstance(dec, ast.Call) else dec)) is not None

    tree = ast.parse(path.read_text())
    tests = [
        s.name for s in tree.body
        if isinstance(s, ast.FunctionDef) and s.name.startswith("test") and all(map(test_decorator, s.decorator_list))
    ]
    return [f"{name or path}::{t}" for t in tests]


def tested_units(files: Sequence[str] = ()) -> list[str]:
    """The units of `files` (default: tested_files()); a `file::test` among them is kept as it is."""
    base = examples_dir().parent
    out: list[str] = []
    for f in files or tested_files():
        out += [f] if "::" in f else units_of(base / f, f)
    return out


class NeedsFixture(Exception):
    """A test function with a parameter that no parametrize mark gives (a pytest fixture): not run."""


def _marks(fn: Any, module: Any = None) -> list[Any]:
    """The pytest marks of `fn` and of its module (`pytestmark`: a list, or one mark), as Marks."""
    found: list[Any] = []
    for owner in (fn, module):
        marks = getattr(owner, "pytestmark", [])
        found += marks if isinstance(marks, (list, tuple)) else [marks]
    return [getattr(m, "mark", m) for m in found]  # a MarkDecorator holds its Mark


def call_arguments(fn: Any, module: Any = None) -> dict[str, Any]:
    """The arguments to call the test `fn` with: the first value of each of its parametrize marks. Skips it (pytest's
    Skipped) as pytest would here: a skip mark, a true skipif but for a device's absence (NO_DEVICE), a perf mark
    (TileLang's conftest skips those); NeedsFixture if a parameter is left without a value or default."""
    import inspect

    import pytest

    kwargs: dict[str, Any] = {}
    for mark in _marks(fn, module):
        if mark.name == "skip":
            pytest.skip(mark.kwargs.get("reason", mark.args[0] if mark.args else "skip mark"))
        if mark.name == "skipif" and mark.args and mark.args[0] is True and not NO_DEVICE.search(mark.kwargs.get("reason", "")):
            pytest.skip(mark.kwargs.get("reason", "skipif mark"))
        if mark.name == "perf":
            pytest.skip("performance test (TileLang's conftest skips these by default)")
        if mark.name == "parametrize":
            names, values = mark.args[0], list(mark.args[1])
            names = [n.strip() for n in names.split(",") if n.strip()] if isinstance(names, str) else list(names)
            first = values[0]
            if hasattr(first, "values") and hasattr(first, "marks"):  # pytest.param(...)
                kwargs.update(call_arguments(SimpleNamespace(pytestmark=list(first.marks))))
                first = first.values if len(names) > 1 else first.values[0]
            kwargs.update(zip(names, first) if len(names) > 1 else [(names[0], first)])
    missing = [
        p.name for p in inspect.signature(fn).parameters.values()
        if p.name not in kwargs and p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ] if callable(fn) else []
    if missing:
        raise NeedsFixture(f"needs the fixture {', '.join(missing)}")
    return kwargs


def _is_skip(exc: BaseException) -> bool:
    import pytest

    return isinstance(exc, pytest.skip.Exception)


def _fake_h200_details() -> None:
    """What tests ask of the GPU beyond _fake_cuda: `nvcc.get_target_compute_version` with no target or GPU says
    9.0 (`requires_cuda_compute_version` marks), `torch.cuda.get_device_properties` and `mem_get_info` an H200's."""
    import torch
    from tilelang.contrib import nvcc

    props = SimpleNamespace(
        name="NVIDIA H200 (meta)", major=9, minor=0, multi_processor_count=132, total_memory=141 << 30, warp_size=32,
        max_threads_per_multi_processor=2048, regs_per_multiprocessor=65536, shared_memory_per_block_optin=232448,
        L2_cache_size=60 << 20,
    )
    setattr(torch.cuda, "get_device_properties", lambda device=None: props)
    setattr(torch.cuda, "mem_get_info", lambda device=None: (140 << 30, 141 << 30))

    real = nvcc.get_target_compute_version

    def compute_version(target: Any = None) -> str:
        try:
            return str(real(target))
        except ValueError:
            return "9.0"

    nvcc.get_target_compute_version = compute_version


def load_test_module(path: Path, text: str) -> ModuleType:
    """Run `text` as the test module `path`: named as the file's stem (not `__main__`), in sys.modules."""
    module = ModuleType(path.stem)
    module.__file__ = str(path)
    module.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules[path.stem] = module
    exec(compile(text, str(path), "exec", dont_inherit=True), module.__dict__)
    return module


def run_test(path: Path, text: str, test: str) -> None:
    """Load the test file `path` (its text `text`; argv holds the file alone, cwd and sys.path[0] are its folder, as
    run_main has them) and call its function `test` with call_arguments."""
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    os.chdir(path.parent)
    module = load_test_module(path, text)
    fn = getattr(module, test)
    fn(**call_arguments(fn, module))


LOG_DIR: Path | None = None
"""Where a child's output goes, one `<file>.log` each (the GPU mode's; else `<file>.<mode>.log`, with the first
error's traceback); None: nowhere."""


def _child(file: str, mode: str, conn: multiprocessing.connection.Connection, stacks: Path, timeout: float) -> None:
    stacks_file = open(stacks, "w")  # noqa: SIM115  (open until the child exits)
    faulthandler.dump_traceback_later(max(timeout - 3, 1), file=stacks_file)  # where a hang waits, for the parent
    if LOG_DIR is not None:
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        name = file.replace("/", "__") + ("" if mode == "gpu" else f".{mode}")
        sink = os.open(LOG_DIR / (name + ".log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    else:
        sink = os.open(os.devnull, os.O_WRONLY)
    os.dup2(sink, 1)
    os.dup2(sink, 2)
    try:
        if mode == "gpu":
            conn.send(asdict(run_for_real(file)))
        else:
            conn.send(asdict(run_file(file, mode)))
    except BaseException as exc:  # noqa: BLE001
        conn.send(asdict(Result(file, mode, error=one_line(exc), phase="before")))
    finally:
        os._exit(0)


def warm_imports(scratch: Path, tests: bool = False) -> None:
    """What every child needs, imported once in the parent (forks inherit it), to lower for sm_90a; the caches in
    `scratch` where none is set."""
    os.environ.setdefault("TLTYPED_TARGET", "sm_90a")
    os.environ.setdefault("TVM_NUM_THREADS", "1")
    os.environ.setdefault("TLTYPED_CACHE_DIR", str(scratch / "tltyped"))
    os.environ.setdefault("TILELANG_CACHE_DIR", str(scratch / "tilelang"))
    import torch  # noqa: F401
    import tilelang  # noqa: F401
    import tilelang.autotuner.tuner  # noqa: F401
    import tilelang.language  # noqa: F401
    import tilelang.profiler  # noqa: F401

    import tltyped  # noqa: F401
    import tltyped.language  # noqa: F401

    if tests:
        import pytest  # noqa: F401
        import tilelang.testing  # noqa: F401


def run_all(
    files: Sequence[str], modes: Sequence[str] = ("tilelang", "tltyped"), jobs: int = 2, timeout: float = TIMEOUT,
    progress: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Each (file, mode) in a forked child, `jobs` at a time, each within `timeout` seconds; a child that runs past
    it is killed, and its result holds where each of its threads was (`Result.stacks`).

    On CPU the parent imports what every child needs first; on a GPU it imports nothing, since a child forked
    from a process that has initialised CUDA (TileLang's import does) cannot use it. The parent should be a process
    of its own (the command below), not one that has run other work: a child forked while another thread holds a
    lock waits on it for ever."""
    ctx = multiprocessing.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="tltyped-corpus-") as scratch:
        if "gpu" not in modes:
            warm_imports(Path(scratch), tests=any("::" in f for f in files))
        todo = [(f, m) for f in files for m in modes]
        running: dict[Any, tuple[str, str, Any, float, Path]] = {}
        results: list[Result] = []
        while todo or running:
            while todo and len(running) < jobs:
                file, mode = todo.pop(0)
                receive, send = ctx.Pipe(duplex=False)
                stacks = Path(scratch) / f"{len(todo)}.stacks"
                proc = ctx.Process(target=_child, args=(file, mode, send, stacks, timeout), daemon=True)
                proc.start()
                send.close()
                running[receive] = (file, mode, proc, time.perf_counter(), stacks)
            ready = multiprocessing.connection.wait(list(running), timeout=1.0)
            now = time.perf_counter()
            for conn in list(running):
                file, mode, proc, started, stacks = running[conn]
                result = None
                if conn in ready:
                    try:
                        result = Result(**conn.recv())
                    except EOFError:
                        result = Result(file, mode, error=f"the child died (exit code {proc.exitcode})", phase="before")
                elif now - started > timeout:
                    proc.kill()
                    waits = stacks.read_text().strip() if stacks.exists() else ""
                    result = Result(file, mode, error=f"timed out after {timeout:.0f} s", phase="timeout", seconds=timeout,
                                    stacks=waits)
                if result is not None:
                    proc.join(5)
                    conn.close()
                    del running[conn]
                    results.append(result)
                    if progress:
                        progress(result)
    order = {(f, m): i for i, (f, m) in enumerate((f, m) for f in files for m in modes)}
    return sorted(results, key=lambda r: order[(r.file, r.mode)])


# --- CORPUS.md ----------------------------------------------------------------------------------------------------


def by_file(results: Sequence[Result]) -> dict[str, dict[str, Result]]:
    table: dict[str, dict[str, Result]] = {}
    for r in results:
        table.setdefault(r.file, {})[r.mode] = r
    return table


def reason(error: str | None, limit: int = 140) -> str:
    """An error shortened for a table cell: one line, the tltyped kernel-name prefix kept, pipes escaped."""
    text = (error or "").replace("|", "\\|").replace("`", "'")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def group(error: str | None) -> str:
    """An error's group for the summary: its type and its message with the details of one case elided: tltyped's
    `kernel: ` prefix, paths (`file.py:line`), quoted names (but an attribute's), numbers, local functions' qualified
    names, parenthesised asides, lists of elided names, a factory's arguments; at most 90 characters of it."""
    text = error or "no kernel lowered"
    kind, _, message = text.partition(": ")
    message = re.sub(r"^[\w.]+: ", "", message)  # tltyped's "kernel: " prefix
    message = re.sub(r"(running the factory with) .*? (failed at)", r"\1 ... \2", message)
    message = re.sub(r"\S*/\S+\.py(:\d+)?", "_", message)
    message = re.sub(r"(?<!attribute )('[^']*'|\"[^\"]*\")|\d+", "_", message)
    message = re.sub(r"[\w.]*<locals>[\w.<>]*", "_", message)
    message = re.sub(r"\([^()]*\)", "(...)", message)
    message = re.sub(r"_(, _)*,? and _", "_", message)
    message = re.sub(r"missing _ required positional arguments?", "missing required positional arguments", message)
    return f"{kind}: {message[:90]}"


def summary(results: Sequence[Result]) -> tuple[int, int, list[tuple[str, int]]]:
    """(files TileLang lowers, of those the files tltyped lowers, failure groups by count)."""
    table = by_file(results)
    theirs = [f for f, r in table.items() if r["tilelang"].lowers]
    ours = [f for f in theirs if r_lowers(table[f].get("tltyped"))]
    groups = Counter(group(table[f]["tltyped"].error if "tltyped" in table[f] else None) for f in theirs if f not in ours)
    return len(theirs), len(ours), groups.most_common()


def r_lowers(r: Result | None) -> bool:
    return r is not None and r.lowers


def render(results: Sequence[Result], seconds: float, tests: bool = False) -> str:
    """CORPUS.md's text; with `tests`, CORPUS_TESTS.md's (units of test files, not example files)."""
    table = by_file(results)
    theirs, ours, groups = summary(results)
    pct = 100.0 * ours / theirs if theirs else 0.0
    both = sum(1 for r in table.values() if r_lowers(r.get("tltyped")))
    what, prefix = ("units", "testing/python/") if tests else ("files", "examples/")
    if tests:
        own = sum(1 for r in table.values() if r_lowers(r.get("tilelang")) and r_lowers(r.get("tltyped")) and r["tltyped"].lowered > r["tltyped"].other)
        intro = [
            "# TileLang's tests, lowered by TileLang and by tltyped",
            "",
            f"Generated by `{TESTS_COMMAND}` (tests/upstream/corpus.py says how) from tile-ai/tilelang@{COMMIT[:12]}:",
            f"every test function of `testing/python/{{{','.join(TEST_DIRS)}}}/test_*.py` that mention `tilelang.jit`",
            f"({len({f.partition('::')[0] for f in table})} files, {len(table)} units), each called (with the first value of each parametrize mark) for sm_90a",
            "on CPU with CUDA as the meta device: once as written under TileLang (compilation replaced by lowering), once",
            "migrated to tltyped (decorators, `@autotune` too, and `tilelang.language` import rewritten; `tilelang.compile`",
            f"stays TileLang's). At most {CAP} kernels per unit; {TIMEOUT:.0f} s per unit and mode. The run took {seconds / 60:.1f} min.",
            "",
            f"**Of the {theirs} units TileLang lowers, tltyped lowers {ours} ({pct:.1f}%).** tltyped lowers {both} units in all.",
            f"Of the {ours}, {own} lowered a kernel through tltyped's jit; the others lowered only kernels of TileLang's own",
            "`tilelang.compile` (a tltyped cell `n (k TileLang's)` counts those k among its n).",
            "",
            "A cell is the number of kernels lowered; `after` marks a unit that stopped after lowering at a step that needs",
            "a GPU or data (not a failure), `FAIL` a kernel that failed to build, `before` a unit that stopped before any",
            "kernel (an import, a skip, a fixture), `timeout` a unit that ran past the limit. Reasons are the first error, shortened.",
        ]
    else:
        intro = [
            "# TileLang's examples, lowered by TileLang and by tltyped",
            "",
            f"Generated by `{COMMAND}` (tests/upstream/corpus.py says how) from tile-ai/tilelang@{COMMIT[:12]}:",
            f"every `examples/**/*.py` but `test_*.py` and `conftest.py` ({len(table)} files), each run from its",
            "`__main__` block for sm_90a on CPU with CUDA as the meta device: once as written under TileLang (compilation",
            "replaced by lowering), once migrated to tltyped (decorators, `@autotune` too, and `tilelang.language` import",
            f"rewritten). At most {CAP} kernels per file; {TIMEOUT:.0f} s per file and mode. The run took {seconds / 60:.1f} min.",
            "",
            f"**Of the {theirs} files TileLang lowers, tltyped lowers {ours} ({pct:.1f}%).** "
            f"tltyped lowers {both} files in all.",
            "",
            "A cell is the number of kernels lowered; `after` marks a file that stopped after lowering at a step that needs",
            "a GPU or data (not a failure), `FAIL` a kernel that failed to build, `before` a file that stopped before any",
            "kernel (an import, a package), `timeout` a file that ran past the limit. Reasons are the first error, shortened.",
        ]
    lines = [
        *intro,
        "",
        "## Why tltyped does not lower what TileLang lowers, grouped",
        "",
        *([f"| {what} | first error (details elided) |", "|---:|---|", *(f"| {n} | {reason(g, 200)} |" for g, n in groups)]
          if groups else [f"None: tltyped lowers every {what[:-1]} TileLang lowers."]),
        "",
        f"## Every {what[:-1]}",
        "",
        f"| {what[:-1]} | TileLang | tltyped | reason (TileLang lowers, tltyped does not) |",
        "|---|---|---|---|",
    ]

    def cell(r: Result | None) -> str:
        if r is None:
            return "-"
        mark = {"lower": " FAIL", "after": " after", "before": " before", "timeout": " timeout"}.get(r.phase or "", "")
        return f"{r.lowered}{mark}" + (f" ({r.other} TileLang's)" if tests and r.other else "")

    for file, r in sorted(table.items()):
        ours_r, theirs_r = r.get("tltyped"), r.get("tilelang")
        why = reason(ours_r.error if ours_r else "not run") if r_lowers(theirs_r) and not r_lowers(ours_r) else ""
        lines.append(f"| {file.removeprefix(prefix)} | {cell(theirs_r)} | {cell(ours_r)} | {why} |")
    lines.append("")
    return "\n".join(lines)


# `file` + the tltyped cell, for the regression guard (test_corpus.py)
def lowered_by_tltyped(text: str) -> list[str]:
    """The files a CORPUS.md lists as lowered by tltyped (a kernel count, no FAIL/timeout), in its order."""
    files = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].endswith(".py"):
            count, _, mark = cells[2].partition(" ")
            if count.isdigit() and int(count) > 0 and mark in ("", "after", "before"):
                files.append("examples/" + cells[0])
    return files


# --- on a GPU: the examples' own checks, for real ---------------------------------------------------------------


def run_for_real(file: str) -> Result:
    """Run the migrated example's `__main__` block on the GPU through tltyped (its own checks), in this process."""
    path = examples_dir().parent / file
    result = Result(file, "gpu")
    start = time.perf_counter()
    sys.meta_path.insert(0, MigratingFinder(examples_dir()))
    try:
        run_main(path, migrate(path.read_text()))
    except SystemExit as exc:
        if exc.code not in (0, None):
            result.error, result.phase = f"SystemExit: {exc.code}", "check"
    except BaseException as exc:  # noqa: BLE001
        result.error, result.phase = one_line(exc), "check"
        traceback.print_exc()  # into the file's log
    result.seconds = round(time.perf_counter() - start, 2)
    return result


def gpu_files(corpus_md: Path = CORPUS_MD) -> list[str]:
    """The files to run on a GPU: every file CORPUS.md lists as lowered by tltyped."""
    return lowered_by_tltyped(corpus_md.read_text()) if corpus_md.exists() else []


def gpu_report(results: Sequence[Result]) -> tuple[dict[str, Any], str]:
    """(summary.json's object, summary.md's text) of a GPU run."""
    passed = [r for r in results if r.error is None]
    data = {
        "commit": COMMIT, "files": len(results), "passed": len(passed),
        "results": [asdict(r) for r in results],
    }
    lines = [
        "# TileLang's examples run through tltyped on a GPU",
        "",
        f"tile-ai/tilelang@{COMMIT[:12]}: {len(passed)} of {len(results)} files pass their own checks.",
        "",
        "| file | result | seconds |",
        "|---|---|---:|",
        *(f"| {r.file.removeprefix('examples/')} | {'pass' if r.error is None else reason(r.error)} | {r.seconds} |" for r in results),
        "",
    ]
    return data, "\n".join(lines)


def run_gpu(out: Path, files: Sequence[str], timeout: float = 600.0, jobs: int = 1) -> list[Result]:
    """Run `files` for real, `jobs` at a time (sharing the GPU: their checks hold, their timings do not); OUT gets
    summary.json, summary.md, logs/."""
    global LOG_DIR
    os.environ.setdefault("TLTYPED_CACHE_DIR", str(out / "cache"))
    out.mkdir(parents=True, exist_ok=True)
    LOG_DIR = out / "logs"
    results = run_all(files, modes=("gpu",), jobs=jobs, timeout=timeout, progress=_print)
    data, text = gpu_report(results)
    (out / "summary.json").write_text(json.dumps(data, indent=1))
    (out / "summary.md").write_text(text)
    return results


# --- the command ----------------------------------------------------------------------------------------------------


def _print(r: Result) -> None:
    print(f"{r.mode:8} {r.lowered:3} {r.phase or 'ok':8} {r.seconds:6.1f}s {r.file}  {r.error or ''}"[:220], flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    global CAP, TIMEOUT, LOG_DIR
    parser = argparse.ArgumentParser(prog="python -m tests.upstream.corpus", description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="examples to run (paths under TileLang's root; with --tests, test files or"
                        " units `file::test`); default: all")
    parser.add_argument("--write", action="store_true", help=f"rewrite {CORPUS_MD.name} (with every file)")
    parser.add_argument("--tests", action="store_true", help=f"run the units of TileLang's test files instead ({CORPUS_TESTS_MD.name})")
    parser.add_argument("--logs", type=Path, metavar="DIR", help="keep each child's output and first error's traceback in DIR")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=TIMEOUT)
    parser.add_argument("--cap", type=int, default=CAP)
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--modes", default="tilelang,tltyped", help="the modes to run each file in (comma-separated)")
    parser.add_argument("--gpu", type=Path, metavar="OUT_DIR", help="run the files CORPUS.md lists as lowered by tltyped on a GPU")
    args = parser.parse_args(argv)
    CAP, TIMEOUT = args.cap, args.timeout
    if args.gpu:
        results = run_gpu(args.gpu, args.files or gpu_files(), timeout=args.timeout, jobs=args.jobs)
        return 0 if all(r.error is None for r in results) else 1
    LOG_DIR = args.logs
    files = tested_units(args.files) if args.tests else args.files or example_files()
    start = time.perf_counter()
    modes = tuple(args.modes.split(","))
    results = run_all(files, modes=modes, jobs=args.jobs, timeout=args.timeout, progress=_print)
    seconds = time.perf_counter() - start
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    if set(modes) != {"tilelang", "tltyped"}:
        print(f"\n{len(files)} {'units' if args.tests else 'files'} in {seconds:.0f} s; lowered: {sum(r.lowers for r in results)}")
        return 0
    theirs, ours, groups = summary(results)
    print(f"\n{len(files)} {'units' if args.tests else 'files'} in {seconds:.0f} s; of the {theirs} TileLang lowers, tltyped lowers {ours}"
          f" ({100.0 * ours / max(theirs, 1):.1f}%)")
    for g, n in groups:
        print(f"{n:4}  {g}")
    if args.write:
        md = CORPUS_TESTS_MD if args.tests else CORPUS_MD
        md.write_text(render(results, seconds, tests=args.tests))
        print(f"wrote {md.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
