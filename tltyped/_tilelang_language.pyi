"""TileLang's kernel language, typed: the definitions both typed views share.

Two modules present the kernel language to type checkers, as at run time:
- `tltyped.language` (tltyped/language.pyi): TileLang's language with the
  functions tltyped replaces (outputs, dtype classes accepted);
- `tilelang.language` (the stub package in the repository's `stubs/`):
  TileLang's own.
Each star-imports this module and adds its own versions of the few names
that differ (`dtype`, `empty`, `alloc_global`, `alloc_shared`,
`alloc_fragment`, `alloc_local`, `alloc_var`, `cast`); every other name of
`tilelang.language` is `Any` through each view's `__getattr__`, so nothing a
kernel may use is an error. Signatures are TileLang 0.1.15's. Nothing
imports this module at run time.

Conventions (why the types look the way they do):
- Kernel-side scalars (block and thread indices, loop variables, dims,
  `T.const`/`T.dynamic` values) become TIR expressions when a kernel is
  elaborated. They are typed as the Python scalars they stand for (`int` for
  indices and sizes, `float` for math results), so index arithmetic and
  ordinary helper functions type-check like Python code. An element of a
  tensor or buffer (`X[i]`) is `Any`: its type is a run-time dtype.
- TileLang's dtype names follow the same rule: `T.float32` is typed as
  `float` and `T.int32` as `int`, so a dyn scalar annotated `n: T.int32` is an
  `int` to every type checker and `T.float32(0)` (a typed constant) a
  `float`. As values they are dtypes: every function taking a dtype accepts
  them (`_KernelDType`), and so does a parameter annotated `T.dtype`. The
  tltyped mypy plugin tells the names apart (`T.Tensor[[N], T.float16]` is a
  float16 tensor to it). The price: `T.float16` is the class `float`, not
  TileLang's dtype object, so the object's methods (`T.float16.as_torch()`)
  are errors, and so is calling `T.dtype` (`T.dtype("float16")`), a union
  that a default `T.float32` must fit. A class of its own per name would
  make `alpha: T.float32` refuse a float, and `bool` cannot be subclassed.
- `T.Tensor[[M, K], T.float16]`, the in-body form's annotation, is a tensor
  whose arguments type checkers read only with the plugin: in-body dims are
  variables, which no type expression may hold. `T.Tensor((M, K), T.float16)`
  makes one (TileLang's call form, a tensor description). The signature
  form's `tl.Tensor[tl.float16, M, K]` is checked by every type checker.
- Buffers (`T.alloc_shared`, `T.alloc_fragment`, ...) are `Buffer`; a
  `T.alloc_var` is a scalar variable, `Any` (`_ScalarVar` says why).
"""

import builtins
from collections.abc import Callable, Iterator, Sequence
from enum import IntEnum
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

import torch
from typing_extensions import ParamSpec, TypeAlias, Unpack

from tltyped.types.dtypes import DType as _DType
from tltyped.types.tensor import Tensor as _Tensor

_int: TypeAlias = builtins.int
_float: TypeAlias = builtins.float
_bool: TypeAlias = builtins.bool
_T = TypeVar("_T")
_N = TypeVar("_N", bound=builtins.float)
_P = ParamSpec("_P")

# -- dtypes -------------------------------------------------------------------------

ScalarDType: TypeAlias = type[_bool] | type[_int] | type[_float]
"""A TileLang dtype name (`T.float16`) as typed here: the Python scalar it carries."""

TileLangDType: TypeAlias = str | torch.dtype | ScalarDType
"""What TileLang's functions accept as a dtype: its dtype values and names, torch dtypes."""

_KernelDType: TypeAlias = TileLangDType | type[_DType]
"""A dtype as a kernel body passes it: TileLang's, or tltyped's classes (`tl.float32`), which elaboration converts
for every call into TileLang. The dtype parameter of each function below, and `T.dtype` of tltyped.language."""

bool: TypeAlias = builtins.bool
int8: TypeAlias = builtins.int
int16: TypeAlias = builtins.int
int32: TypeAlias = builtins.int
int64: TypeAlias = builtins.int
uint8: TypeAlias = builtins.int
uint16: TypeAlias = builtins.int
uint32: TypeAlias = builtins.int
uint64: TypeAlias = builtins.int
int4: TypeAlias = builtins.int
float16: TypeAlias = builtins.float
bfloat16: TypeAlias = builtins.float
float32: TypeAlias = builtins.float
float64: TypeAlias = builtins.float
tfloat32: TypeAlias = builtins.float
float8_e4m3: TypeAlias = builtins.float
float8_e4m3fn: TypeAlias = builtins.float
float8_e4m3fnuz: TypeAlias = builtins.float
float8_e5m2: TypeAlias = builtins.float
float8_e5m2fnuz: TypeAlias = builtins.float
float8_e8m0fnu: TypeAlias = builtins.float
float4_e2m1fn: TypeAlias = builtins.float
half: TypeAlias = builtins.float
float: TypeAlias = builtins.float
double: TypeAlias = builtins.float
int: TypeAlias = builtins.int
long: TypeAlias = builtins.int
short: TypeAlias = builtins.int
uint: TypeAlias = builtins.int

