"""The arguments of a kernel's non-tensor parameters: their types, hashability and tuning spaces.

The call's signature hook gives mypy every parameter as `Any` (callsite.py),
so that the type of each argument is checked here and the message names the
parameter (`Argument "alpha" to "scale"`), not its position. A const
argument keys the kernel cache, so it must also be hashable: mypy's
`Hashable` protocol, plus the rule that a dataclass with `eq` (the default)
and neither `frozen` nor `unsafe_hash` nor its own `__hash__` is not
(Python sets its `__hash__` to None; mypy's types do not say so).
"""

from __future__ import annotations

from mypy import errorcodes
from mypy.checker import TypeChecker
from mypy.messages import format_type
from mypy.nodes import CallExpr, Expression, ListExpr, NameExpr, RefExpr, StrExpr, TupleExpr, TypeInfo
from mypy.plugin import CheckerPluginInterface
from mypy.subtypes import is_subtype
from mypy.types import AnyType, Instance, Type, get_proper_type

from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin import names
from tltyped.mypy_plugin.parsed import dotted_name
from tltyped.mypy_plugin.typeops import expression_type
from tltyped.types.params import TUNE_TAKES

_DATACLASS_DECORATORS = ("dataclass", "dataclasses.dataclass")


def check_value(
    api: CheckerPluginInterface, argument: str, name: str, formal: Type, expr: Expression, actual: Type | None = None
) -> None:
    """One argument of a non-tensor parameter `name`; `argument` is how messages name it. `actual`: its type
    where `expr` is not the argument itself but a `*args` or `**kwargs` holding it."""
    if isinstance(expr, CallExpr) and isinstance(expr.callee, RefExpr) and expr.callee.fullname == names.TUNE:
        check_tune_candidates(api, name, formal, expr)
        return
    if actual is None:
        actual = argument_type(api, expr, formal)
    if not is_subtype(actual, formal):
        api.fail(
            f"{argument} has incompatible type {format_type(actual, api.options)}; "
            f"expected {format_type(formal, api.options)}",
            expr, code=errorcodes.ARG_TYPE,
        )
    elif not is_hashable(api, actual):
        api.fail(
            f"{argument} must be hashable (const arguments key the kernel cache); "
            f"found {format_type(actual, api.options)}",
            expr, code=codes.CONST,
        )


def argument_type(api: CheckerPluginInterface, expr: Expression, formal: Type) -> Type:
    """The argument's type inferred against the parameter's, as mypy would have (`"col"` is `Literal['col']`)."""
    if not isinstance(api, TypeChecker):
        return expression_type(api, expr)
    with api.msg.filter_errors():  # mypy reported whatever is wrong inside the expression already
        return api.expr_checker.accept(expr, type_context=formal)


def is_hashable(api: CheckerPluginInterface, typ: Type) -> bool:
    proper = get_proper_type(typ)
    if isinstance(proper, Instance) and _unhashable_dataclass(proper.type):
        return False
    return is_subtype(typ, api.named_generic_type(names.HASHABLE, []))


def _unhashable_dataclass(info: TypeInfo) -> bool:
    for cls in info.mro:
        if "__hash__" in cls.names and not cls.names["__hash__"].plugin_generated:
            return False
        if "dataclass" not in cls.metadata:
            continue
        if cls.metadata["dataclass"].get("frozen"):
            return False
        flags = _dataclass_flags(cls)
        return flags.get("eq", True) and not flags.get("unsafe_hash", False)
    return False


def _dataclass_flags(info: TypeInfo) -> dict[str, bool]:
    """The literal True/False keywords of the class's `@dataclass(...)` decorator."""
    for decorator in info.defn.decorators:
        if isinstance(decorator, CallExpr) and dotted_name(decorator.callee) in _DATACLASS_DECORATORS:
            return {
                key: value.name == "True"
                for key, value in zip(decorator.arg_names, decorator.args)
                if key is not None and isinstance(value, NameExpr) and value.name in ("True", "False")
            }
    return {}


def check_tune_candidates(api: CheckerPluginInterface, name: str, declared: Type, call: CallExpr) -> None:
    """Each candidate of `tl.tune([...])` must fit the parameter's type, and there must be one; a string is no
    list of candidates (to mypy it is a Sequence[str])."""
    if call.args and isinstance(call.args[0], StrExpr):
        api.fail(f"{TUNE_TAKES}, not a string", call, code=codes.TUNE)
        return
    if not call.args or not isinstance(call.args[0], (ListExpr, TupleExpr)):
        return
    candidates = call.args[0].items
    if not candidates:
        api.fail("tl.tune() needs at least one candidate", call, code=codes.TUNE)
        return
    for item in candidates:
        check_tuned_value(api, "Tune candidate", name, declared, item)


def check_tuned_value(api: CheckerPluginInterface, what: str, name: str, declared: Type, item: Expression) -> None:
    """A value the tuner may give const `name` (a `tl.tune` candidate, an autotune configuration's) must fit its
    declared type."""
    if isinstance(get_proper_type(declared), AnyType):
        return
    found = expression_type(api, item)
    if not is_subtype(found, declared):
        api.fail(f'{what} for "{name}" has type {format_type(found, api.options)}; expected '
                 f"{format_type(declared, api.options)}", item, code=codes.TUNE)
