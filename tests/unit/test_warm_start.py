"""Warm start: a kernel built by one process is loaded by the next, from its launch record.

Each test copies a kernel module into a temporary folder, builds its kernel in
a fresh process (`fn.compile(...)` on meta tensors: the same kernel table as
a call) and starts another process that must load it: no elaboration, no
lowering, no nvcc, no TileLang. Then the record is made stale in the ways
users' machines do (the source is edited, the compiler upgraded, the build
removed, the record damaged) and the next process must rebuild, never load
what no longer matches. Each damage is applied to a copy of the project in
another folder whose undamaged cache is first shown to load (the control),
so a test fails if the damage goes unnoticed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import needs_nvcc
from tltyped.backend import cache
from tltyped.frontend.fingerprint import stable_text

ROOT = Path(__file__).resolve().parents[2]

KERNEL = '''
"""A kernel module of a user's, without `from __future__ import annotations`."""
from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N", bound=tl.dyn[int])


@T.macro
def scaled(Y, X, alpha, i):
    """A helper defined beside the kernel: defining it imports nothing either."""
    Y[i] = X[i] * alpha


@tl.jit
def scale(X: tl.Tensor[tl.float32, N], alpha: tl.dyn[float], block: int = 256) -> tl.Tensor[tl.float32, N]:
    (n,) = X.shape
    Y = T.empty((n,), tl.float32)
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                scaled(Y, X, alpha, bx * block + i)
    return Y
'''

PROBE = '''
import json, subprocess, sys, time
start = time.perf_counter()
spawned = []  # every program the process runs (a compiler, a `--version`)
popen = subprocess.Popen.__init__
def record(self, args, *rest, **options):
    spawned.append(str(args))
    popen(self, args, *rest, **options)
