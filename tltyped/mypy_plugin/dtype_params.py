"""A tensor's dtype given by a const parameter (`C: T.Tensor[[M, N], out_dtype]`), carried as text.

The dtype is known per call only: it is the dtype the call passes for
`out_dtype`, or the parameter's default. A type cannot hold "the argument
of parameter `out_dtype`", so the in-body rewrite writes the dtype as a
string Literal, `"param:out_dtype=float32"` (its default's dtype class after
`=`, when the default names one), and call sites read it back (callsite.py).
"""

from __future__ import annotations

from typing import Final

from mypy.nodes import Expression, FuncDef, StrExpr
from mypy.types import RawExpressionType, Type, UnboundType

from tltyped.mypy_plugin import names
from tltyped.mypy_plugin.parsed import dotted_name

_PREFIX: Final = "param:"


def marker(param: str, default: str | None) -> str:
    """The text for a dtype given by `param`, whose default names the dtype class `default` (or nothing)."""
    return f"{_PREFIX}{param}" if default is None else f"{_PREFIX}{param}={default}"


def is_marker(text: str) -> bool:
    return text.startswith(_PREFIX)


def parse(text: str) -> tuple[str, str | None]:
    """(parameter, default dtype class or None) of a marker."""
    param, _, default = text[len(_PREFIX):].partition("=")
    return param, default or None


def parameter_dtype(func: FuncDef, param: str, line: int, column: int) -> Type:
    """The dtype written as the name of `func`'s parameter `param`, as the annotation hook reads it."""
    default = next((a.initializer for a in func.arguments if a.variable.name == param), None)
    return RawExpressionType(marker(param, _default_class(default)), "builtins.str", line, column)


def is_dtype_parameter(func: FuncDef, param: str) -> bool:
    """Whether `func`'s parameter `param` is plainly a dtype: annotated `T.dtype`, or with a default naming one."""
    arg = next((a for a in func.arguments if a.variable.name == param), None)
    if arg is None:
        return False
    annotation = arg.type_annotation
    if isinstance(annotation, UnboundType) and annotation.name.rpartition(".")[2] == "dtype":
        return True
    return _default_class(arg.initializer) is not None


def _default_class(default: Expression | None) -> str | None:
    """The dtype class a parameter's default names (`T.float32`, `tl.float32`, "float32"), by name."""
    if isinstance(default, StrExpr):
        return names.LANGUAGE_DTYPE_CLASS.get(default.value)
    spelled = dotted_name(default) if default is not None else None
    if spelled is None:
        return None
    return names.LANGUAGE_DTYPE_CLASS.get(spelled.rpartition(".")[2])
