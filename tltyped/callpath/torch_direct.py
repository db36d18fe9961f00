"""tltyped's helper built against torch's C++ API (csrc/torch_direct.cpp), for three steps of a call.

- `torch_empty()`: how launchers allocate the outputs they return, on torch's
  own allocators, about 0.7 us per output on an H200 host; without it they
  allocate through torch's DLPack exchange API, about twice that.
- `tensor_reader()`: how the cached call reads a plain CUDA tensor, straight
  from its TensorImpl (under 10 ns; the exchange API takes 55 to 75 ns); any
  other tensor, or every tensor without it, is read through the exchange API.
- `version_bump()`: how launchers bump the version of each tensor their kernel
  writes, as torch's in-place ops do (so that autograd refuses a backward
  that would read a saved tensor a kernel has since written): a few
  nanoseconds; without it, `torch.autograd.graph.increment_version`.

The helper is built the first time a kernel is called or compiled (about
5 s, once per torch installation) and found in the disk cache afterwards.
Where it cannot be had (no C++ compiler, an incompatible torch) both fall
back, after one warning.
"""

from __future__ import annotations

import logging
from types import ModuleType

import torch

from tltyped import locks
from tltyped.backend import build
from tltyped.errors import CompileError

logger = logging.getLogger(__name__)

_lock = locks.Lock()
_loaded: list[ModuleType | None] = []  # the helper once it is loaded, or None once it cannot be had


def helper(*, build_now: bool = True) -> ModuleType | None:
    """The helper module; None where it cannot be had (after one warning), or is not built and `build_now` is not set."""
    with _lock:
        if _loaded:
            return _loaded[0]
        try:
            module = build.helper("tltyped_torch_direct", "tltyped.callpath", "torch_direct.cpp", build.cxx_torch_command(),
                                  build_now=build_now)
        except (CompileError, OSError, ImportError) as exc:
            logger.warning("outputs are allocated and tensors read through torch's DLPack exchange API, the slower way: %s", exc)
            module = None
        else:
            if module is None:
                return None  # not built yet: the first call of a kernel builds it
        _loaded.append(module)
        return module


def torch_empty(*, build_now: bool = True) -> object | None:
    """The helper's `EMPTY` capsule, for a launcher's `set_allocator`, or None."""
    module = helper(build_now=build_now)
    return module.EMPTY if module is not None else None


def tensor_reader(*, build_now: bool = True) -> object | None:
    """The helper's `READ` capsule, for the cached call's `set_reader`, or None (also where torch's
    layout is not what the helper checks for at import)."""
    module = helper(build_now=build_now)
    return module.READ if module is not None else None


def version_bump(*, build_now: bool = True) -> object:
    """The helper's `BUMP` capsule, for a launcher's `set_version_bump`; `bump_version` where it cannot be had."""
    module = helper(build_now=build_now)
    return module.BUMP if module is not None and module.BUMP is not None else bump_version


def bump_version(tensor: torch.Tensor) -> None:
    """What the helper's `BUMP` does, through torch's Python API: an inference tensor has no version to bump."""
    if not tensor.is_inference():
        torch.autograd.graph.increment_version(tensor)
