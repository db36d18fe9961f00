"""Build C/CUDA sources into Python extension modules, cached on disk.

Builds are content-addressed: the folder is a hash of the source, the
compiler command and the Python ABI, so a module built once (by any process)
is loaded again with a `dlopen`. Kernels are built with nvcc and link nothing
against the CUDA driver (the runtime library is static and driver entry points
are looked up at run time), so they build on machines without a GPU.
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


def nvcc_command(arch: str, extra_flags: list[str]) -> list[str]:
    """TileLang's nvcc flags for a shared library of kernels plus the Python binding."""
    from tilelang.contrib.nvcc import get_nvcc_compiler
    from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH

    code = arch.removeprefix("sm_")
    return [
        get_nvcc_compiler(), "-std=c++20", "-O3", "-w", "-lineinfo", "--shared", "-Xcompiler", "-fPIC",
        "-Xcudafe", "--diag_suppress=177", "-gencode", f"arch=compute_{code},code=sm_{code}",
        f"-I{TILELANG_TEMPLATE_PATH}", f"-I{CUTLASS_INCLUDE_DIR}", f"-I{python_include()}", *extra_flags,
    ]


def cc_command(include_dirs: list[str]) -> list[str]:
    """The host C compiler, for helpers with no device code."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()
    return [*compiler, "-O2", "-shared", "-fPIC", f"-I{python_include()}", *(f"-I{d}" for d in include_dirs)]


def build(name_hint: str, module: str, source: str, suffix: str, command: list[str]) -> tuple[ModuleType, bool]:
    """Compile (or find in the cache) and import extension `module`; returns (module, was_compiled).

    Every build of one module name lives at its own path, which is all CPython
    needs to keep their single-phase-init modules apart.
    """
    digest = hashlib.sha256()
    for part in (source, "\0".join(command[1:]), sys.implementation.cache_tag):
        digest.update(part.encode())
        digest.update(b"\0")
    path = cache_dir() / digest.hexdigest()[:32] / f"{module}{sysconfig.get_config_var('EXT_SUFFIX')}"
    compiled = False
    if not path.exists():
        _compile(name_hint, module, source, suffix, command, path)
        compiled = True
    return _load(module, path), compiled


def _compile(name_hint: str, module: str, source: str, suffix: str, command: list[str], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tltyped-") as tmp:
        src = Path(tmp) / f"{module}{suffix}"
        src.write_text(source)
        out = Path(tmp) / path.name
        result = subprocess.run([*command, str(src), "-o", str(out)], capture_output=True, text=True)
        if result.returncode != 0:
            kept = path.parent / f"failed{suffix}"
            kept.write_text(source)
            raise CompileError(
                f"{name_hint}: {Path(command[0]).name} failed (exit {result.returncode}); source kept at {kept}\n"
                f"{(result.stderr or result.stdout).strip()[-4000:]}"
            )
        os.replace(out, path)  # atomic: concurrent builders of one module never see a partial file


def _load(module: str, path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(module, str(path))
    spec = importlib.util.spec_from_file_location(module, path, loader=loader)
    assert spec is not None
    loaded = importlib.util.module_from_spec(spec)
    loader.exec_module(loaded)
    return loaded
