"""Shared test setup: import paths, a hermetic environment, shared compiled kernels.

The environment is set when this file is imported, before any test module
imports tltyped or TileLang:
- TLTYPED_CACHE_DIR and TILELANG_CACHE_DIR point into one temporary directory
  for the session (removed at the end), so no test reads or writes a user's
  kernel cache and every nvcc build counted here really happens;
- TLTYPED_TARGET=sm_90a when no CUDA GPU is visible (CPU machines lower and
  build for Hopper); with a GPU the target is left to detection.

Tests that need one specific target set it themselves with monkeypatch.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
if str(ROOT) not in sys.path:  # `tltyped` and `tests.kernels` (pyproject's pythonpath does the same under pytest)
    sys.path.insert(0, str(ROOT))

_SESSION_DIR = Path(tempfile.mkdtemp(prefix="tltyped-tests-"))
os.environ["TLTYPED_CACHE_DIR"] = str(_SESSION_DIR / "tltyped")
os.environ["TILELANG_CACHE_DIR"] = str(_SESSION_DIR / "tilelang")

import torch  # noqa: E402  (after the environment is set)

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ["TLTYPED_TARGET"] = "sm_90a"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_SESSION_DIR, ignore_errors=True)


def has_nvcc() -> bool:
    try:
        from tilelang.contrib.nvcc import get_nvcc_compiler

        compiler = get_nvcc_compiler()
    except Exception:
        return False
    return bool(compiler) and (os.path.exists(compiler) or shutil.which(compiler) is not None)


needs_nvcc = pytest.mark.skipif(not has_nvcc(), reason="nvcc is not available")
no_gpu = pytest.mark.skipif(HAS_GPU, reason="checks behaviour on a machine without a CUDA GPU")


def meta(*shape: int, dtype: torch.dtype = torch.float16) -> torch.Tensor:
    """A tensor with a shape and dtype but no data: what fn.lower/compile take on a CPU machine."""
    return torch.empty(*shape, dtype=dtype, device="meta")


def _load_example(name: str) -> ModuleType:
    return importlib.import_module(f"examples.{name}")


@contextlib.contextmanager
def target_env(arch: str) -> Iterator[str]:
    """TLTYPED_TARGET=arch for the duration of the block, whatever it was before."""
    previous = os.environ.get("TLTYPED_TARGET")
    os.environ["TLTYPED_TARGET"] = arch
    try:
        yield arch
    finally:
        if previous is None:
            os.environ.pop("TLTYPED_TARGET", None)
        else:
            os.environ["TLTYPED_TARGET"] = previous


@pytest.fixture
def sm90(monkeypatch: pytest.MonkeyPatch) -> str:
    """Lower and build for Hopper in this test, whatever GPU (if any) this machine has."""
    monkeypatch.setenv("TLTYPED_TARGET", "sm_90a")
    return "sm_90a"


@pytest.fixture(scope="session")
def seed_gemm() -> ModuleType:
    """examples/gemm.py: the signature form, K dyn."""
    return _load_example("gemm")


@pytest.fixture(scope="session")
def seed_gemm_in_body() -> ModuleType:
    """examples/gemm_in_body.py: the second seed's in-body form."""
    return _load_example("gemm_in_body")


@pytest.fixture(scope="session")
def compiled_outputs() -> object:
    """nvcc build 1 of the session: a kernel with a T.empty and a T.alloc_global output and a dyn dim."""
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    from tests.kernels.outputs import two_outputs

    with target_env("sm_90a"):
        return two_outputs.compile(meta(256, 96, dtype=torch.float32))


@pytest.fixture(scope="session")
def compiled_seed_gemm(seed_gemm: ModuleType) -> object:
    """nvcc build 2 of the session: the seed GEMM (signature form, K dyn) for sm_90a."""
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    with target_env("sm_90a"):
        return seed_gemm.gemm.compile(meta(1024, 512), meta(512, 256))
