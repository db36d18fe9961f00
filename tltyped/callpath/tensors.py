"""Reading a call's tensors: device, stream, and each tensor's pointer, signature and sizes; and the C helper.

`tensor_facts(ranks, *tensors)` returns one flat tuple:

    (device, stream, A_ptr, A_sig, A_0, ..., B_ptr, B_sig, B_0, ...)

`device` is the first tensor's CUDA device index (-1 when it is not on CUDA),
`stream` torch's current stream there; a tensor's signature encodes its
device, dtype and layout (an int when contiguous, `(int, *strides)` when not),
so it can go into a cache key as is. The C helper (csrc/tensors.h, with the
cached call of csrc/cached_call.c) reads all of it through torch's DLPack
exchange API in one call; `python_facts` computes the same with torch's
Python API and serves whatever the C version cannot (meta tensors,
non-tensors, a tensor without memory, a torch without the exchange API).

The helpers are compiled the first time a kernel is called or compiled
(`load_helpers`), never when tltyped is imported or a kernel defined: once
built they are in the disk cache, and a later process loads them (a
`dlopen`) when it defines its kernels (`native`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import torch
from torch.autograd import forward_ad

from tltyped import locks
from tltyped.backend import build
from tltyped.callpath import torch_direct
from tltyped.errors import ArgumentValueError, CompileError
from tltyped.types.dtypes import ALL_DTYPES, dlpack_type, to_torch

logger = logging.getLogger(__name__)

_DLPACK_CODES: dict[torch.dtype, tuple[int, int]] = {to_torch(d): (d.dlpack_code, d.bits) for d in ALL_DTYPES}
if hasattr(torch, "float4_e2m1fn_x2"):  # a packed fp4 storage (dtypes.PACKED_DTYPES): as the C reader's DLPack has it
    _DLPACK_CODES[torch.float4_e2m1fn_x2] = dlpack_type(torch.float4_e2m1fn_x2)[:2]


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


def forward_ad_open() -> bool:
    """Whether a forward-mode AD level is open (`torch.autograd.forward_ad.dual_level()`, which `torch.func.jvp`
    opens too): an argument may carry a tangent, which a launch would drop; the slow path looks (the C reader
    reads the same global: csrc/tensors.h)."""
    return getattr(forward_ad, "_current_level", -1) >= 0


_PYTHON_KEY = torch._C.DispatchKey.Python  # a tensor subclass torch dispatches to Python: a tracer's FakeTensor, ...
_TRACER_KEY = torch._C._parse_dispatch_key("Tracer")  # not among torch._C.DispatchKey's names


def jit_tracing() -> bool:
    """Whether torch.jit.trace records the ops called now: tracing, and not inside an op it records (whose own calls
    it does not record), as torch's tracer decides. A launch would be missing from its graph, its outputs baked in as
    constants: the slow path calls the kernel's torch op instead, which the trace records (torch_direct.cpp's READ
    reads the same)."""
    return (_TRACER_KEY is not None and torch._C._dispatch_tls_is_dispatch_key_included(_TRACER_KEY)
            and not torch._C._dispatch_tls_is_dispatch_key_excluded(_TRACER_KEY))


_set_tracing_state: Callable[[Any], None] = torch._C._set_tracing_state  # type: ignore[attr-defined]  # not in torch's stubs


@contextlib.contextmanager
def jit_trace_paused() -> Iterator[None]:
    """torch.jit.trace paused while a call it records is read (its arguments bound, checked, its op found or
    defined), whichever way the call reaches its op: the trace records the op's call alone. Read while it records,
    each of the tensors' sizes would be a node of its graph and a warning that the trace takes it for a constant."""
    state = torch._C._get_tracing_state()
    _set_tracing_state(None)
    try:
        yield
    finally:
        _set_tracing_state(state)


