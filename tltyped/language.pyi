"""Typed view of the kernel language: `import tltyped.language as T`.

This stub types what kernels use from TileLang 0.1.15's language, with the
signatures TileLang defines; every other name of `tilelang.language` is `Any`
through the module `__getattr__` below, so nothing a kernel may use is an error.

Conventions (why the types look the way they do):
- Kernel-side scalars (block and thread indices, loop variables, dims,
  `T.const`/`T.dynamic` values) become TIR expressions when a kernel is
  elaborated. They are typed as the Python scalars they stand for (`int` for
  indices and sizes, `float` for math results), so index arithmetic and
  ordinary helper functions type-check like Python code.
- Buffers (`T.alloc_shared`, `T.alloc_fragment`, ...) are `Buffer`; reading an
  element gives `Any`, because the element type is a run-time dtype.
- TileLang's dtype values (`T.float16`, ...) are `dtype` instances, a `str`
  subclass as at run time. The tltyped mypy plugin reads them as element
  types inside `T.Tensor[...]` and as `int`/`float`/`bool` when one annotates a
  dyn scalar (`n: T.int32`); tltyped's dtype classes (`tl.float16`) are
  accepted wherever a dtype is.
- `T.empty` and `T.alloc_global` declare the kernel's outputs (tltyped's
  versions): they are tensors, returned to the caller.
"""

import builtins
from collections.abc import Callable, Iterator, Sequence
from enum import IntEnum
from typing import Any, Generic, Literal, TypeVar, overload

import torch
from typing_extensions import ParamSpec, TypeAlias, Unpack

from tltyped.types.dtypes import DType
from tltyped.types.tensor import Tensor as Tensor

_int: TypeAlias = builtins.int
_float: TypeAlias = builtins.float
_bool: TypeAlias = builtins.bool
_T = TypeVar("_T")
_N = TypeVar("_N", bound=builtins.float)
_P = ParamSpec("_P")

# -- dtypes -------------------------------------------------------------------------

class dtype(str):
    """TileLang's element type (TVM FFI's `dtype`, a `str` subclass)."""

    def __new__(cls, value: str | torch.dtype | type[DType]) -> dtype: ...
    @property
    def bits(self) -> _int: ...
    @property
    def lanes(self) -> _int: ...
    def with_lanes(self, lanes: _int) -> dtype: ...

DTypeLike: TypeAlias = dtype | str | torch.dtype | type[DType]
"""What a dtype parameter accepts: TileLang dtypes, names, torch dtypes, tltyped classes."""

bool: dtype
int8: dtype
int16: dtype
int32: dtype
int64: dtype
uint8: dtype
uint16: dtype
uint32: dtype
uint64: dtype
int4: dtype
float16: dtype
bfloat16: dtype
float32: dtype
float64: dtype
tfloat32: dtype
float8_e4m3: dtype
float8_e4m3fn: dtype
float8_e4m3fnuz: dtype
float8_e5m2: dtype
float8_e5m2fnuz: dtype
float8_e8m0fnu: dtype
float4_e2m1fn: dtype
half: dtype
float: dtype
double: dtype
int: dtype
long: dtype
short: dtype
uint: dtype

# -- buffers and tensors ------------------------------------------------------------

class PrimExpr:
    """A TIR expression or statement handle, as tile operations return it."""

class Buffer:
    """A TileLang buffer (`tir.Buffer`) in shared, fragment, local or global memory."""

    @property
    def shape(self) -> tuple[_int, ...]: ...
    @property
    def dtype(self) -> dtype: ...
    @property
    def scope(self) -> str: ...
    def __getitem__(self, index: Any) -> Any: ...
    def __setitem__(self, index: Any, value: Any) -> None: ...
    def access_ptr(self, access_mask: str | _int, *args: Any, **kwargs: Any) -> PrimExpr: ...

BufferLike: TypeAlias = Buffer | torch.Tensor
"""What tile operations take: a buffer, or a tensor parameter (a global buffer once the
kernel is elaborated); regions of either (`A[i, j]`, `buf[0:4]`) are accepted too."""

Shape: TypeAlias = Sequence[_int] | _int

def alloc_shared(shape: Shape, dtype: DTypeLike, scope: str = "shared.dyn") -> Buffer: ...
def alloc_fragment(shape: Shape, dtype: DTypeLike, scope: str = "local.fragment") -> Buffer: ...
def alloc_local(shape: Shape, dtype: DTypeLike, scope: str = "local") -> Buffer: ...
def alloc_var(
    dtype: DTypeLike, *args: Any, scope: str = "local.var", init: _int | _float | None = None
) -> Buffer: ...
def alloc_reducer(
    shape: Shape, dtype: DTypeLike, op: Literal["sum", "max", "min"] = "sum", replication: str | None = None
) -> Buffer: ...
def alloc_barrier(arrive_count: _int | list[_int]) -> Buffer: ...
def empty(shape: Sequence[_int], dtype: DTypeLike = "float32") -> Tensor[Any, Unpack[tuple[Any, ...]]]:
    """Declare an output tensor of the kernel; return it from the kernel."""

