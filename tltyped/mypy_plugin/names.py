"""Full names the plugin recognises, and the dtype tables it reads annotations with.

The plugin never imports tltyped's runtime modules (they import torch, which
would make every mypy run pay for it); it names them. `tests/typing` checks
these tables against the runtime's own.
"""

from __future__ import annotations

from typing import Final

JIT: Final = "tltyped.jit.jit"
JIT_FUNCTION: Final = "tltyped.jit.JitFunction"
JIT_CALL: Final = "tltyped.jit.JitFunction.__call__"
JIT_INSPECTION_METHODS: Final = ("tltyped.jit.JitFunction.lower", "tltyped.jit.JitFunction.compile")

TENSOR: Final = "tltyped.types.tensor.Tensor"
DTYPE_BASE: Final = "tltyped.types.dtypes.DType"
DYN: Final = "tltyped.types.params.dyn"
TUNE: Final = "tltyped.types.params.tune"
TORCH_TENSOR: Final = "torch._tensor.Tensor"
HASHABLE: Final = "typing.Hashable"

LANGUAGE: Final = "tltyped.language"
LANGUAGE_DTYPE: Final = "tltyped.language.dtype"
LANGUAGE_BUFFER: Final = "tltyped.language.Buffer"
LANGUAGE_DIM_DECLARATIONS: Final = ("tltyped.language.const", "tltyped.language.dynamic")
LANGUAGE_OUTPUTS: Final = ("tltyped.language.empty", "tltyped.language.alloc_global")

TILELANG_LANGUAGE: Final = "tilelang.language"
TILELANG_VIEW: Final = "tltyped.mypy_plugin.tilelang_language"
"""A stub module typing `tilelang.language` as tltyped kernels see it (see rewrite.py)."""
TILELANG_VIEW_OUTPUT: Final = "tltyped.mypy_plugin.tilelang_language.empty"

DIM_DECLARATION_CALLS: Final = ("const", "dynamic")
"""`T.const(...)` / `T.dynamic(...)` in a kernel body, matched by name as the runtime does."""

ALLOC_CALL_PREFIX: Final = "alloc_"
OUTPUT_CALLS: Final = ("empty", "alloc_global")

_DTYPES_MODULE: Final = "tltyped.types.dtypes"

DTYPE_CLASSES: Final = (
    "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
    "bool_", "float8_e4m3", "float8_e5m2",
)
"""tltyped's element types (`tl.float16`, ...), as class names in tltyped.types.dtypes."""

LANGUAGE_DTYPE_CLASS: Final = {
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "int8": "int8",
    "int16": "int16",
    "short": "int16",
    "int32": "int32",
    "int": "int32",
    "int64": "int64",
    "long": "int64",
    "uint8": "uint8",
    "bool": "bool_",
    "float8_e4m3": "float8_e4m3",
    "float8_e4m3fn": "float8_e4m3",
    "float8_e5m2": "float8_e5m2",
}
"""TileLang dtype values (`T.float16`, `T.half`, ...) that name one of tltyped's element types."""


def dtype_class_fullname(class_name: str) -> str:
    return f"{_DTYPES_MODULE}.{class_name}"


def language_dtype_class(fullname: str) -> str | None:
    """`tltyped.language.half` -> `tltyped.types.dtypes.float16`; None if not a supported dtype value."""
    module, _, name = fullname.rpartition(".")
    if module not in (LANGUAGE, TILELANG_VIEW):
        return None
    class_name = LANGUAGE_DTYPE_CLASS.get(name)
    return None if class_name is None else dtype_class_fullname(class_name)


def language_scalar(fullname: str) -> str | None:
    """The Python scalar a TileLang dtype value stands for as a dyn annotation (`n: T.int32`)."""
    module, _, name = fullname.rpartition(".")
    if module not in (LANGUAGE, TILELANG_VIEW):
        return None
    if name.startswith(("int", "uint")) or name in ("long", "short"):
        return "builtins.int"
    if name in ("bool", "boolean"):
        return "builtins.bool"
    if name.startswith(("float", "bfloat", "tfloat")) or name in ("half", "double"):
        return "builtins.float"
    return None


def dtype_display(fullname: str) -> str:
    """How messages name an element type: `float16` for tltyped.types.dtypes.float16."""
    name = fullname.rpartition(".")[2]
    return "bool" if name == "bool_" else name