# -- buffers and tensors ------------------------------------------------------------

class PrimExpr:
    """A TIR expression or statement handle, as tile operations return it."""

class Tensor(_Tensor[Any, Unpack[tuple[Any, ...]]]):
    """`T.Tensor[[M, K], T.float16]`: a tensor parameter's in-body annotation; `T.Tensor((M, K), T.float16)`: the
    same in TileLang's call form, or a tensor description `fn.lower` takes.

    A class that defines `__class_getitem__` and has no type parameters of its
    own: type checkers accept any subscript of it and read the result as this
    class, a tltyped Tensor of any dtype and rank (the plugin reads the
    subscript: annotation_hooks.py). Not a Protocol, so that a call makes one.
    """

    _grad_fn: Any
    def __init__(self, shape: Any = None, dtype: Any = "float32", *view: Any, **options: Any) -> None: ...
    def __class_getitem__(cls, params: Any) -> Any: ...
    def __getitem__(self, index: Any, /) -> Any: ...

class StridedTensor(Tensor):
    """`T.StridedTensor[[M, N], [sM, sN], T.float32]`: an in-body annotation of a tensor whose strides are dims too
    (the plugin reads it as `T.Tensor[[M, N], T.float32]` to callers)."""

class Buffer:
    """A TileLang buffer (`tir.Buffer`) in shared, fragment, local or global memory."""

    @property
    def shape(self) -> tuple[_int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def scope(self) -> str: ...
    def __getitem__(self, index: Any) -> Any: ...
    def __setitem__(self, index: Any, value: Any) -> None: ...
    def access_ptr(self, access_mask: str | _int, *args: Any, **kwargs: Any) -> PrimExpr: ...

BufferLike: TypeAlias = Buffer | torch.Tensor
"""What tile operations take: a buffer, or a tensor parameter (a global buffer once the
kernel is elaborated); regions of either (`A[i, j]`, `buf[0:4]`) are accepted too."""

Shape: TypeAlias = Sequence[_int] | _int

_ScalarVar: TypeAlias = Any
"""What `T.alloc_var` returns: a scalar variable, kept by TileLang in a one-element buffer. Assigning to its name
stores (`s = 0`, `s += x`), reading it loads (`s * 2`), and tile operations take it as the buffer (`T.clear(s)`): no
type is both a `Buffer` and one an `int` may be assigned to (as mypy asks of `s = 0`), hence `Any`."""

def alloc_reducer(
    shape: Shape, dtype: _KernelDType, op: Literal["sum", "max", "min"] = "sum", replication: str | None = None
) -> Buffer: ...
def alloc_barrier(arrive_count: _int | list[_int]) -> Buffer: ...
def view(
    src: BufferLike, shape: Shape | None = None, dtype: _KernelDType | None = None, strides: Shape | None = None
) -> Buffer: ...
def reshape(src: BufferLike, shape: Shape) -> Buffer: ...

# -- dims -----------------------------------------------------------------------------

def const(name: str, dtype: _KernelDType = "int32") -> Any:
    """Declare const dims: `M, N = T.const("M, N")` (the plugin types them as ints)."""

def dynamic(name: str, dtype: _KernelDType = "int32") -> Any:
    """Declare dyn dims: `N = T.dynamic("N")` (the plugin types them as ints)."""

def symbolic(name: str, dtype: _KernelDType = "int32") -> Any:
    """TileLang's older name for `dynamic` (deprecated): declares dyn dims alike."""

# -- launch and loops -----------------------------------------------------------------

class KernelLaunchFrame(Generic[_T]):
    """`with T.Kernel(...) as (bx, by):` yields one block index per grid axis."""

    def __enter__(self) -> _T: ...
    def __exit__(self, *exc: object) -> None: ...

@overload
def Kernel(
    *,
    threads: _int | list[_int] | tuple[_int, ...] | None = None,
    prelude: str | None = None,
    cluster_dims: _int | tuple[_int, _int, _int] | list[_int] | None = None,
) -> KernelLaunchFrame[tuple[()]]: ...
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
def reinterpret(value: Any, dtype: _KernelDType) -> Any: ...
def infinity(dtype: _KernelDType) -> Any: ...
def max_value(dtype: _KernelDType) -> Any: ...
def min_value(dtype: _KernelDType) -> Any: ...
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
def prim_func(func: Callable[..., Any]) -> Any: ...  # a lazy-style factory's kernel: a TileLang PrimFunc