def alloc_global(shape: Sequence[_int], dtype: DTypeLike) -> Tensor[Any, Unpack[tuple[Any, ...]]]:
    """An output tensor, as `empty`."""

def view(
    src: BufferLike, shape: Shape | None = None, dtype: DTypeLike | None = None, strides: Shape | None = None
) -> Buffer: ...
def reshape(src: BufferLike, shape: Shape) -> Buffer: ...

# -- dims -----------------------------------------------------------------------------

def const(name: str, dtype: str = "int32") -> Any:
    """Declare const dims: `M, N = T.const("M, N")` (the plugin types them as ints)."""

def dynamic(name: str, dtype: DTypeLike = "int32") -> Any:
    """Declare dyn dims: `N = T.dynamic("N")` (the plugin types them as ints)."""

def symbolic(name: str, dtype: DTypeLike = "int32") -> Any: ...

# -- launch and loops -----------------------------------------------------------------

class KernelLaunchFrame(Generic[_T]):
    """`with T.Kernel(...) as (bx, by):` yields one block index per grid axis."""

    def __enter__(self) -> _T: ...
    def __exit__(self, *exc: object) -> None: ...

@overload
def Kernel(
    x: _int,
    /,
    *,
    threads: _int | list[_int] | tuple[_int, ...] | None = None,
    prelude: str | None = None,
    cluster_dims: _int | tuple[_int, _int, _int] | list[_int] | None = None,
) -> KernelLaunchFrame[_int]: ...
@overload
def Kernel(
    x: _int,
    y: _int,
    /,
    *,
    threads: _int | list[_int] | tuple[_int, ...] | None = None,
    prelude: str | None = None,
    cluster_dims: _int | tuple[_int, _int, _int] | list[_int] | None = None,
) -> KernelLaunchFrame[tuple[_int, _int]]: ...
@overload
def Kernel(
    x: _int,
    y: _int,
    z: _int,
    /,
    *,
    threads: _int | list[_int] | tuple[_int, ...] | None = None,
    prelude: str | None = None,
    cluster_dims: _int | tuple[_int, _int, _int] | list[_int] | None = None,
) -> KernelLaunchFrame[tuple[_int, _int, _int]]: ...

class ForFrame(Generic[_T]):
    """A TileLang loop: `for i in T.Pipelined(n):`."""

    def __iter__(self) -> Iterator[_T]: ...
    def __enter__(self) -> _T: ...
    def __exit__(self, *exc: object) -> None: ...

def Pipelined(
    start: _int,
    stop: _int | None = None,
    num_stages: _int = 0,
    order: list[_int] | None = None,
    stage: list[_int] | None = None,
    annotations: dict[str, Any] | None = None,
) -> ForFrame[_int]: ...
@overload
def Parallel(
    x: _int,
    /,
    *,
    coalesced_width: _int | None = None,
    loop_layout: Any | None = None,
    prefer_async: _bool | None = None,
    annotations: dict[str, Any] | None = None,
) -> ForFrame[_int]: ...
@overload
def Parallel(
    x: _int,
    y: _int,
    /,
    *,
    coalesced_width: _int | None = None,
    loop_layout: Any | None = None,
    prefer_async: _bool | None = None,
    annotations: dict[str, Any] | None = None,
) -> ForFrame[tuple[_int, _int]]: ...
@overload
def Parallel(
    x: _int,
    y: _int,
    z: _int,
    /,
    *extents: _int,
    coalesced_width: _int | None = None,
    loop_layout: Any | None = None,
    prefer_async: _bool | None = None,
    annotations: dict[str, Any] | None = None,
) -> ForFrame[tuple[_int, ...]]: ...
def serial(
    start: _int, stop: _int | None = None, step: _int | None = None, *, annotations: dict[str, Any] | None = None
) -> ForFrame[_int]: ...
def unroll(
    start: _int,
    stop: _int | None = None,
    step: _int | None = None,
    *,
    explicit: _bool = False,
    unroll_factor: _int | None = None,
    annotations: dict[str, Any] | None = None,
) -> ForFrame[_int]: ...
def vectorized(start: _int, stop: _int | None = None, *, annotations: dict[str, Any] | None = None) -> ForFrame[_int]: ...
@overload
def grid(x: _int, /) -> ForFrame[_int]: ...
@overload
def grid(x: _int, y: _int, /) -> ForFrame[tuple[_int, _int]]: ...
@overload
def grid(x: _int, y: _int, z: _int, /, *extents: _int) -> ForFrame[tuple[_int, ...]]: ...
def Persistent(
    domain: list[_int],
    wave_size: _int,
    index: _int,
    group_size: _int | None = 8,
    num_stages: _int = 0,
    *,
    annotations: dict[str, Any] | None = None,
) -> ForFrame[tuple[_int, ...]]: ...
def get_thread_binding(dim: _int = 0) -> _int: ...
def get_block_binding(dim: _int = 0) -> _int: ...
def get_thread_bindings() -> list[_int]: ...
def get_block_bindings() -> list[_int]: ...

