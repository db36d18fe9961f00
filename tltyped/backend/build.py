"""Build C/CUDA sources into Python extension modules, through the disk cache.

A build is a list of compiler steps run side by side. Its cache key covers
everything that changes the binaries: the sources, the compiler commands,
each compiler's `--version`, the versions of tltyped, TileLang and torch, and
the Python ABI; so a module built once (by any process) is loaded again with a
`dlopen`. A kernel is two steps: its device code into a cubin (nvcc, device
only) and its host launcher into a small C++ extension that loads the cubin
at the first launch; neither links against the CUDA driver (the runtime
library is static and driver entry points are looked up at run time), so
kernels build on machines without a GPU.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import ModuleType

import torch

from tltyped import locks
from tltyped.backend import cache, records
from tltyped.errors import CompileError



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

    return [
        get_nvcc_compiler(), "-std=c++17", "-O2", "-w", "--shared", "-Xcompiler", "-fPIC",
        f"-I{python_include()}", f"-I{torch_include()}",
    ]


def cc_command(include_dirs: list[str]) -> list[str]:
    """The host C compiler, for helpers with no CUDA at all."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()
    return [*compiler, "-O2", "-shared", "-fPIC", f"-I{python_include()}", *(f"-I{d}" for d in include_dirs)]


def cxx_torch_command() -> list[str]:
    """The host C++ compiler, for a helper built against torch's C++ headers and linked with its libraries."""
    compiler = (sysconfig.get_config_var("CXX") or "c++").split()
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    return [
        *compiler, "-std=c++17", "-O2", "-w", "-shared", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={int(torch.compiled_with_cxx11_abi())}",
        f"-I{python_include()}", f"-I{torch_include()}", f"-L{lib}", f"-Wl,-rpath,{lib}", "-Wl,--no-as-needed",
        "-ltorch_python", "-ltorch_cpu", "-lc10",
    ]


@dataclass(frozen=True)
class Step:
    """One compiler run: `command source -o output` in the build folder, with the headers the source includes
    (`#include "name"`) written beside it."""

    source_name: str
    source: str
    command: list[str]
    output: str
    headers: tuple[tuple[str, str], ...] = ()  # (file name, text)


def extension_name(module: str) -> str:
    return f"{module}{sysconfig.get_config_var('EXT_SUFFIX')}"


def file_identity(path: str) -> list[int]:
    """What tells one binary at `path` from another: size, mtime and inode ([] if it is gone)."""
    try:
        info = os.stat(path)
    except OSError:
        return []
    return [info.st_size, info.st_mtime_ns, info.st_ino]


@functools.cache
def _compiler_version(path: str, identity: tuple[int, ...]) -> str:
    """`compiler --version`, run once per compiler binary: its output is kept in the disk cache by the
    binary's identity (an upgrade changes it), so a warm process spawns no compiler."""
    key = records.source_key("compiler --version", path, identity)
    record = records.read(records.CompilerRecord, key)
    if record is not None:
        return record.version
    try:
        run = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable: {exc}"
    version = run.stdout.strip()
    if run.returncode == 0:
        records.write(key, records.CompilerRecord(path, version))
    return version


def compiler_path(program: str) -> str:
    """The resolved path of the compiler a command runs."""
    return os.path.realpath(shutil.which(program) or program)


def compiler_version(program: str) -> str:
    """The `--version` output of the compiler a command runs (nvcc also reports its host compiler, g++)."""
    path = compiler_path(program)
    identity = file_identity(path)
    return _compiler_version(path, tuple(identity)) if identity else f"{program}: not found"


def build_key(steps: list[Step]) -> tuple[str, dict[str, object]]:
    """The cache key of a build, and what the manifest records about it."""
    programs = sorted({s.command[0] for s in steps})
    if any(Path(p).name.startswith("nvcc") for p in programs):
        programs.append(os.environ.get("NVCC_CCBIN", "g++"))  # the host compiler nvcc drives
    toolchain = {Path(program).name: compiler_version(program) for program in programs}
    files = {compiler_path(program): file_identity(compiler_path(program)) for program in programs}
    digest = hashlib.sha256()
    for step in steps:
        for part in (step.source_name, step.source, "\0".join(step.command[1:]), step.output, *sum(step.headers, ())):
            digest.update(part.encode())
            digest.update(b"\0")
    for name, value in sorted({**records.versions(), **toolchain}.items()):
        digest.update(f"{name}={value}\0".encode())
    return digest.hexdigest()[:32], {"versions": records.versions(), "toolchain": toolchain, "toolchain_files": files}


def build(name_hint: str, steps: list[Step]) -> tuple[Path, bool]:
    """Run the steps (in parallel) or find their products in the disk cache.

    Returns the folder holding every product (verified, see cache.py) and
    whether anything was compiled now. Each build lives in a folder of its
    own, which is all CPython needs to keep single-phase-init extension
    modules of one name apart.
    """
    key, about = build_key(steps)
    try:
        return cache.get_or_build(key, {"name": name_hint, **about}, lambda staging: _compile(name_hint, steps, staging))
    except OSError as exc:  # a full disk, a file-size limit or quota: the sources, products or manifest cannot be written
        raise _unwritable(name_hint, exc.strerror or str(exc)) from exc


