"""tltyped's helper built against torch's C++ API (csrc/torch_direct.cpp), for two steps of a call.

- `torch_empty()`: how launchers allocate the outputs they return, on torch's
  own allocators, about 0.7 us per output on an H200 host; without it they
  allocate through torch's DLPack exchange API, about twice that.
- `tensor_reader()`: how the cached call reads a plain CUDA tensor, straight
  from its TensorImpl (under 10 ns; the exchange API takes 55 to 75 ns); any
  other tensor, or every tensor without it, is read through the exchange API.

The helper is built once per torch installation (about 5 s) and found in the
disk cache afterwards. Where it cannot be had (no C++ compiler, an
incompatible torch) both fall back, after one warning.
"""

from __future__ import annotations

import functools
import logging
from types import ModuleType

from tltyped.backend import build

logger = logging.getLogger(__name__)


@functools.cache
def helper() -> ModuleType | None:
    """The helper module, or None where it cannot be had (after one warning)."""
    try:
        return build.helper("tltyped_torch_direct", "torch_direct.cpp", build.cxx_torch_command())
    except (build.CompileError, OSError, ImportError) as exc:
        logger.warning("outputs are allocated and tensors read through torch's DLPack exchange API, the slower way: %s", exc)
        return None


def torch_empty() -> object | None:
    """The helper's `EMPTY` capsule, for a launcher's `set_allocator`, or None."""
    module = helper()
    return module.EMPTY if module is not None else None


def tensor_reader() -> object | None:
    """The helper's `READ` capsule, for the cached call's `set_reader`, or None (also where torch's
    layout is not what the helper checks for at import)."""
    module = helper()
    return module.READ if module is not None else None
