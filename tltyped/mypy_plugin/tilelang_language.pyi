"""`tilelang.language` as tltyped kernels see it, for modules that `import tilelang.language as T`.

TileLang ships no type information, so in a module that defines tltyped
kernels the plugin reads `tilelang.language` through this stub (rewrite.py).
It is `tltyped.language`'s typed view (TileLang's language plus tltyped's
`Tensor`), except where TileLang's own functions differ from tltyped's:
`empty(*shape, dtype=...)` takes the dims one by one, `alloc_global` is a
plain global buffer, and the `alloc_*` functions take TileLang dtypes only.
"""

import builtins
from collections.abc import Sequence
from typing import Any

import torch
from typing_extensions import TypeAlias, Unpack

from tltyped.language import (
    Tensor as Tensor,
    dtype as dtype,
    DTypeLike as DTypeLike,
    bool as bool,
    int8 as int8,
    int16 as int16,
    int32 as int32,
    int64 as int64,
    uint8 as uint8,
    uint16 as uint16,
    uint32 as uint32,
    uint64 as uint64,
    int4 as int4,
    float16 as float16,
    bfloat16 as bfloat16,
    float32 as float32,
    float64 as float64,
    tfloat32 as tfloat32,
    float8_e4m3 as float8_e4m3,
    float8_e4m3fn as float8_e4m3fn,
    float8_e4m3fnuz as float8_e4m3fnuz,
    float8_e5m2 as float8_e5m2,
    float8_e5m2fnuz as float8_e5m2fnuz,
    float8_e8m0fnu as float8_e8m0fnu,
    float4_e2m1fn as float4_e2m1fn,
    half as half,
    float as float,
    double as double,
    int as int,
    long as long,
    short as short,
    uint as uint,
    PrimExpr as PrimExpr,
    Buffer as Buffer,
    BufferLike as BufferLike,
    Shape as Shape,
    alloc_reducer as alloc_reducer,
    alloc_barrier as alloc_barrier,
    view as view,
    reshape as reshape,
    const as const,
    dynamic as dynamic,
    symbolic as symbolic,
    KernelLaunchFrame as KernelLaunchFrame,
    Kernel as Kernel,
    ForFrame as ForFrame,
    Pipelined as Pipelined,
    Parallel as Parallel,
    serial as serial,
    unroll as unroll,
    vectorized as vectorized,
    grid as grid,
    Persistent as Persistent,
    get_thread_binding as get_thread_binding,
    get_block_binding as get_block_binding,
    get_thread_bindings as get_thread_bindings,
    get_block_bindings as get_block_bindings,
    GemmWarpPolicy as GemmWarpPolicy,
    copy as copy,
    gemm as gemm,
    clear as clear,
    fill as fill,
    transpose as transpose,
    reduce_sum as reduce_sum,
    reduce_max as reduce_max,
    reduce_min as reduce_min,
    reduce_absmax as reduce_absmax,
    reduce_abssum as reduce_abssum,
    reduce_bitand as reduce_bitand,
    reduce_bitor as reduce_bitor,
    reduce_bitxor as reduce_bitxor,
    cumsum as cumsum,
    finalize_reducer as finalize_reducer,
    warp_reduce_sum as warp_reduce_sum,
    warp_reduce_max as warp_reduce_max,
    warp_reduce_min as warp_reduce_min,
    atomic_add as atomic_add,
    atomic_max as atomic_max,
    atomic_min as atomic_min,
    atomic_or as atomic_or,
    atomic_addx2 as atomic_addx2,
    atomic_addx4 as atomic_addx4,
    atomic_load as atomic_load,
    atomic_store as atomic_store,
    exp as exp,
    exp2 as exp2,
    exp10 as exp10,
    log as log,
    log2 as log2,
    log10 as log10,
    log1p as log1p,
    sqrt as sqrt,
    rsqrt as rsqrt,
    sin as sin,
    cos as cos,
    tan as tan,
    sinh as sinh,
    cosh as cosh,
    tanh as tanh,
    sigmoid as sigmoid,
    erf as erf,
    floor as floor,
    ceil as ceil,
    trunc as trunc,
    round as round,
    pow as pow,
    fma as fma,
    fast_rcp as fast_rcp,
    __exp as __exp,
    __log as __log,
    abs as abs,
    fabs as fabs,
    max as max,
    min as min,
    clamp as clamp,
    isnan as isnan,
    isinf as isinf,
    isfinite as isfinite,
    if_then_else as if_then_else,
    likely as likely,
    ceildiv as ceildiv,
    floordiv as floordiv,
    floormod as floormod,
    truncdiv as truncdiv,
    truncmod as truncmod,
    reinterpret as reinterpret,
    infinity as infinity,
    max_value as max_value,
    min_value as min_value,
    shfl_xor as shfl_xor,
    shfl_down as shfl_down,
    shfl_up as shfl_up,
    sync_threads as sync_threads,
    sync_warp as sync_warp,
    use_swizzle as use_swizzle,
    annotate_layout as annotate_layout,
    print as print,
    macro as macro,
)

_int: TypeAlias = builtins.int
_float: TypeAlias = builtins.float

TileLangDType: TypeAlias = str | torch.dtype
"""What TileLang's own functions accept as a dtype: its dtype values (a `str`), names, torch dtypes."""

def empty(*shape: _int, dtype: TileLangDType = "float32") -> Tensor[Any, Unpack[tuple[Any, ...]]]:
    """Declare an output tensor of the kernel; return it from the kernel."""

def alloc_global(shape: Sequence[_int] | _int, dtype: TileLangDType, scope: str = "global") -> Buffer: ...
def alloc_shared(shape: Sequence[_int] | _int, dtype: TileLangDType, scope: str = "shared.dyn") -> Buffer: ...
def alloc_fragment(shape: Sequence[_int] | _int, dtype: TileLangDType, scope: str = "local.fragment") -> Buffer: ...
def alloc_local(shape: Sequence[_int] | _int, dtype: TileLangDType, scope: str = "local") -> Buffer: ...
def alloc_var(
    dtype: TileLangDType, *args: Any, scope: str = "local.var", init: _int | _float | None = None
) -> Buffer: ...
def cast(value: Any, dtype: TileLangDType) -> Any: ...
def __getattr__(name: str) -> Any: ...
