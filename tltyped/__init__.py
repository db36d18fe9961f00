"""tltyped: typed, low-overhead JIT for tile-level GPU kernels written with TileLang.

The public names load on first use: `import tltyped` alone imports neither
torch nor TileLang, so the mypy plugin (`tltyped.mypy_plugin`, inside this
package) starts without them. `TLTYPED_LOG=info` shows what the package does
(compiles, disk-cache hits, tuning) on stderr.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from tltyped.log import configure_from_environment

configure_from_environment()

if TYPE_CHECKING:
    from tltyped.callpath.dispatcher import CacheInfo
    from tltyped.errors import (
        ArgumentTypeError,
        ArgumentValueError,
        AutogradError,
        CacheWarning,
        CompileError,
        DefinitionError,
        DimSyntaxError,
        ElaborationError,
        Error,
        KernelBuildError,
        LaunchError,
        LoweringError,
        TargetError,
        TuningError,
    )
    from tltyped.autotune_configs import autotune
    from tltyped.jit_function import JitFunction, KernelObject, jit, register_autograd
    from tltyped.types import (
        DType,
        Tensor,
        Tune,
        bfloat16,
        bool_,
        const,
        dyn,
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
        ptr,
        tune,
        uint8,
        uint16,
        uint32,
        uint64,
    )
    from tltyped.types import bool_ as bool  # noqa: A004  (`tl.bool`, the element type)

__all__ = [
    "ArgumentTypeError", "ArgumentValueError", "AutogradError", "CacheInfo", "CacheWarning", "CompileError", "DType", "DefinitionError",
    "DimSyntaxError", "ElaborationError", "Error", "JitFunction", "KernelBuildError", "KernelObject", "LaunchError", "LoweringError", "TargetError", "Tensor",
    "Tune", "TuningError", "autotune", "bfloat16", "bool", "bool_", "const", "dyn", "float16", "float32", "float64",
    "float4_e2m1fn", "float8_e4m3", "float8_e5m2", "int4", "int16", "int32", "int64", "int8", "jit", "ptr", "register_autograd", "tune", "uint8",
    "uint16", "uint32", "uint64",
]

_ERRORS = ("ArgumentTypeError", "ArgumentValueError", "AutogradError", "CacheWarning", "CompileError", "DefinitionError", "DimSyntaxError",
           "ElaborationError", "Error", "KernelBuildError", "LaunchError", "LoweringError", "TargetError", "TuningError")
_HOME = {  # public name -> the module defining it
    **{name: "tltyped.errors" for name in _ERRORS},
    "CacheInfo": "tltyped.callpath.dispatcher",
    "JitFunction": "tltyped.jit_function",
    "KernelObject": "tltyped.jit_function",
    "autotune": "tltyped.autotune_configs",
    "jit": "tltyped.jit_function",
    "register_autograd": "tltyped.jit_function",
}


if not TYPE_CHECKING:  # checkers read the imports above: a misspelt `tl.jti` is an error, not `Any`

    def __getattr__(name: str) -> Any:
        if name not in __all__:
            raise AttributeError(f"module 'tltyped' has no attribute {name!r}")
        importlib.import_module(_HOME.get(name, "tltyped.types"))
        # Bind each public name of the modules imported by now, so later lookups skip this function. (No home
        # module is named as a public name is: importing `tltyped.jit` would bind `tl.jit` to it.)
        for public in __all__:
            module = sys.modules.get(_HOME.get(public, "tltyped.types"))
            if module is not None and public not in globals():
                globals()[public] = getattr(module, "bool_" if public == "bool" else public)
        return globals()[name]
