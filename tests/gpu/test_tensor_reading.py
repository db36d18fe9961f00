"""How the cached call reads CUDA tensors: torch_direct's READ for plain ones, torch's DLPack exchange API otherwise.

Keys are built from the C facts for real tensors and from the Python facts
otherwise, so the two must agree on every tensor, whichever way it was read.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import pytest
import torch

from tltyped.callpath import tensors as facts, torch_direct
from tltyped.types import ALL_DTYPES, to_torch

pytestmark = pytest.mark.skipif(facts.load_helpers() is None, reason="the C tensor facts are not built here")


def read() -> Callable[[torch.Tensor], int]:
    """torch_direct's READ, called on a tensor: 0 where it reads it, -1 where it leaves it to the exchange API,
    1 where no launch may take it (autograd's or a tracer's: the slow path's) (called with the GIL held, and
    raising if it left a Python error set)."""
    capsule = torch_direct.tensor_reader()
    assert capsule is not None, "torch_direct's READ is not available with this torch"
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    fn = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(get_pointer(capsule, b"tltyped.read"))
    out = ctypes.create_string_buffer(64)  # a DLTensor is 48 bytes
    return lambda t: fn(t, out)


def both_ways(t: torch.Tensor) -> None:
    ranks = bytes([t.dim()])
    assert facts.tensor_facts()(ranks, t) == facts.python_facts(ranks, t), (t.dtype, t.shape, t.stride())


def strided(dtype: torch.dtype, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> torch.Tensor:
    return torch.empty(512, dtype=dtype, device="cuda").as_strided(shape, strides, offset)


LAYOUTS = [((), (), 0), ((7,), (1,), 3), ((0,), (1,), 5), ((4, 5), (5, 1), 0), ((4, 5), (1, 4), 2), ((3, 1, 4), (4, 9, 1), 1),
           ((2, 3, 4), (0, 4, 1), 0), ((2, 0, 3), (3, 3, 1), 7)]


@pytest.mark.parametrize("dtype", [to_torch(d) for d in ALL_DTYPES], ids=str)
def test_plain_cuda_tensors_are_read_directly_and_agree_with_the_python_facts(dtype: torch.dtype) -> None:
    reads = read()
    for shape, strides, offset in LAYOUTS:
        t = strided(dtype, shape, strides, offset)
        assert reads(t) == 0, (dtype, shape, strides)
        both_ways(t)
    param = torch.nn.Parameter(torch.zeros(6, device="cuda").to(dtype), requires_grad=dtype.is_floating_point)
    with torch.no_grad():
        assert reads(param) == 0
        both_ways(param)
    if param.requires_grad:  # with grad mode on, autograd would record the call: the slow path's
        assert reads(param) == 1


KERNEL_DTYPES = {to_torch(d) for d in ALL_DTYPES}
OTHERS: dict[str, Callable[[], torch.Tensor]] = {
    "made in inference mode": lambda: torch.inference_mode()(lambda: torch.randn(8, device="cuda"))(),
    "sparse": lambda: torch.randn(4, 4, device="cuda").to_sparse(),
    "meta": lambda: torch.empty(8, device="meta"),
    "cpu": lambda: torch.randn(8),
    "pinned cpu": lambda: torch.randn(8).pin_memory(),
}


@pytest.mark.parametrize("make", OTHERS.values(), ids=OTHERS.keys())
def test_other_tensors_are_left_to_the_exchange_api_and_agree_too(make: Callable[[], torch.Tensor]) -> None:
    t = make()
    assert read()(t) == -1
    if t.dtype not in KERNEL_DTYPES:
        return  # a complex tensor: no kernel takes one, and its key only has to send it to the slow path
    ranks = bytes([t.dim()])
    try:
        python = facts.python_facts(ranks, t)
    except Exception as exc:  # a tensor no kernel can take: both ways refuse it alike
        with pytest.raises(type(exc)):
            facts.tensor_facts()(ranks, t)
    else:
        assert facts.tensor_facts()(ranks, t) == python


LAZY_VIEWS: dict[str, Callable[[], torch.Tensor]] = {
    "conjugate view": lambda: torch.randn(8, dtype=torch.complex64, device="cuda").conj(),
    "negative view": lambda: torch._neg_view(torch.randn(8, device="cuda")),
    "negative view of a conjugate": lambda: torch._neg_view(torch.randn(8, dtype=torch.complex64, device="cuda").conj()),
    "real part of a conjugate": lambda: torch.randn(8, dtype=torch.complex64, device="cuda").conj().imag,
}


@pytest.mark.parametrize("make", LAZY_VIEWS.values(), ids=LAZY_VIEWS.keys())
def test_negated_and_conjugated_views_are_left_to_the_slow_path(make: Callable[[], torch.Tensor]) -> None:
    """Their memory holds other values than their elements: never read here, refused by both facts alike."""
    t = make()
    assert read()(t) == 1
    ranks = bytes([t.dim()])
    with pytest.raises(ValueError):
        facts.python_facts(ranks, t)
    with pytest.raises(ValueError):
        facts.tensor_facts()(ranks, t)


def test_a_dispatch_subclass_is_left_to_the_slow_path() -> None:
    """A tensor torch dispatches to Python (a tracer's FakeTensor, FunctionalTensor) is never launched here."""

    class Logged(torch.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            return func(*args, **(kwargs or {}))

    t = torch.Tensor._make_subclass(Logged, torch.randn(8, device="cuda"))
    assert read()(t) == 1