# -- tile operations ------------------------------------------------------------------

class GemmWarpPolicy(IntEnum):
    Square = 0
    FullRow = 1
    FullCol = 2

def copy(
    src: BufferLike,
    dst: BufferLike,
    *,
    coalesced_width: _int | None = None,
    disable_tma: _bool = False,
    eviction_policy: Literal["evict_normal", "evict_first", "evict_last"] | None = None,
    prefer_instruction: str | None = None,
    annotations: dict[str, Any] | None = None,
    loop_layout: Any | None = None,
) -> PrimExpr: ...
def gemm(
    A: BufferLike,
    B: BufferLike,
    C: BufferLike,
    transpose_A: _bool = False,
    transpose_B: _bool = False,
    policy: GemmWarpPolicy = ...,
    clear_accum: _bool = False,
    mbar: Buffer | None = None,
    annotations: dict[str, Any] | None = None,
) -> PrimExpr: ...
def clear(buffer: BufferLike, annotations: dict[str, Any] | None = None) -> PrimExpr: ...
def fill(buffer: BufferLike, value: _float, annotations: dict[str, Any] | None = None) -> PrimExpr: ...
def transpose(src: BufferLike, dst: BufferLike, annotations: dict[str, Any] | None = None) -> PrimExpr: ...
def reduce_sum(
    buffer: BufferLike, out: BufferLike, dim: _int = -1, clear: _bool = True, batch: _int = 1, annotations: dict[str, Any] | None = None
) -> None: ...
def reduce_max(
    buffer: BufferLike,
    out: BufferLike,
    dim: _int = -1,
    clear: _bool = True,
    batch: _int = 1,
    nan_propagate: _bool = False,
    annotations: dict[str, Any] | None = None,
) -> None: ...
def reduce_min(
    buffer: BufferLike,
    out: BufferLike,
    dim: _int = -1,
    clear: _bool = True,
    batch: _int = 1,
    nan_propagate: _bool = False,
    annotations: dict[str, Any] | None = None,
) -> None: ...
def reduce_absmax(
    buffer: BufferLike,
    out: BufferLike,
    dim: _int = -1,
    clear: _bool = True,
    batch: _int = 1,
    nan_propagate: _bool = False,
    annotations: dict[str, Any] | None = None,
) -> None: ...
def reduce_abssum(
    buffer: BufferLike, out: BufferLike, dim: _int = -1, batch: _int = 1, annotations: dict[str, Any] | None = None
) -> None: ...
def reduce_bitand(
    buffer: BufferLike, out: BufferLike, dim: _int = -1, clear: _bool = True, batch: _int = 1, annotations: dict[str, Any] | None = None
) -> None: ...
def reduce_bitor(
    buffer: BufferLike, out: BufferLike, dim: _int = -1, clear: _bool = True, batch: _int = 1, annotations: dict[str, Any] | None = None
) -> None: ...
def reduce_bitxor(
    buffer: BufferLike, out: BufferLike, dim: _int = -1, clear: _bool = True, batch: _int = 1, annotations: dict[str, Any] | None = None
) -> None: ...
def cumsum(
    src: BufferLike,
    dst: BufferLike | None = None,
    dim: _int = 0,
    reverse: _bool = False,
    annotations: dict[str, Any] | None = None,
) -> PrimExpr | None: ...
def finalize_reducer(
    reducer: Buffer, dst: BufferLike | None = None, batch: _int = 1, annotations: dict[str, Any] | None = None
) -> PrimExpr: ...
def warp_reduce_sum(value: _N) -> _N: ...
def warp_reduce_max(value: _N) -> _N: ...
def warp_reduce_min(value: _N) -> _N: ...