def python_facts(ranks: bytes, *tensors: Any) -> tuple[Any, ...]:
    """The facts through torch's Python API (raises, or returns a wrong-length tuple, on bad input)."""
    if forward_ad_open():
        raise ArgumentValueError("a forward-mode AD level is open")  # the slow path's to look at
    if tensors and jit_tracing():  # a call of no tensor is launched, as the slow path launches it (dispatcher.py)
        raise ArgumentValueError("torch.jit.trace records the call")  # the slow path's: the kernel's op
    device = tensors[0].get_device() if tensors and tensors[0].is_cuda else -1
    if not tensors and torch.cuda.is_available():
        device = torch.cuda.current_device()
    out: list[Any] = [device, _current_raw_stream(device) if device >= 0 else 0]
    for rank, t in zip(ranks, tensors):
        if t.dim() != rank:
            raise ArgumentValueError("rank mismatch")
        if ((t.requires_grad and torch.is_grad_enabled()) or torch._C._dispatch_keys(t).has(_PYTHON_KEY)
                or t.is_neg() or t.is_conj()):
            # autograd, a tracer's tensor, or a negated or conjugated view (its memory holds other values than its
            # elements: `.conj().imag`): the slow path's to handle (dispatcher.py)
            raise ArgumentValueError("autograd, a tracer's tensor, or a negated or conjugated view")
        cuda = t.is_cuda
        data = t.data_ptr() if cuda or t.is_cpu else 0
        out += [data, _signature(t, cuda, data), *t.shape]
    return tuple(out)


_MODULE, _SOURCE, _HEADER = "tltyped_cached_call", "cached_call.c", "tensors.h"
_lock = locks.Lock()
_loaded: list[ModuleType | None] = []  # the helper once it is loaded, or None once it cannot be had


def native() -> ModuleType | None:
    """The C helper if it is loaded in this process or built in the disk cache; None otherwise (nothing is built)."""
    return _cached_call(build_now=False)


def load_helpers() -> ModuleType | None:
    """Build (once per machine) and load the C helpers: the tensor reader and cached call, torch's allocator.

    Called when a kernel is first called or compiled. None where the C helper cannot be had (no compiler,
    TLTYPED_PYTHON_FACTS set, a torch without the exchange API): the Python paths serve then.
    """
    reader = torch_direct.tensor_reader(build_now=True)
    module = _cached_call(build_now=True)
    if module is not None:
        module.set_reader(reader)
    return module


def _cached_call(build_now: bool) -> ModuleType | None:
    with _lock:
        if not _loaded:
            module, settled = _build_or_find(build_now)
            if not settled:
                return None  # not built yet: the first call of a kernel builds it
            if module is not None:
                module.set_fallback(python_facts)
                module.set_reader(torch_direct.tensor_reader(build_now=False))
            _loaded.append(module)
        return _loaded[0]


def _buildable() -> bool:
    """Whether the C helper may be had here: not turned off, and torch has the exchange API it reads through."""
    return not os.environ.get("TLTYPED_PYTHON_FACTS") and hasattr(torch.Tensor, "__dlpack_c_exchange_api__")


def _build_or_find(build_now: bool) -> tuple[ModuleType | None, bool]:
    """The helper module (built now, or found in the disk cache), and whether that is settled for this process:
    (None, True) where it cannot be had (after a warning), (None, False) where it is not built yet."""
    if not _buildable():
        if not os.environ.get("TLTYPED_PYTHON_FACTS"):
            logger.info("torch has no DLPack exchange API; tensor facts use the Python fallback")
        return None, True
    try:
        module = build.helper(_MODULE, "tltyped.callpath", _SOURCE, build.cc_command([build.torch_include()]),
                              headers=(_HEADER,), build_now=build_now)
    except (CompileError, OSError, ImportError) as exc:
        logger.warning("tensor facts use the slower Python fallback: %s", exc)
        return None, True
    return module, module is not None or build_now


def tensor_facts() -> Callable[..., tuple[Any, ...]]:
    """The facts function calls use now: the C helper's where it is loaded, else `python_facts`."""
    module = _loaded[0] if _loaded else None
    return module.facts if module is not None else python_facts
