"""Element types: classes a type checker can tell apart, values the runtime maps.

`tl.float16` is a class, so `Tensor[float16, M]` and `Tensor[float32, M]` are
different types to mypy and pyright. At run time the same class is a value that
maps to a torch dtype and to a TileLang dtype. TileLang's own dtype objects
(`T.float16`), their names and torch dtypes are accepted wherever a dtype is.
"""

from __future__ import annotations

from typing import ClassVar, Union

import torch


class DType:
    """Base class of the element types; never instantiated."""

    name: ClassVar[str]
    torch_dtype: ClassVar[torch.dtype]


class float16(DType):
    name = "float16"
    torch_dtype = torch.float16


class bfloat16(DType):
    name = "bfloat16"
    torch_dtype = torch.bfloat16


class float32(DType):
    name = "float32"
    torch_dtype = torch.float32


class float64(DType):
    name = "float64"
    torch_dtype = torch.float64


class int8(DType):
    name = "int8"
    torch_dtype = torch.int8


class int16(DType):
    name = "int16"
    torch_dtype = torch.int16


class int32(DType):
    name = "int32"
    torch_dtype = torch.int32


class int64(DType):
    name = "int64"
    torch_dtype = torch.int64


class uint8(DType):
    name = "uint8"
    torch_dtype = torch.uint8


class bool_(DType):
    name = "bool"
    torch_dtype = torch.bool


class float8_e4m3(DType):
    name = "float8_e4m3fn"
    torch_dtype = torch.float8_e4m3fn


class float8_e5m2(DType):
    name = "float8_e5m2"
    torch_dtype = torch.float8_e5m2


ALL_DTYPES: tuple[type[DType], ...] = (
    float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, bool_,
    float8_e4m3, float8_e5m2,
)

DTypeLike = Union[type[DType], str, torch.dtype]
"""A DType class, a dtype name or TileLang dtype (a `str`), or a torch dtype."""

_BY_NAME: dict[str, type[DType]] = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"float8_e4m3": float8_e4m3, "bool_": bool_})
_BY_TORCH: dict[torch.dtype, type[DType]] = {d.torch_dtype: d for d in ALL_DTYPES}


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
    if isinstance(value, torch.dtype):
        if value in _BY_TORCH:
            return _BY_TORCH[value]
        raise ValueError(f"unsupported torch dtype {value}")
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise ValueError(f"unknown dtype {value!r}; expected one of {sorted(_BY_NAME)}")
    raise TypeError(f"expected a dtype, got {type(value).__name__} {value!r}")


def to_torch(value: DTypeLike) -> torch.dtype:
    """The torch dtype for a dtype-like value."""
    return as_dtype(value).torch_dtype


def to_tilelang(value: DTypeLike) -> str:
    """TileLang's dtype object (a `str` subclass) for a dtype-like value."""
    import tilelang.language as tl_language

    dtype: str = tl_language.dtype(as_dtype(value).name)
    return dtype
