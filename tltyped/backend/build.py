"""Build C/CUDA sources into Python extension modules, cached on disk.

Builds are content-addressed: the folder is a hash of the source, the
compiler command and the Python ABI, so a module built once (by any process)
is loaded again with a `dlopen`. A kernel is two builds run side by side: its
device code into a cubin (nvcc, device only) and its host launcher into a
small C++ extension that loads the cubin at the first launch; neither links
against the CUDA driver (the runtime library is static and driver entry points
are looked up at run time), so kernels build on machines without a GPU.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ENV_CACHE_DIR = "TLTYPED_CACHE_DIR"


class CompileError(RuntimeError):
    """The compiler rejected a generated source."""


def cache_dir() -> Path:
    root = os.environ.get(ENV_CACHE_DIR) or os.path.join(os.path.expanduser("~"), ".cache", "tltyped")
    return Path(root) / "modules"


def python_include() -> str:
    return sysconfig.get_paths()["include"]


def nvcc_device_command(arch: str, extra_flags: list[str]) -> list[str]:
    """TileLang's nvcc flags, device code only: the kernels as a cubin."""
    from tilelang.contrib.nvcc import get_nvcc_compiler
    from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH

    code = arch.removeprefix("sm_")
    return [
        get_nvcc_compiler(), "--cubin", "-std=c++20", "-O3", "-w", "-lineinfo", "-Xcudafe", "--diag_suppress=177",
        "-gencode", f"arch=compute_{code},code=sm_{code}", f"-I{TILELANG_TEMPLATE_PATH}", f"-I{CUTLASS_INCLUDE_DIR}",
        *extra_flags,
    ]


def nvcc_host_command() -> list[str]:
    """A host-only C++ extension linked with the static CUDA runtime (nvcc only drives the host compiler)."""
    from tilelang.contrib.nvcc import get_nvcc_compiler

    return [get_nvcc_compiler(), "-std=c++17", "-O2", "-w", "--shared", "-Xcompiler", "-fPIC", f"-I{python_include()}"]


def cc_command(include_dirs: list[str]) -> list[str]:
    """The host C compiler, for helpers with no CUDA at all."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()
    return [*compiler, "-O2", "-shared", "-fPIC", f"-I{python_include()}", *(f"-I{d}" for d in include_dirs)]


@dataclass(frozen=True)
class Step:
    """One compiler run: `command source -o output` in the build folder."""

    source_name: str
    source: str
    command: list[str]
    output: str


def extension_name(module: str) -> str:
    return f"{module}{sysconfig.get_config_var('EXT_SUFFIX')}"


def build(name_hint: str, module: str, steps: list[Step]) -> tuple[ModuleType, Path, bool]:
    """Run the steps (in parallel) or find their products in the cache; import `module`.

    Returns (module, the folder holding every product, whether anything was
    compiled). One step must produce the extension; each build lives in a
    folder of its own, which is all CPython needs to keep single-phase-init
    extension modules of one name apart.
    """
    digest = hashlib.sha256()
    for step in steps:
        for part in (step.source_name, step.source, "\0".join(step.command[1:]), step.output):
            digest.update(part.encode())
            digest.update(b"\0")
    digest.update(sys.implementation.cache_tag.encode())
    folder = cache_dir() / digest.hexdigest()[:32]
    path = folder / extension_name(module)
    compiled = not path.exists()
    if compiled:
        _compile(name_hint, steps, folder, path.name)
    return _load(module, path), folder, compiled


def _compile(name_hint: str, steps: list[Step], folder: Path, done_marker: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tltyped-") as tmp:
        runs = []
        for step in steps:
            src = Path(tmp) / step.source_name
            src.write_text(step.source)
            command = [*step.command, str(src), "-o", str(Path(tmp) / step.output)]
            runs.append((step, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for step, run in runs:
            output, _ = run.communicate()
            if run.returncode != 0:
                kept = folder / f"failed-{step.source_name}"
                kept.write_text(step.source)
                raise CompileError(
                    f"{name_hint}: {Path(step.command[0]).name} failed on {step.source_name} (exit {run.returncode}); "
                    f"source kept at {kept}\n{output.strip()[-4000:]}"
                )
        for step in sorted(steps, key=lambda s: s.output == done_marker):  # the extension last: it marks a finished build
            os.replace(Path(tmp) / step.output, folder / step.output)  # atomic: readers never see a partial file


def _load(module: str, path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(module, str(path))
    spec = importlib.util.spec_from_file_location(module, path, loader=loader)
    assert spec is not None
    loaded = importlib.util.module_from_spec(spec)
    loader.exec_module(loaded)
    return loaded
