"""Runtime objects that are also valid static types."""

from tltyped.types.dtypes import (
    ALL_DTYPES,
    DType,
    DTypeLike,
    as_dtype,
    bfloat16,
    bool_,
    float8_e4m3,
    float4_e2m1fn,
    float8_e5m2,
    float16,
    float32,
    float64,
    int4,
    int8,
    int16,
    int32,
    int64,
    is_dtype_like,
    to_tilelang,
    to_torch,
    uint8,
    uint16,
    uint32,
    uint64,
)
from tltyped.types.params import CONST, DYN, PTR, Marker, Tune, const, dyn, ptr, tune
from tltyped.types.tensor import Tensor

__all__ = [
    "ALL_DTYPES", "CONST", "DType", "DTypeLike", "DYN", "Marker", "PTR", "Tensor", "Tune",
    "as_dtype", "bfloat16", "bool_", "const", "dyn", "float16", "float32", "float64",
    "float4_e2m1fn", "float8_e4m3", "float8_e5m2", "int4", "int16", "int32", "int64", "int8", "is_dtype_like", "ptr",
    "to_tilelang", "to_torch", "tune", "uint8", "uint16", "uint32", "uint64",
]
