"""TileLang's kernel language, plus tltyped's typed names.

`import tltyped.language as T` gives everything `tilelang.language` has
(`T.Kernel`, `T.copy`, `T.gemm`, `T.Pipelined`, `T.const`, `T.dynamic`, ...)
with these differences:
- `T.Tensor` is `tl.Tensor`, subscriptable in both orders
  (`T.Tensor[[M, K], T.float16]` and `T.Tensor[T.float16, M, K]`) and
  callable as in TileLang (`T.Tensor((M, K), T.float16)` is the subscription);
- `T.empty` declares an output (allocated with torch on the inputs' device at
  each call, returned to the caller) and `T.alloc_global` a global buffer
  allocated the same way: an output when the kernel returns it, scratch
  memory otherwise;
- `T.tune` is `tl.tune`;
- functions that take a dtype also take tltyped's dtype classes (`tl.float32`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import tilelang.language as _tl
from tilelang.language import *  # noqa: F403
from tilelang.language.eager.builder import OutTensor

from tltyped.types.dtypes import DType, DTypeLike, to_tilelang
from tltyped.types.params import tune as tune
from tltyped.types.tensor import Tensor as Tensor

_F = TypeVar("_F", bound=Callable[..., Any])


def _tilelang_dtype(value: Any) -> Any:
    if isinstance(value, type) and issubclass(value, DType):
        return to_tilelang(value)
    return value


def _accepts_dtype_classes(fn: _F) -> _F:
    """Wrap a TileLang function so tltyped dtype classes pass as its dtypes."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args = tuple(_tilelang_dtype(a) for a in args)
        kwargs = {k: _tilelang_dtype(v) for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


alloc_shared = _accepts_dtype_classes(_tl.alloc_shared)
alloc_fragment = _accepts_dtype_classes(_tl.alloc_fragment)
alloc_local = _accepts_dtype_classes(_tl.alloc_local)
alloc_var = _accepts_dtype_classes(_tl.alloc_var)
cast = _accepts_dtype_classes(_tl.cast)


def _shape_and_dtype(shape: tuple[Any, ...], dtype: DTypeLike) -> tuple[list[Any], str]:
    """TileLang's spellings: `(shape)`, `(shape, dtype)` or `(*dims)`, each with `dtype=`."""
    if shape and isinstance(shape[0], (tuple, list)):
        if len(shape) > 2:
            raise TypeError(f"expected a shape and a dtype, got {shape!r}")
        dims, dtype = list(shape[0]), shape[1] if len(shape) == 2 else dtype
    else:
        dims = list(shape)
    return dims, to_tilelang(dtype)


def empty(*shape: Any, dtype: DTypeLike = "float32") -> Any:
    """Declare an output tensor of the kernel (`T.empty((M, N), dtype)` or `T.empty(M, N, dtype=...)`); return it."""
    return OutTensor(*_shape_and_dtype(shape, dtype))


@dataclass
class GlobalTensor:
    """What `T.alloc_global` declares: a kernel parameter the call allocates, returned only if the kernel returns it."""

    shape: list[Any]
    dtype: str


def alloc_global(*shape: Any, dtype: DTypeLike = "float32") -> Any:
    """A global buffer allocated by torch at each call: an output if the kernel returns it, else scratch memory."""
    return GlobalTensor(*_shape_and_dtype(shape, dtype))
