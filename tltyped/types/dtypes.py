"""Element types: classes a type checker can tell apart, and the one table of their names.

`tl.float16` is a class, so `Tensor[float16, M]` and `Tensor[float32, M]` are
different types to mypy and pyright. At run time each class is a row of the
dtype table: its TileLang name, torch name, DLPack code and C type. Everything
that needs one of those (the binder, the tensor facts, the launcher, the mypy
plugin) reads it here. TileLang's own dtype objects (`T.float16`), their names
and torch dtypes are accepted wherever a dtype is.

This module imports neither torch nor TileLang (the mypy plugin reads it); a
torch dtype is recognised only when torch is already imported, as it must be
for one to exist.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, ClassVar, Union

from tltyped.errors import ArgumentTypeError, ArgumentValueError
from tltyped.types.values import describe

if TYPE_CHECKING:
    import torch

# DLPack type codes (dlpack.h: DLDataTypeCode)
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_BOOL, DL_FLOAT8_E4M3FN, DL_FLOAT8_E5M2 = 0, 1, 2, 4, 6, 10, 12


class DType:
    """Base class of the element types; never instantiated."""

    name: ClassVar[str]  # TileLang's name
    torch_name: ClassVar[str]  # the attribute of `torch`
    dlpack_code: ClassVar[int]
    bits: ClassVar[int]
    c_name: ClassVar[str]  # the C type TileLang's generated code uses
    aliases: ClassVar[tuple[str, ...]] = ()  # other TileLang spellings (`T.half`)

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

DTypeLike = Union[type[DType], str, "torch.dtype"]
"""A DType class, a dtype name or TileLang dtype (a `str`), or a torch dtype."""

BY_NAME: dict[str, type[DType]] = {
    **{alias: d for d in ALL_DTYPES for alias in d.aliases},
    **{d.name: d for d in ALL_DTYPES},
}
"""Every TileLang spelling of a supported element type -> its class."""

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
        if value in BY_NAME:
            return BY_NAME[value]
        raise ArgumentValueError(f"unknown dtype {describe(value)}; expected one of {sorted(BY_NAME)}")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        if not _BY_TORCH:
            _BY_TORCH.update({getattr(torch, d.torch_name): d for d in ALL_DTYPES})
        if value in _BY_TORCH:
            return _BY_TORCH[value]
        raise ArgumentValueError(f"unsupported torch dtype {value}")
    raise ArgumentTypeError(f"expected a dtype, got {describe(value)}")


def to_torch(value: DTypeLike) -> torch.dtype:
    """The torch dtype for a dtype-like value."""
    import torch

    dtype: torch.dtype = getattr(torch, as_dtype(value).torch_name)
    return dtype


def to_tilelang(value: DTypeLike) -> str:
    """TileLang's dtype object (a `str` subclass) for a dtype-like value."""
    import tilelang.language as tl_language

    dtype: str = tl_language.dtype(as_dtype(value).name)
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
