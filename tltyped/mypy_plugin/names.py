"""Full names the plugin recognises, and the dtype names it reads annotations with.

The plugin never imports tltyped's runtime modules (they import torch, which
would make every mypy run pay for it); it names them. The one exception is
the dtype table (`tltyped.types.dtypes`), which imports neither torch nor
TileLang: the plugin reads its element types from there.
"""

from __future__ import annotations

from typing import Final

from tltyped.types import dtypes

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

_DTYPES_MODULE: Final = dtypes.__name__

DTYPE_CLASSES: Final = tuple(d.__name__ for d in dtypes.ALL_DTYPES)
"""tltyped's element types (`tl.float16`, ...), as class names in tltyped.types.dtypes."""

LANGUAGE_DTYPE_CLASS: Final = {name: d.__name__ for name, d in dtypes.BY_NAME.items()}
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
