"""Element types: classes a type checker can tell apart, and the one table of their names.

`tl.float16` is a class, so `Tensor[float16, M]` and `Tensor[float32, M]` are
different types to mypy and pyright. At run time each class is a row of the
dtype table: its TileLang name, torch name, DLPack code and C type. Everything
that needs one of those (the binder, the tensor facts, the launcher, the mypy
plugin) reads it here. TileLang's own dtype objects (`T.float16`), their names
and torch dtypes are accepted wherever a dtype is. Every dtype TileLang has
is a row; the ones no argument can hold (`T.tfloat32`) are COMPUTE_DTYPES.

This module imports neither torch nor TileLang (the mypy plugin reads it); a
torch dtype is recognised only when torch is already imported, as it must be
for one to exist.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, Union

from tltyped.errors import ArgumentTypeError, ArgumentValueError
from tltyped.types.values import describe

if TYPE_CHECKING:
    import torch

_R = TypeVar("_R")

# DLPack type codes (dlpack.h: DLDataTypeCode); TVM uses the same ones
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_BOOL = 0, 1, 2, 4, 6
DL_FLOAT8_E3M4, DL_FLOAT8_E4M3B11FNUZ, DL_FLOAT8_E4M3FN, DL_FLOAT8_E4M3FNUZ = 7, 9, 10, 11
DL_FLOAT8_E5M2, DL_FLOAT8_E5M2FNUZ, DL_FLOAT8_E8M0FNU = 12, 13, 14
DL_FLOAT6_E2M3FN, DL_FLOAT6_E3M2FN, DL_FLOAT4_E2M1FN = 15, 16, 17
# TVM's codes for the custom types TileLang registers, which DLPack lacks
TVM_TFLOAT32, TVM_FLOAT4_E2M1_UNPACKED = 130, 131


class DType:
    """Base class of the element types; never instantiated."""

    name: ClassVar[str]  # TileLang's name: the attribute of `tilelang.language`
    torch_name: ClassVar[str]  # the attribute of `torch` (argument types, ALL_DTYPES, only)
    dlpack_code: ClassVar[int]
    bits: ClassVar[int]
    c_name: ClassVar[str]  # the C type TileLang's generated code uses (argument types only)
    aliases: ClassVar[tuple[str, ...]] = ()  # other TileLang spellings (`T.half`)
    stored_as: ClassVar[type[DType] | None] = None  # a compute type an argument holds in this type's storage
    packed_in: ClassVar[tuple[str, ...]] = ()  # a sub-byte argument type: the torch dtypes holding it packed
    packed_out: ClassVar[tuple[str, ...]] = ()  # ... and the one an output of it is allocated as (the first torch has)

    @classmethod
    def is_integer(cls) -> bool:
        return cls.dlpack_code in (DL_INT, DL_UINT)

    @classmethod
    def is_float(cls) -> bool:
        return not cls.is_integer() and cls.dlpack_code != DL_BOOL

    @classmethod
    def value_range(cls) -> tuple[int, int]:
        """The values an integer (or bool) type holds."""
        if cls.dlpack_code == DL_BOOL:
            return 0, 1
        if cls.dlpack_code == DL_UINT:
            return 0, 2**cls.bits - 1
        if cls.dlpack_code == DL_INT:
            return -(2 ** (cls.bits - 1)), 2 ** (cls.bits - 1) - 1
        raise ArgumentTypeError(f"{cls.name} is not an integer type")


class float16(DType):
    name, torch_name, dlpack_code, bits, c_name, aliases = "float16", "float16", DL_FLOAT, 16, "half_t", ("half",)


class bfloat16(DType):
    name, torch_name, dlpack_code, bits, c_name = "bfloat16", "bfloat16", DL_BFLOAT, 16, "bfloat16_t"


class float32(DType):
    name, torch_name, dlpack_code, bits, c_name, aliases = "float32", "float32", DL_FLOAT, 32, "float", ("float",)


class float64(DType):
    name, torch_name, dlpack_code, bits, c_name, aliases = "float64", "float64", DL_FLOAT, 64, "double", ("double",)


class int8(DType):
    name, torch_name, dlpack_code, bits, c_name = "int8", "int8", DL_INT, 8, "int8_t"


class int16(DType):
    name, torch_name, dlpack_code, bits, c_name, aliases = "int16", "int16", DL_INT, 16, "int16_t", ("short",)


class int32(DType):
    name, torch_name, dlpack_code, bits, c_name, aliases = "int32", "int32", DL_INT, 32, "int", ("int",)


class int64(DType):
    name, torch_name, dlpack_code, bits, c_name, aliases = "int64", "int64", DL_INT, 64, "int64_t", ("long",)


class uint8(DType):
    name, torch_name, dlpack_code, bits, c_name = "uint8", "uint8", DL_UINT, 8, "uint8_t"


class uint16(DType):
    name, torch_name, dlpack_code, bits, c_name = "uint16", "uint16", DL_UINT, 16, "uint16_t"


class uint32(DType):
    name, torch_name, dlpack_code, bits, c_name, aliases = "uint32", "uint32", DL_UINT, 32, "unsigned int", ("uint",)


class uint64(DType):
    name, torch_name, dlpack_code, bits, c_name = "uint64", "uint64", DL_UINT, 64, "uint64_t"


class bool_(DType):
    name, torch_name, dlpack_code, bits, c_name = "bool", "bool", DL_BOOL, 8, "int8_t"


class float8_e4m3(DType):
    name, torch_name, dlpack_code, bits, c_name = "float8_e4m3fn", "float8_e4m3fn", DL_FLOAT8_E4M3FN, 8, "fp8_e4_t"
    aliases = ("float8_e4m3",)


class float8_e5m2(DType):
    name, torch_name, dlpack_code, bits, c_name = "float8_e5m2", "float8_e5m2", DL_FLOAT8_E5M2, 8, "fp8_e5_t"


ALL_DTYPES: tuple[type[DType], ...] = (
    float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool_,
    float8_e4m3, float8_e5m2,
)
"""The argument types: what a tensor or a scalar passed to a kernel holds (torch has each, TileLang's host code passes each)."""


# The rest of TileLang's dtypes: types of the kernel's own computation (a const
# `dtype` parameter, `T.alloc_*`, `T.Cast`, `T.gemm` operands), never of an
# argument. torch has no dtype for most (tfloat32 is float32 in memory, with
# only the top 10 mantissa bits used: a tensor of such values is a float32
# tensor), and TileLang's host code has no C type for any, so `argument_dtype`
# refuses them where a tensor or a scalar is declared.


class tfloat32(DType):
    """TensorFloat-32: float32's range, a 10-bit mantissa; the tensor cores' float32 math."""

    name, dlpack_code, bits = "tfloat32", TVM_TFLOAT32, 32
    stored_as = float32  # a tensor declared tfloat32 (upstream's `T.Tensor(shape, T.tfloat32)`) is a float32 tensor


class int4(DType):
    """A sub-byte argument type: two values a byte (PACKED)."""

    name, dlpack_code, bits, c_name = "int4", DL_INT, 4, "signed char"
    packed_in, packed_out = ("int8", "uint8"), ("int8",)


class float8_e3m4(DType):
    name, dlpack_code, bits = "float8_e3m4", DL_FLOAT8_E3M4, 8


class float8_e4m3b11fnuz(DType):
    name, dlpack_code, bits = "float8_e4m3b11fnuz", DL_FLOAT8_E4M3B11FNUZ, 8


class float8_e4m3fnuz(DType):
    name, dlpack_code, bits = "float8_e4m3fnuz", DL_FLOAT8_E4M3FNUZ, 8


class float8_e5m2fnuz(DType):
    name, dlpack_code, bits = "float8_e5m2fnuz", DL_FLOAT8_E5M2FNUZ, 8


class float8_e8m0fnu(DType):
    name, dlpack_code, bits = "float8_e8m0fnu", DL_FLOAT8_E8M0FNU, 8


class float6_e2m3fn(DType):
    name, dlpack_code, bits = "float6_e2m3fn", DL_FLOAT6_E2M3FN, 6


class float6_e3m2fn(DType):
    name, dlpack_code, bits = "float6_e3m2fn", DL_FLOAT6_E3M2FN, 6


class float4_e2m1fn(DType):
    """A sub-byte argument type: two values a byte (PACKED)."""

    name, dlpack_code, bits, c_name = "float4_e2m1fn", DL_FLOAT4_E2M1FN, 4, "fp4_e2_t"
    packed_in, packed_out = ("int8", "uint8", "float4_e2m1fn_x2"), ("float4_e2m1fn_x2", "int8")


class float4_e2m1_unpacked(DType):
    """FP4 E2M1 one value per byte: a shared-memory layout of tcgen05's f8f6f4 MMA."""

    name, dlpack_code, bits = "float4_e2m1_unpacked", TVM_FLOAT4_E2M1_UNPACKED, 8


PACKED_DTYPES: tuple[type[DType], ...] = (float4_e2m1fn, int4)
"""The sub-byte argument types, as TileLang 0.1.15 takes them. A tensor parameter declared so (`Tensor[float4_e2m1fn,
M, K]`) describes the LOGICAL tensor; the torch tensor passed holds it two values a byte along its innermost dim,
element 2i in the low nibble of byte i: one of the dtype's `packed_in` torch dtypes (int8, uint8, and for fp4
torch's float4_e2m1fn_x2), of shape (M, K / 2). Its strides count bytes, so the logical strides are the storage
strides times 2, except the innermost, which must be 1; the logical innermost size is twice the storage's (a
logical K is even). An output declared so is allocated as TileLang allocates it: the dtype's `packed_out` (the
first torch has), the final dim halved. Everything that reads it goes through `packed_storage`, `logical_sizes`,
`storage_sizes` and `packed_output_sizes` below."""

COMPUTE_DTYPES: tuple[type[DType], ...] = (
    tfloat32, float8_e3m4, float8_e4m3b11fnuz, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu,
    float6_e2m3fn, float6_e3m2fn, float4_e2m1_unpacked,
)
"""TileLang's dtypes that are no argument type (see above)."""

PACKING = 2
"""Sub-byte values a byte of a PACKED_DTYPES tensor holds."""

DTypeLike = Union[type[DType], str, "torch.dtype"]
"""A DType class, a dtype name or TileLang dtype (a `str`), or a torch dtype."""

BY_NAME: dict[str, type[DType]] = {
    **{alias: d for d in ALL_DTYPES for alias in d.aliases},
    **{d.name: d for d in (*ALL_DTYPES, *PACKED_DTYPES)},
}
"""Every TileLang spelling of an argument type -> its class (what a tensor annotation may name)."""

UNSTATED_TENSOR_DTYPE: type[DType] = float32
"""The dtype of a tensor annotation that names none (`T.Tensor((M, K))`, `T.Tensor[(128,)]`): TileLang's buffer
default (its `TensorProxy.__call__` takes `dtype="float32"`), which the runtime, the mypy plugin and the stubs
all read such an annotation with, so that a kernel's signature is one thing to each."""

_ANY_BY_NAME: dict[str, type[DType]] = {**BY_NAME, **{d.name: d for d in COMPUTE_DTYPES}}

_BY_TORCH: dict[object, type[DType]] = {}  # filled on the first torch dtype seen


def is_dtype_like(value: object) -> bool:
    """Whether `value` names one of the supported element types."""
    try:
        as_dtype(value)
    except (TypeError, ValueError):
        return False
    return True


def as_dtype(value: object) -> type[DType]:
    """The DType class for any dtype-like value; ValueError/TypeError otherwise."""
    if isinstance(value, type) and issubclass(value, DType) and value is not DType:
        return value
    if isinstance(value, str):
        name = re.sub(r"^custom\[(\w+)\]\d*$", r"\1", value)  # TVM spells a custom type `custom[tfloat32]`
        if name in _ANY_BY_NAME:
            return _ANY_BY_NAME[name]
        raise ArgumentValueError(f"unknown dtype {describe(value)}; expected one of {sorted(_ANY_BY_NAME)}")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        if not _BY_TORCH:
            _BY_TORCH.update({getattr(torch, d.torch_name): d for d in ALL_DTYPES})
        if value in _BY_TORCH:
            return _BY_TORCH[value]
        raise ArgumentValueError(f"unsupported torch dtype {value}")
    raise ArgumentTypeError(f"expected a dtype, got {describe(value)}")


def argument_dtype(value: object) -> type[DType]:
    """The DType of what a kernel argument holds (a tensor's elements, a scalar): one of ALL_DTYPES.

    A tensor declared tfloat32 holds float32 values (tf32 is float32 in
    memory), so it is a float32 tensor. Another compute type is refused here,
    where a tensor, an output or a scalar parameter is declared, rather than
    when torch or the launcher meets it.
    """
    dtype = as_dtype(value)
    if dtype.stored_as is not None:
        return dtype.stored_as
    if dtype not in ALL_DTYPES and dtype not in PACKED_DTYPES:
        raise ArgumentTypeError(
            f"{dtype.name} is a type of the kernel's computation, not of its arguments (no torch tensor holds it); "
            f"declare the tensor or scalar as one of {', '.join(d.name for d in (*ALL_DTYPES, *PACKED_DTYPES))} "
            "and convert it in the body"
        )
    return dtype


def is_packed(dtype: type[DType]) -> bool:
    """Whether a tensor of `dtype` is held packed (PACKED_DTYPES)."""
    return bool(dtype.packed_in)


def packed_storage(dtype: type[DType]) -> tuple[torch.dtype, ...]:
    """The torch dtypes a tensor parameter of a PACKED_DTYPES type accepts (those this torch has)."""
    import torch

    return tuple(getattr(torch, name) for name in dtype.packed_in if hasattr(torch, name))


def storage_sizes(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """The storage shape of a packed tensor of logical `shape`: the final dim halved, as TileLang allocates it
    (`size * 4 // 8`, a symbolic size too)."""
    return (*shape[:-1], shape[-1] * 4 // 8) if shape else shape


def packed_output_sizes(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """The storage shape an output of a PACKED_DTYPES type, of logical `shape`, is allocated with: the final dim
    halved, rounded up (TileLang rounds down, `size * 4 // 8`, which leaves the last value of an odd size outside
    the allocation; rounded up, it has a byte of its own). A symbolic size (a tracer's) stays symbolic."""
    return (*shape[:-1], (shape[-1] + PACKING - 1) // PACKING) if shape else shape


def dlpack_type(dtype: torch.dtype) -> tuple[int, int, int]:
    """The DLPack (code, bits, lanes) of a torch dtype that an argument type or a packed storage is (torch's own
    DLPack conversion: `float4_e2m1fn_x2` is two float4_e2m1fn lanes)."""
    import torch

    if getattr(torch, "float4_e2m1fn_x2", None) == dtype:
        return DL_FLOAT4_E2M1FN, 4, 2
    element = as_dtype(dtype)
    return element.dlpack_code, element.bits, 1


def logical_sizes(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The logical shape and strides of a packed tensor of storage `shape` and `strides` (the innermost stride
    must be 1: the caller checks)."""
    if not shape:
        return shape, strides
    return (*shape[:-1], shape[-1] * PACKING), (*(s * PACKING for s in strides[:-1]), 1)


def to_torch(value: DTypeLike) -> torch.dtype:
    """The torch dtype for a dtype-like value (an argument type)."""
    import torch

    element = argument_dtype(value)
    if element.packed_out:  # an output's storage (PACKED_DTYPES)
        stored: torch.dtype = next(getattr(torch, n) for n in element.packed_out if hasattr(torch, n))
        return stored
    dtype: torch.dtype = getattr(torch, element.torch_name)
    return dtype


def to_tilelang(value: DTypeLike) -> str:
    """TileLang's dtype object (a `str` subclass) for a dtype-like value."""
    import tilelang  # noqa: F401  (first: waits for another thread's import of it; language._tilelang says why)
    import tilelang.language as tl_language

    dtype: str = getattr(tl_language, as_dtype(value).name)
    return dtype


class DTypeName(str):
    """A TileLang dtype named before TileLang is imported (`T.float16` in a process that has not needed it).

    `tltyped.language` hands these out until something imports TileLang: it
    equals (and hashes like) TileLang's dtype of that name, TileLang accepts it
    wherever it takes a dtype name, and anything else asked of it (`.bits`,
    `T.float32(0)`) is answered by TileLang's dtype.
    """

    def real(self) -> Any:
        """TileLang's dtype object of this name (imports TileLang)."""
        return to_tilelang(str(self))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.real(), name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.real()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"dtype({str(self)!r})"


def tilelang_value(value: Any) -> Any:
    """`value` with tltyped's dtype stand-ins (DType classes, DTypeNames) replaced by TileLang's dtype objects.

    It asks `type(value)`, not `isinstance`, which would call a user object's own `__class__`.
    """
    kind = type(value)
    if issubclass(kind, DTypeName) or (issubclass(kind, type) and issubclass(value, DType) and value is not DType):
        return to_tilelang(value)
    return value


def call_with_tilelang_dtypes(func: Callable[..., _R], /, *args: Any, **kwargs: Any) -> _R:
    """`func(*args, **kwargs)`, each of tltyped's dtype classes among the arguments made TileLang's dtype.

    TileLang takes a dtype as its own object or a name and hands it on to
    TVM, whose FFI reads a class as a callable (`Expected DataType but got
    ffi.Function`); so tltyped's classes are converted on their way in.
    Elaboration calls every function of TileLang or TVM that a kernel body
    calls through this (`T.infinity(tl.float32)`, `x.astype(tl.float16)`),
    and tltyped.language's `T.alloc_*` and `T.cast` do, for calls from plain
    helper functions too.
    """
    return func(*(tilelang_value(a) for a in args), **{k: tilelang_value(v) for k, v in kwargs.items()})
