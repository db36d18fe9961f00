"""The per-call facts of a call's tensors: device, stream, and each tensor's pointer, signature and sizes.

`tensor_facts(ranks, *tensors)` returns one flat tuple:

    (device, stream, A_ptr, A_sig, A_0, ..., B_ptr, B_sig, B_0, ...)

`device` is the first tensor's CUDA device index (-1 when it is not on CUDA),
`stream` torch's current stream there; a tensor's signature encodes its
device, dtype and layout (an int when contiguous, `(int, *strides)` when not),
so it can go into a cache key as is. The C version (csrc/facts.c) reads all
of it through torch's DLPack exchange API in one call; `python_facts` computes
the same with torch's Python API and serves whatever the C version cannot
(meta tensors, non-tensors, a torch without the exchange API).

The same C module does a jit function's whole cached call where the
signature allows (`CachedCall`, see callpath/fastpath.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import torch

from tltyped.backend import build, torch_direct
from tltyped.types.dtypes import ALL_DTYPES, to_torch

logger = logging.getLogger(__name__)

_DLPACK_CODES: dict[torch.dtype, tuple[int, int]] = {to_torch(d): (d.dlpack_code, d.bits) for d in ALL_DTYPES}


def _signature(t: torch.Tensor, cuda: bool, data: int) -> int | tuple[int, ...]:
    code, bits = _DLPACK_CODES.get(t.dtype, (255, t.element_size() * 8))
    device = (2 * 65536 + t.get_device()) if cuda else 65536 if t.is_cpu else 0  # DLPack: CPU 1, CUDA 2
    if data == 0 and t.numel():
        device = 0  # no memory behind it (a wrapper subclass): a key no kernel is stored under
    sig = (device * 256 + code) * 256 + bits
    return sig if t.is_contiguous() else (sig, *t.stride())


def _public_current_stream(device: int) -> int:
    return int(torch.cuda.current_stream(device).cuda_stream)


_current_raw_stream: Callable[[int], int] = getattr(torch._C, "_cuda_getCurrentRawStream", _public_current_stream)
"""torch's raw current stream of a device: its private 0.1 us getter, or the public 4 us one where that is gone."""


def python_facts(ranks: bytes, *tensors: Any) -> tuple[Any, ...]:
    """The facts through torch's Python API (raises, or returns a wrong-length tuple, on bad input)."""
    device = tensors[0].get_device() if tensors and tensors[0].is_cuda else -1
    if not tensors and torch.cuda.is_available():
        device = torch.cuda.current_device()
    out: list[Any] = [device, _current_raw_stream(device) if device >= 0 else 0]
    for rank, t in zip(ranks, tensors):
        if t.dim() != rank:
            raise ValueError("rank mismatch")
        cuda = t.is_cuda
        data = t.data_ptr() if cuda or t.is_cpu else 0
        out += [data, _signature(t, cuda, data), *t.shape]
    return tuple(out)


def _load_c_facts() -> Any:
    if os.environ.get("TLTYPED_PYTHON_FACTS"):
        return None
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        logger.info("torch has no DLPack exchange API; tensor facts use the Python fallback")
        return None
    try:
        module = build.helper("tltyped_facts", "facts.c", build.cc_command([build.torch_include()]))
    except (build.CompileError, OSError, ImportError) as exc:
        logger.warning("tensor facts use the slower Python fallback: %s", exc)
        return None
    module.set_fallback(python_facts)
    module.set_reader(torch_direct.tensor_reader())
    return module


_C_FACTS = _load_c_facts()
tensor_facts: Callable[..., tuple[Any, ...]] = _C_FACTS.facts if _C_FACTS else python_facts
CachedCall: Callable[..., Any] | None = _C_FACTS.CachedCall if _C_FACTS else None
"""`CachedCall(launches, fallback, params, alignment)`: a jit function's whole cached call in C (csrc/facts.c)."""
