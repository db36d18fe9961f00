"""Small type questions the check-time hooks share."""

from __future__ import annotations

from mypy.checker import TypeChecker
from mypy.lookup import lookup_fully_qualified
from mypy.nodes import Expression, RefExpr, StrExpr, TypeInfo
from mypy.plugin import CheckerPluginInterface
from mypy.types import AnyType, FunctionLike, Instance, ProperType, Type, TypeOfAny, TypeType, get_proper_type

from tltyped.mypy_plugin import names


def unread_annotation() -> AnyType:
    """The type of a parameter whose annotation the plugin cannot read (`T.Tensor(SHAPE, dtype)` with a module
    constant SHAPE, which the runtime evaluates): a tensor or a value, unknown, so its arguments go unchecked."""
    return AnyType(TypeOfAny.implementation_artifact)


def is_unread(typ: Type) -> bool:
    proper = get_proper_type(typ)
    return isinstance(proper, AnyType) and proper.type_of_any == TypeOfAny.implementation_artifact


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


def tensor_type(api: CheckerPluginInterface, dtype: Type, dims: list[Type]) -> Type:
    """`Tensor[dtype, *dims]` as the plugin reads the annotation (`MypyPlugin.Tensor`, tltyped/types/tensor.py)."""
    return named_instance(api, names.PLUGIN_TENSOR, [dtype, *dims])


def dtype_class_of(api: CheckerPluginInterface, expr: Expression) -> Type:
    """The dtype class a dtype argument names: `tl.float16`, `T.float16`, `torch.float16`, "float16"; else Any."""
    if isinstance(expr, StrExpr):
        class_name = names.LANGUAGE_DTYPE_CLASS.get(expr.value)
        return named_instance(api, names.dtype_class_fullname(class_name)) if class_name else AnyType(TypeOfAny.special_form)
    if isinstance(expr, RefExpr):
        class_name = names.language_dtype_class(expr.fullname) or names.torch_dtype_class(expr.fullname)
        if class_name is not None:
            return named_instance(api, class_name)
    found = get_proper_type(expression_type(api, expr))
    if isinstance(found, TypeType) and isinstance(found.item, Instance) and found.item.type.has_base(names.DTYPE_BASE):
        return found.item
    if isinstance(found, FunctionLike) and found.is_type_obj():  # a class named directly: `tl.float32`
        info = found.type_object()
        if info.has_base(names.DTYPE_BASE) and info.fullname != names.DTYPE_BASE:
            return Instance(info, [])
    return AnyType(TypeOfAny.special_form)