def _unwritable(name_hint: str, reason: str) -> CompileError:
    """The build could not be written into the cache: what to do about it."""
    return CompileError(
        f"{name_hint}: cannot write the build into the kernel cache {cache.root()} ({reason}): "
        f"free space or set {cache.ENV_CACHE_DIR} to another folder"
    )


def _compile(name_hint: str, steps: list[Step], folder: Path) -> None:
    runs: list[tuple[Step, subprocess.Popen[str]]] = []
    try:
        for step in steps:
            for header, text in step.headers:
                (folder / header).write_text(text)
            src = folder / step.source_name
            src.write_text(step.source)
            runs.append((step, _start(name_hint, [*step.command, str(src), "-o", str(folder / step.output)])))
    except BaseException:
        for _, run in runs:  # a later step could not be written or started: stop the compilers already running
            run.kill()
            run.wait()
        raise
    failures = []
    for step, run in runs:
        output, _ = run.communicate()
        if run.returncode != 0:
            failures.append((step, run.returncode, output))
    if failures:
        step, returncode, output = failures[0]
        if _FULL_DISK in output and shutil.disk_usage(folder).free < _NEARLY_FULL:  # the compiler could not write
            # its products into the cache: the cache's trouble, not the source's (a full TMPDIR is the compiler's)
            raise _unwritable(name_hint, f"{_FULL_DISK}: {Path(step.command[0]).name} could not write {step.output}")
        kept = folder.parent / "failed" / f"{folder.name.lstrip('.')}-{step.source_name}"
        kept.parent.mkdir(mode=0o700, exist_ok=True)
        shutil.copyfile(folder / step.source_name, kept)
        os.chmod(kept, 0o600)
        raise CompileError(
            f"{name_hint}: {Path(step.command[0]).name} failed on {step.source_name} (exit {returncode}); "
            f"source kept at {kept}\n{output.strip()[-4000:]}"
        )


_FULL_DISK = "No space left on device"
"""What a compiler prints (ENOSPC's strerror) when a file system cannot take its output."""
_NEARLY_FULL = 64 << 20
"""Free bytes below which the cache's file system is the one that was full (a build's products take a few MB)."""


def _start(name_hint: str, command: list[str]) -> subprocess.Popen[str]:
    """Start a compiler; where it cannot be run, a CompileError that says which one and how to get it."""
    try:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as exc:
        program = command[0]
        if Path(program).name.startswith("nvcc"):
            what, remedy = "the CUDA compiler nvcc", "install the CUDA toolkit, put nvcc on PATH or set CUDA_HOME"
        else:
            what, remedy = f"the host compiler {Path(program).name}", "install a C and C++ compiler (gcc or clang)"
        where = f"at {program}" if os.path.dirname(program) else "on PATH"
        missing = isinstance(exc, FileNotFoundError)
        problem = f"was not found {where}" if missing else f"{where} cannot be run ({exc.strerror})"
        raise CompileError(f"{name_hint}: {what} {problem}: {remedy}") from exc


def helper(
    module: str, package: str, source_name: str, command: list[str], *, headers: tuple[str, ...] = (), build_now: bool = True,
) -> ModuleType | None:
    """One of tltyped's own C helpers (`<package>/csrc/<source_name>` and its `headers`, extension `module`):
    built once, then found in the disk cache, and imported. Without `build_now`, None where it is not built
    yet. Raises CompileError, OSError or ImportError where it cannot be had."""
    sources = resources.files(package).joinpath("csrc")
    name = extension_name(module)
    step = Step(source_name, sources.joinpath(source_name).read_text(), command, name,
                tuple((header, sources.joinpath(header).read_text()) for header in headers))
    if build_now:
        folder, _ = build(module, [step])
    else:
        found = cache.find(build_key([step])[0])
        if found is None:
            return None
        folder = found
    return load_extension(module, folder / name)


_loading = locks.Lock()


@functools.cache
def _imported(module: str, path: str) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(module, path)
    spec = importlib.util.spec_from_file_location(module, path, loader=loader)
    assert spec is not None
    loaded = importlib.util.module_from_spec(spec)
    loader.exec_module(loaded)
    if sys.modules.get(module) is loaded:
        del sys.modules[module]  # no `import` finds a kernel by the name every launcher shares
    return loaded


def load_extension(module: str, path: Path) -> ModuleType:
    """Import the extension module `module` from `path` (not from sys.path), once per path and process.

    Every launcher is a module named `tltyped_kernel`. CPython imports a
    single-phase extension only once per path: importing one again hands back
    the module of that name it imported last, with the first import's
    contents copied over it, which would make another kernel's module run
    this one. So each path is imported once and its module kept.
    """
    with _loading:
        return _imported(module, os.path.realpath(path))


def torch_include() -> str:
    """torch's C headers (ATen/dlpack.h: the DLPack exchange API the fast path and launchers use)."""
    return os.path.join(os.path.dirname(torch.__file__), "include")