# Atomics return the previous value when `return_prev=True`: a scalar of the
# buffer's run-time dtype, hence `Any`.
def atomic_add(
    dst: BufferLike,
    value: Any,
    memory_order: str | None = None,
    return_prev: _bool = False,
    use_tma: _bool = False,
    annotations: dict[str, Any] | None = None,
) -> Any: ...
def atomic_max(
    dst: BufferLike,
    value: Any,
    memory_order: str | None = None,
    return_prev: _bool = False,
    annotations: dict[str, Any] | None = None,
) -> Any: ...
def atomic_min(
    dst: BufferLike,
    value: Any,
    memory_order: str | None = None,
    return_prev: _bool = False,
    annotations: dict[str, Any] | None = None,
) -> Any: ...
def atomic_or(dst: BufferLike, value: Any, memory_order: str | None = None) -> Any: ...
def atomic_addx2(dst: BufferLike, value: BufferLike, return_prev: _bool = False) -> Any: ...
def atomic_addx4(dst: BufferLike, value: BufferLike, return_prev: _bool = False) -> Any: ...
def atomic_load(src: BufferLike, memory_order: str = "seq_cst") -> Any: ...
def atomic_store(dst: BufferLike, src: Any, memory_order: str = "seq_cst") -> Any: ...

# -- scalar math ----------------------------------------------------------------------

def exp(x: _float) -> _float: ...
def exp2(x: _float) -> _float: ...
def exp10(x: _float) -> _float: ...
def log(x: _float) -> _float: ...
def log2(x: _float) -> _float: ...
def log10(x: _float) -> _float: ...
def log1p(x: _float) -> _float: ...
def sqrt(x: _float) -> _float: ...
def rsqrt(x: _float) -> _float: ...
def sin(x: _float) -> _float: ...
def cos(x: _float) -> _float: ...
def tan(x: _float) -> _float: ...
def sinh(x: _float) -> _float: ...
def cosh(x: _float) -> _float: ...
def tanh(x: _float) -> _float: ...
def sigmoid(x: _float) -> _float: ...
def erf(x: _float) -> _float: ...
def floor(x: _float) -> _float: ...
def ceil(x: _float) -> _float: ...
def trunc(x: _float) -> _float: ...
def round(x: _float, rounding_mode: str = "ties-to-even") -> _float: ...
def pow(x: _float, y: _float) -> _float: ...
def fma(x: _float, y: _float, z: _float) -> _float: ...
def fast_rcp(x: _float) -> _float: ...
def __exp(x: _float) -> _float: ...
def __log(x: _float) -> _float: ...
def abs(x: _N) -> _N: ...
def fabs(x: _float) -> _float: ...
def max(a: _N, b: _N) -> _N: ...
def min(a: _N, b: _N) -> _N: ...
def clamp(dst: _N, min_val: _N, max_val: _N) -> _N: ...
def isnan(x: _float) -> _bool: ...
def isinf(x: _float) -> _bool: ...
def isfinite(x: _float) -> _bool: ...
def if_then_else(cond: _bool, t: _T, f: _T) -> _T: ...
def likely(cond: _bool) -> _bool: ...
def ceildiv(lhs: _int, rhs: _int) -> _int: ...
def floordiv(a: _int, b: _int) -> _int: ...
def floormod(a: _int, b: _int) -> _int: ...
def truncdiv(a: _int, b: _int) -> _int: ...
def truncmod(a: _int, b: _int) -> _int: ...
def cast(value: Any, dtype: DTypeLike) -> Any: ...
def reinterpret(value: Any, dtype: DTypeLike) -> Any: ...
def infinity(dtype: DTypeLike) -> Any: ...
def max_value(dtype: DTypeLike) -> Any: ...
def min_value(dtype: DTypeLike) -> Any: ...
def shfl_xor(value: _N, delta: _int, width: _int = 32, mask: _int = ...) -> _N: ...
def shfl_down(value: _N, delta: _int, width: _int = 32, mask: _int = ...) -> _N: ...
def shfl_up(value: _N, delta: _int, width: _int = 32, mask: _int = ...) -> _N: ...

# -- synchronisation and annotations --------------------------------------------------

def sync_threads(barrier_id: _int | None = None, arrive_count: _int | None = None) -> PrimExpr: ...
def sync_warp(mask: _int | None = None) -> PrimExpr: ...
def use_swizzle(panel_size: _int, order: str = "row", enable: _bool = True) -> PrimExpr: ...
def annotate_layout(layout_map: dict[Any, Any]) -> PrimExpr: ...
def print(obj: Any = None, msg: str = "", warp_group_id: _int = 0, warp_id: _int = 0) -> None: ...
def macro(func: Callable[_P, _T]) -> Callable[_P, _T]: ...

def __getattr__(name: str) -> Any:
    """The rest of `tilelang.language`: untyped, so never an error."""
