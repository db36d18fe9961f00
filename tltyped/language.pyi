"""Typed view of the kernel language: `import tltyped.language as T`.

TileLang's language (the shared definitions: tltyped/_tilelang_language.pyi)
with tltyped's versions of the functions tltyped/language.py replaces:
`T.empty` and `T.alloc_global` declare the kernel's outputs (tensors,
returned to the caller), and the functions that take a dtype also take
tltyped's dtype classes (`tl.float16`). `T.dtype`, as an annotation
(`out_dtype: T.dtype`), means any of those dtypes.
"""

from collections.abc import Sequence
from typing import Any, overload

import torch
from typing_extensions import TypeAlias, Unpack

from tltyped._tilelang_language import *
from tltyped._tilelang_language import Buffer, Shape, _float, _int, _KernelDType, _ScalarVar
from tltyped._tilelang_language import __exp as __exp
from tltyped._tilelang_language import __log as __log
from tltyped.types.tensor import Tensor as _Tensor

dtype: TypeAlias = _KernelDType
"""What tltyped's language functions accept as a dtype: TileLang's dtypes, torch dtypes, tltyped's classes."""

@overload
def empty(shape: Sequence[_int], dtype: dtype = "float32") -> _Tensor[Any, Unpack[tuple[Any, ...]]]:
    """Declare an output tensor of the kernel; return it from the kernel."""

@overload
def empty(*shape: _int, dtype: dtype = "float32") -> _Tensor[Any, Unpack[tuple[Any, ...]]]:
    """TileLang's spelling, `T.empty(M, N, dtype=...)`: the dims one by one, the dtype by name."""

def alloc_global(shape: Sequence[_int], dtype: dtype) -> _Tensor[Any, Unpack[tuple[Any, ...]]]:
    """An output tensor, as `empty`."""

def alloc_shared(shape: Shape, dtype: dtype, scope: str = "shared.dyn") -> Buffer: ...
def alloc_fragment(shape: Shape, dtype: dtype, scope: str = "local.fragment") -> Buffer: ...
def alloc_local(shape: Shape, dtype: dtype, scope: str = "local") -> Buffer: ...
def alloc_var(dtype: dtype, *args: Any, scope: str = "local.var", init: _int | _float | None = None) -> _ScalarVar: ...
def cast(value: Any, dtype: dtype) -> Any: ...
def __getattr__(name: str) -> Any:
    """The rest of `tilelang.language`: untyped, so never an error."""
