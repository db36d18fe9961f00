"""How the source writes a kernel's annotations: a tensor's dtype and dims, a return, a name used as a dim.

These read unanalysed types (mypy's `UnboundType`s, before semantic analysis), as the rewrite finds them in a
kernel's signature and body (body_names.py, body_reader.py, in_body.py, rewrite.py); they know no kernel's names.
"""

from __future__ import annotations

from mypy.nodes import FuncDef
from mypy.types import AnyType, CallableType, Type, TupleType, TypeList, TypeOfAny, UnboundType

LITERALS = ("Literal", "typing.Literal", "typing_extensions.Literal")
"""How an annotation spells `Literal[64]`, a size."""


def head_name(name: str) -> str:
    """The name a dotted name or an item starts with (`consts` of `consts.WIDTH`, `shape` of `shape[1]`), the name
    itself for a plain one."""
    return name.partition(".")[0].partition("[")[0]


def is_bare_name(typ: Type) -> bool:
    """A plain name written as the type (`M`, `dtype`): no arguments, no dots, not a string's text."""
    return isinstance(typ, UnboundType) and not typ.args and "." not in typ.name and typ.original_str_expr is None


def is_dotted_name(typ: Type) -> bool:
    """A dotted name written as the type (`consts.WIDTH`, `T.float16`): no arguments, not a string's text."""
    return isinstance(typ, UnboundType) and not typ.args and "." in typ.name and typ.original_str_expr is None


def dim_list(first: Type) -> Type:
    """A Tensor's first argument, with TileLang's dims in a tuple (`T.Tensor[(M, N), dtype]`) as a dim list."""
    if isinstance(first, TupleType) and first.implicit:
        return TypeList(first.items, line=first.line, column=first.column)
    return first


def written_tensor_parts(typ: UnboundType) -> tuple[Type | None, list[Type]]:
    """(dtype, dims) of an unanalysed `Tensor[dtype, *dims]`, `Tensor[[dims], dtype]` or `Tensor[(dims), dtype]`."""
    if not typ.args:
        return None, []
    first = dim_list(typ.args[0])
    if isinstance(first, TypeList):
        return (typ.args[1] if len(typ.args) > 1 else None), list(first.items)
    return first, list(typ.args[1:])


def written_return(func: FuncDef) -> Type | None:
    """The return annotation the source writes; None where it writes none."""
    ret = func.unanalyzed_type.ret_type if isinstance(func.unanalyzed_type, CallableType) else None
    return None if isinstance(ret, AnyType) and ret.type_of_any == TypeOfAny.unannotated else ret

