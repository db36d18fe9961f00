"""tltyped: typed, low-overhead JIT for tile-level GPU kernels written with TileLang."""

from tltyped.backend.build import CompileError
from tltyped.backend.lower import LoweringError
from tltyped.backend.target import TargetError
from tltyped.frontend.elaborate import KernelBuildError
from tltyped.frontend.signature import DefinitionError
from tltyped.jit import CacheInfo, JitFunction, jit
from tltyped.types import (
    DType,
    Tensor,
    Tune,
    bfloat16,
    bool_,
    const,
    dyn,
    float8_e4m3,
    float8_e5m2,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    ptr,
    tune,
    uint8,
)
from tltyped.types import bool_ as bool  # noqa: A004  (`tl.bool`, the element type)

__all__ = [
    "CacheInfo", "CompileError", "DType", "DefinitionError", "JitFunction", "KernelBuildError", "LoweringError",
    "TargetError", "Tensor", "Tune", "bfloat16", "bool", "bool_", "const",
    "dyn", "float16", "float32", "float64", "float8_e4m3", "float8_e5m2", "int16", "int32", "int64",
    "int8", "jit", "ptr", "tune", "uint8",
]
