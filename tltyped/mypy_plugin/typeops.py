"""Small type questions the check-time hooks share."""

from __future__ import annotations

from mypy.checker import TypeChecker
from mypy.lookup import lookup_fully_qualified
from mypy.nodes import Expression, TypeInfo
from mypy.plugin import CheckerPluginInterface
from mypy.types import AnyType, Instance, ProperType, Type, TypeOfAny

from tltyped.mypy_plugin import names


def expression_type(api: CheckerPluginInterface, expr: Expression) -> Type:
    """The type mypy gave `expr` when it checked it; inferred afresh only if it did not."""
    if isinstance(api, TypeChecker):
        found = api.lookup_type_or_none(expr)
        if found is not None:
            return found
    return api.get_expression_type(expr)


def is_buffer_like(typ: ProperType) -> bool:
    """A tensor or TileLang buffer: what a kernel may return."""
    if not isinstance(typ, Instance):
        return False
    return any(base.fullname in (names.TORCH_TENSOR, names.LANGUAGE_BUFFER) for base in typ.type.mro)


def named_instance(api: CheckerPluginInterface, fullname: str, args: list[Type] | None = None) -> Type:
    """`fullname[args]` for any loaded class (the checker's own lookup only follows imported names)."""
    modules = api.modules if isinstance(api, TypeChecker) else {}
    found = lookup_fully_qualified(fullname, modules)
    if found is None or not isinstance(found.node, TypeInfo):
        return AnyType(TypeOfAny.special_form)
    return Instance(found.node, args or [])
