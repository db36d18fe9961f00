"""TileLang's kernel language, typed: `import tilelang.language as T` in a kernel.

The shared definitions (tltyped/_tilelang_language.pyi, which tltyped's own
`tltyped.language` reads too) with TileLang's versions of the functions
tltyped replaces: `empty` takes TileLang's dtypes (its shape as a tuple, or
the dims one by one), `alloc_global` is a plain global buffer, and `alloc_*`
and `cast` take TileLang's dtypes, its names and torch dtypes, not tltyped's
classes (which tltyped.language's versions convert wherever they are called).
"""

from collections.abc import Sequence
from typing import Any, overload

from typing_extensions import TypeAlias, Unpack

from tltyped._tilelang_language import *
from tltyped._tilelang_language import Buffer, Shape, TileLangDType, _float, _int, _ScalarVar
from tltyped._tilelang_language import __exp as __exp
from tltyped._tilelang_language import __log as __log
from tltyped.types.tensor import Tensor as _Tensor

dtype: TypeAlias = TileLangDType

@overload
def empty(shape: Sequence[_int], dtype: dtype = "float32") -> _Tensor[Any, Unpack[tuple[Any, ...]]]:
    """Declare an output tensor of the kernel; return it from the kernel."""

@overload
def empty(*shape: _int, dtype: dtype = "float32") -> _Tensor[Any, Unpack[tuple[Any, ...]]]:
    """The dims one by one, the dtype by name: `T.empty(M, N, dtype=...)`."""

def alloc_global(shape: Shape, dtype: dtype, scope: str = "global") -> Buffer: ...
def alloc_shared(shape: Shape, dtype: dtype, scope: str = "shared.dyn") -> Buffer: ...
def alloc_fragment(shape: Shape, dtype: dtype, scope: str = "local.fragment") -> Buffer: ...
def alloc_local(shape: Shape, dtype: dtype, scope: str = "local") -> Buffer: ...
def alloc_var(dtype: dtype, *args: Any, scope: str = "local.var", init: _int | _float | None = None) -> _ScalarVar: ...
def cast(value: Any, dtype: dtype) -> Any: ...
def __getattr__(name: str) -> Any: ...