subprocess.Popen.__init__ = record
import torch
import user_kernels
defined = list(spawned)  # what importing tltyped and defining the kernels ran
kind = type(user_kernels.scale).__name__  # the C cached call where its helper is built, else the Python function
kernel = user_kernels.scale.compile(torch.empty(1000, dtype=torch.float32, device="meta"), 2.0, block={block})
(out,) = kernel.empty_outputs(0, 2.0, 1000)  # X, alpha, N: allocated as a call would, by the allocator helper
from tltyped.callpath.torch_direct import torch_empty
serves = type(user_kernels.scale._dispatcher.fast_path.c_call()).__name__  # what the kernel's calls reach now
print(json.dumps({{
    "compiled": kernel.compiled, "cuda": "__global__" in kernel.cuda_source,
    "info": user_kernels.scale.cache_info()._asdict(), "tilelang": "tilelang" in sys.modules,
    "seconds": time.perf_counter() - start, "spawned": spawned, "helper": torch_empty() is not None,
    "output": [list(out.shape), str(out.dtype)], "defined": defined, "kind": kind, "serves": serves,
}}))
'''


class Project:
    """A folder with a user's kernel module, a private cache, and a way to run a process there."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.cache = where / "cache"
        (where / "user_kernels.py").write_text(KERNEL)

    def run(self, block: int = 256, **env: str) -> dict[str, object]:
        environment = {
            **os.environ, "PYTHONPATH": os.pathsep.join([str(self.where), str(ROOT)]),
            cache.ENV_CACHE_DIR: str(self.cache), "TLTYPED_TARGET": "sm_90a", **env,
        }
        run = subprocess.run([sys.executable, "-c", PROBE.format(block=block)], capture_output=True, text=True,
                             env=environment, timeout=600, cwd=self.where)
        assert run.returncode == 0, run.stderr[-3000:]
        self.stderr = run.stderr
        result: dict[str, object] = json.loads(run.stdout.strip().splitlines()[-1])
        return result

    def records(self) -> list[Path]:
        """The launch records (the cache also keeps generated fast-path sources as records)."""
        return sorted(p for p in (self.cache / "modules").glob("*.json") if "build" in json.loads(p.read_text()))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A project whose kernel was built once (by nvcc, in its own process)."""
    if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        pytest.skip("nvcc is not available")
    built = Project(tmp_path_factory.mktemp("warm"))
    first = built.run()
    assert first["compiled"] and first["cuda"]
    # an empty cache: defining the kernel compiled nothing (at most a compiler was asked its version), so the
    # call path is the generated Python function; compiling the kernel built the C helpers too, and from then on
    # that function hands each call to the C cached call
    assert all("--version" in command for command in first["defined"]), first["defined"]  # type: ignore[attr-defined]
    assert first["kind"] == "function" and first["helper"] and first["serves"] == "CachedCall"
    return built


def fresh_copy(project: Project, tmp_path: Path) -> Project:
    """Another project (another folder) with the same module and a copy of the built cache, which tests below
    damage; first the control: undamaged, the copy loads the kernel without building it."""
    copy = Project(tmp_path)
    shutil.copytree(project.cache, copy.cache, symlinks=True)
    control = copy.run()
    assert control["info"]["compiles"] == 0 and control["info"]["disk_hits"] == 1, control  # type: ignore[index]
    return copy


@needs_nvcc
def test_a_new_process_loads_the_kernel_without_building(project: Project) -> None:
    second = project.run()
    assert (second["compiled"], second["cuda"]) == (False, True)  # loaded, and its CUDA source with it
    assert second["info"] == {"hits": 0, "misses": 0, "compiles": 0, "disk_hits": 1, "size": 0}
    assert second["tilelang"] is False  # neither TileLang nor TVM was imported, not even by `@T.macro`
    assert second["spawned"] == []  # no compiler ran, not even for its `--version`
    assert second["kind"] == second["serves"] == "CachedCall"  # the C helper built by the first process, loaded when the kernel was defined
    assert second["helper"] and second["output"] == [[1000], "torch.float32"]  # the helper was loaded, not rebuilt


@needs_nvcc
def test_another_const_value_is_another_record(project: Project, tmp_path: Path) -> None:
    copy = fresh_copy(project, tmp_path)
    other = copy.run(block=128)
    assert other["info"]["compiles"] == 1  # type: ignore[index]
    assert len(copy.records()) == 2


@needs_nvcc
def test_editing_the_kernel_module_makes_its_record_stale(project: Project, tmp_path: Path) -> None:
    copy = fresh_copy(project, tmp_path)
    module = copy.where / "user_kernels.py"
    module.write_text(module.read_text() + "\n\nHELPER_CONSTANT = 3  # an edit anywhere in the module\n")
    again = copy.run()
    assert again["info"]["compiles"] == 1  # type: ignore[index]  # elaborated and lowered again...
    assert again["compiled"] is False  # ...but the generated CUDA is unchanged, so nvcc did not run


@needs_nvcc
def test_a_record_whose_build_is_gone_rebuilds(project: Project, tmp_path: Path) -> None:
    copy = fresh_copy(project, tmp_path)
    (record,) = copy.records()
    shutil.rmtree(copy.cache / "modules" / json.loads(record.read_text())["build"])
    again = copy.run()
    assert (again["info"]["compiles"], again["compiled"]) == (1, True)  # type: ignore[index]


@needs_nvcc
@pytest.mark.parametrize("damage", ["garbage", "other key", "writable by others"])
def test_a_damaged_record_is_not_trusted(project: Project, tmp_path: Path, damage: str) -> None:
    copy = fresh_copy(project, tmp_path)
    (record,) = copy.records()
    if damage == "garbage":
        record.write_text('{"build": ')
    elif damage == "other key":
        record.write_text(json.dumps({**json.loads(record.read_text()), "key": "0" * 32}))
    else:
        os.chmod(record, 0o666)
    again = copy.run()
    assert again["info"]["compiles"] == 1  # type: ignore[index]
    assert again["compiled"] is False  # the build itself is intact: found by its content


@needs_nvcc
def test_an_upgraded_compiler_makes_the_record_stale(project: Project, tmp_path: Path) -> None:
    copy = fresh_copy(project, tmp_path)
    (record,) = copy.records()
    build = copy.cache / "modules" / json.loads(record.read_text())["build"]
    manifest = json.loads((build / cache.MANIFEST).read_text())
    nvcc = next(path for path in manifest["toolchain_files"] if Path(path).name.startswith("nvcc"))
    manifest["toolchain_files"][nvcc] = [1, 2, 3]  # what the build recorded no longer matches the binary
    os.chmod(build / cache.MANIFEST, 0o600)
    (build / cache.MANIFEST).write_text(json.dumps(manifest))
    again = copy.run()
    assert again["info"]["compiles"] == 1  # type: ignore[index]


@needs_nvcc
def test_the_log_says_where_a_kernel_came_from(project: Project) -> None:
    project.run(TLTYPED_LOG="info")
    assert "scale: loaded block=256" in project.stderr


@needs_nvcc
def test_the_log_names_each_build_and_each_disk_hit_and_is_silent_unless_asked(project: Project, tmp_path: Path) -> None:
    """TLTYPED_LOG=info, with no logging set up by the program: a process whose launch record is gone builds the
    kernel again (its CUDA found built) and logs the build; the next loads it and logs that; without the
    variable neither says anything."""
    copy = fresh_copy(project, tmp_path)
    for record in copy.records():
        record.unlink()
    rebuilt = copy.run(TLTYPED_LOG="info")
    assert rebuilt["info"]["compiles"] == 1, rebuilt  # type: ignore[index]
    assert "tltyped INFO scale: built block=256 for sm_90a (device code from the disk cache)" in copy.stderr, copy.stderr
    loaded = copy.run(TLTYPED_LOG="info")
    assert loaded["info"]["disk_hits"] == 1, loaded  # type: ignore[index]
    assert "tltyped INFO scale: loaded block=256 from the disk cache" in copy.stderr, copy.stderr
    copy.run()
    assert "tltyped INFO" not in copy.stderr, copy.stderr


@needs_nvcc
def test_the_cache_command_lists_and_clears(project: Project, tmp_path: Path) -> None:
    copy = fresh_copy(project, tmp_path)
    env = {**os.environ, cache.ENV_CACHE_DIR: str(copy.cache), "PYTHONPATH": str(ROOT)}

    def command(*args: str) -> str:
        run = subprocess.run([sys.executable, "-m", "tltyped", "cache", *args], capture_output=True, text=True, env=env,
                             timeout=120, check=True)
        return run.stdout

    listing = command("ls")
    assert "user_kernels.scale  sm_90a  block=256" in listing and "KiB" in listing
    assert "records: 1," in command("info")
    command("clear", "nothing-matches")
    assert len(copy.records()) == 1
    command("clear")
    assert "builds: 0, records: 0, generated sources: 0" in command("info")


def test_const_texts_tell_apart_what_compiles_differently() -> None:
    texts = [stable_text(v) for v in (2, 2.0, True, 1, "2", (2,), (2.0,), None)]
    assert None not in texts and len(set(texts)) == len(texts)


def test_a_const_without_a_stable_text_is_not_recorded() -> None:
    class Opaque:
        pass

    assert stable_text(Opaque()) is None
    assert stable_text((1, Opaque())) is None


FIRST_USE_FROM_TWO_THREADS = """
import threading, torch
import tltyped.language as T
from tests.kernels.torch_ops import scale
errors = []
def run(step):
    try:
        step()
    except Exception as exc:
        errors.append(repr(exc))
steps = [lambda: scale.lower(torch.empty(64, device="meta"), 1.0), lambda: T.dynamic("m")]
threads = [threading.Thread(target=run, args=(step,)) for step in steps]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(errors)
"""


@pytest.mark.parametrize("attempt", range(3))
def test_two_threads_first_using_tltyped_at_once_both_succeed(attempt: int, tmp_path: Path) -> None:
    """One thread lowers a kernel (importing TileLang) while another reads TileLang's language through
    tltyped.language: the second waits for the first's import instead of finding TileLang half imported."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TLTYPED_TARGET": "sm_90a", "TLTYPED_CACHE_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", FIRST_USE_FROM_TWO_THREADS], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "[]", run.stdout
