"""The return type of a kernel that does not state one: the outputs it returns.

A kernel returns global buffers declared in its body, `C = T.empty((M, N),
T.float32)` (or TileLang's `T.empty(M, N, dtype=...)`, or `T.alloc_global`).
For `return C` the kernel's type says `Tensor[float32, M, N]`, with the dims
as the body declared them, so a call's return type has its dims solved from
the arguments like a signature-form kernel's. No `return`: `None`. Anything
the plugin cannot read stays `Any`.
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.nodes import (
    MISSING_FALLBACK,
    AssignmentStmt,
    CallExpr,
    Expression,
    FuncDef,
    IntExpr,
    ListExpr,
    NameExpr,
    ReturnStmt,
    StrExpr,
    TupleExpr,
)
from mypy.types import AnyType, Instance, RawExpressionType, TupleType, Type, TypeOfAny, UnboundType

from tltyped.errors import DimSyntaxError
from tltyped.mypy_plugin import dimexpr
from tltyped.mypy_plugin.parsed import ModuleNames, called_name, dotted_name
from tltyped.mypy_plugin.walk import own_nodes
from tltyped.types import dim_grammar, in_body_grammar


def inferred_return(
    func: FuncDef, found: ModuleNames, resolve_dim: Callable[[str], str | None],
    resolve_dtype: Callable[[str, int, int], Type | None],
) -> Type:
    """`resolve_dim` reads a name in a dim as the body declared it, `resolve_dtype` a dtype name at a line and
    column (None: as spelled)."""
    returns, outputs = _returns_and_outputs(func)
    returned = next((r.expr for r in returns if r.expr is not None), None)
    if returned is None:
        return UnboundType("None", line=func.line)
    reader = _OutputReader(func, found, resolve_dim, resolve_dtype, outputs)
    if isinstance(returned, TupleExpr):
        return TupleType([reader.type_of(i) for i in returned.items], Instance(MISSING_FALLBACK, []), line=returned.line)
    return reader.type_of(returned)


def _returns_and_outputs(func: FuncDef) -> tuple[list[ReturnStmt], dict[str, CallExpr]]:
    """The kernel's own `return`s, and its names bound to `T.empty(...)` / `T.alloc_global(...)`."""
    returns: list[ReturnStmt] = []
    outputs: dict[str, CallExpr] = {}
    for node in own_nodes(func.body):
        if isinstance(node, ReturnStmt):
            returns.append(node)
        elif isinstance(node, AssignmentStmt) and len(node.lvalues) == 1 and isinstance(node.lvalues[0], NameExpr):
            if isinstance(node.rvalue, CallExpr) and called_name(node.rvalue) in in_body_grammar.OUTPUT_CALLS:
                outputs[node.lvalues[0].name] = node.rvalue
    return returns, outputs


class _OutputReader:
    def __init__(
        self,
        func: FuncDef,
        found: ModuleNames,
        resolve_dim: Callable[[str], str | None],
        resolve_dtype: Callable[[str, int, int], Type | None],
        outputs: dict[str, CallExpr],
    ) -> None:
        self.func = func
        self.found = found
        self.resolve_dim = resolve_dim
        self.resolve_dtype = resolve_dtype
        self.outputs = outputs

    def type_of(self, expr: Expression) -> Type:
        unknown = AnyType(TypeOfAny.explicit, line=expr.line)
        if not isinstance(expr, NameExpr):
            return unknown
        for arg in self.func.arguments:  # a tensor parameter, returned as it came
            if arg.variable.name == expr.name and arg.type_annotation is not None:
                return arg.type_annotation
        call = self.outputs.get(expr.name)
        tensor = self.found.tensor_spelling()
        if call is None or tensor is None:
            return unknown
        dims, dtype = _written_shape_and_dtype(call)
        if dims is None:
            return unknown
        return UnboundType(tensor, [self.dtype(dtype), *(self.dim(d) for d in dims)], line=expr.line)

    def dtype(self, dtype: Expression | None) -> Type:
        if dtype is None:  # T.empty's default
            default = self.found.dtype_spelling("float32")
            return UnboundType(default) if default is not None else AnyType(TypeOfAny.special_form)
        spelled: str | None = dotted_name(dtype)
        if isinstance(dtype, StrExpr):  # TileLang's spelling, `"float16"`
            spelled = self.found.dtype_named(dtype.value) or dtype.value  # naming none: the annotation hook says so
        if spelled is None:  # a dtype computed some other way
            return AnyType(TypeOfAny.special_form)
        named = self.resolve_dtype(spelled, dtype.line, dtype.column)
        return named if named is not None else UnboundType(spelled, line=dtype.line, column=dtype.column)

    def dim(self, expr: Expression) -> Type:
        try:
            text = dim_grammar.normalise_source(dimexpr.source_of(expr), self.resolve_dim)
        except DimSyntaxError:  # a size computed some other way: unknown statically
            return AnyType(TypeOfAny.special_form)
        if text.isdigit():
            return RawExpressionType(int(text), "builtins.int", expr.line, expr.column)
        if self.resolve_dim(text) == text:  # a declared dim itself
            return UnboundType(text, line=expr.line, column=expr.column)
        return RawExpressionType(text, "builtins.str", expr.line, expr.column)  # derived (dimexpr.py)


def _written_shape_and_dtype(call: CallExpr) -> tuple[list[Expression] | None, Expression | None]:
    """Dims and dtype of `T.empty((M, N), dtype)`, or of TileLang's `T.empty(M, N, dtype=...)`."""
    positional = [a for a, n in zip(call.args, call.arg_names) if n is None]
    dtype = next((a for a, n in zip(call.args, call.arg_names) if n == "dtype"), None)
    if positional and isinstance(positional[0], (TupleExpr, ListExpr)):
        if dtype is None and len(positional) > 1:
            dtype = positional[1]
        return list(positional[0].items), dtype
    if positional and all(isinstance(a, (NameExpr, IntExpr)) for a in positional):
        return positional, dtype
    return None, dtype
