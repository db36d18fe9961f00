"""Where launchers get the outputs they return: torch's own C++ allocators (csrc/torch_empty.cpp).

The helper is built once per torch installation (a few seconds, on the first
kernel that returns an output) and found in the disk cache afterwards. A
launcher handed its capsule allocates each output for about 0.7 us on an
H200 host; a launcher without one (the helper cannot be built: no C++
compiler, an incompatible torch) falls back to torch's DLPack exchange API,
about twice that.
"""

from __future__ import annotations

import functools
import logging

from tltyped.backend import build

logger = logging.getLogger(__name__)


@functools.cache
def torch_empty() -> object | None:
    """The helper's `EMPTY` capsule, or None where the helper cannot be had (after one warning)."""
    try:
        capsule: object = build.helper("tltyped_torch_empty", "torch_empty.cpp", build.cxx_torch_command()).EMPTY
    except (build.CompileError, OSError, ImportError) as exc:
        logger.warning("outputs are allocated through torch's DLPack exchange API, the slower way: %s", exc)
        return None
    return capsule
