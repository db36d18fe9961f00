"""Build a CUDA source into a Python extension module with nvcc, cached on disk.

The build is content-addressed: the file name is a hash of the source, the
nvcc command and the Python ABI, so a kernel compiled once (by any process)
is loaded again with a `dlopen`. Nothing links against the CUDA driver: the
runtime library is static and driver entry points are looked up at run time,
so the build works on machines without a GPU.
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
    """nvcc rejected the generated source."""


def cache_dir() -> Path:
    root = os.environ.get(ENV_CACHE_DIR) or os.path.join(os.path.expanduser("~"), ".cache", "tltyped")
    path = Path(root) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def nvcc_command(arch: str, extra_flags: list[str]) -> list[str]:
    from tilelang.contrib.nvcc import get_nvcc_compiler
    from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH

    code = arch.removeprefix("sm_")
    return [
        get_nvcc_compiler(), "-std=c++20", "-O3", "-w", "-lineinfo", "--shared", "-Xcompiler", "-fPIC",
        "-Xcudafe", "--diag_suppress=177", "-gencode", f"arch=compute_{code},code=sm_{code}",
        f"-I{TILELANG_TEMPLATE_PATH}", f"-I{CUTLASS_INCLUDE_DIR}", f"-I{sysconfig.get_paths()['include']}",
        *extra_flags,
    ]


MODULE_NAME = "tltyped_kernel"
"""Every kernel's extension has this module name; each lives at its own path."""


def build(name_hint: str, source: str, arch: str, extra_flags: list[str]) -> tuple[ModuleType, bool]:
    """Compile (or find in the cache) and import the extension; returns (module, was_compiled)."""
    command = nvcc_command(arch, extra_flags)
    digest = hashlib.sha256()
    for part in (source, "\0".join(command[1:]), sys.implementation.cache_tag):
        digest.update(part.encode())
        digest.update(b"\0")
    path = cache_dir() / digest.hexdigest()[:32] / f"{MODULE_NAME}{sysconfig.get_config_var('EXT_SUFFIX')}"
    compiled = False
    if not path.exists():
        _compile(name_hint, source, command, path)
        compiled = True
    return _load(path), compiled


def _compile(name_hint: str, source: str, command: list[str], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tltyped-") as tmp:
        src = Path(tmp) / f"{MODULE_NAME}.cu"
        src.write_text(source)
        out = Path(tmp) / path.name
        result = subprocess.run([*command, str(src), "-o", str(out)], capture_output=True, text=True)
        if result.returncode != 0:
            kept = path.parent / "failed.cu"
            kept.write_text(source)
            raise CompileError(
                f"{name_hint}: nvcc failed (exit {result.returncode}); source kept at {kept}\n"
                f"{(result.stderr or result.stdout).strip()[-4000:]}"
            )
        os.replace(out, path)  # atomic: concurrent builders of one kernel never see a partial file


def _load(path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
