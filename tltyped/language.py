"""TileLang's kernel language, plus tltyped's typed names.

`import tltyped.language as T` gives everything `tilelang.language` has
(`T.Kernel`, `T.copy`, `T.gemm`, `T.Pipelined`, `T.const`, `T.dynamic`, ...)
with these differences:
- `T.Tensor` is `tl.Tensor`, subscriptable in both orders
  (`T.Tensor[[M, K], T.float16]` and `T.Tensor[T.float16, M, K]`);
- `T.empty` and `T.alloc_global` declare outputs: allocated with torch on the
  inputs' device at each call and returned to the caller;
- functions that take a dtype also take tltyped's dtype classes (`tl.float32`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import tilelang.language as _tl
from tilelang.language import *  # noqa: F403
from tilelang.language.eager.builder import OutTensor

from tltyped.types.dtypes import DType, DTypeLike, to_tilelang
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


def empty(shape: Sequence[Any], dtype: DTypeLike = "float32") -> Any:
    """Declare an output tensor of the kernel; return it from the kernel."""
    return OutTensor(list(shape), to_tilelang(dtype))


def alloc_global(shape: Sequence[Any], dtype: DTypeLike) -> Any:
    """An output tensor, as `empty`: allocated by torch, returned to the caller."""
    return empty(shape, dtype)
