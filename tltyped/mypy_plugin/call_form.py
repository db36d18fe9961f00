"""TileLang's call-form annotation, `A: T.Tensor((M, K), dtype)`, read as the subscription form.

mypy's parser keeps an annotation that is a call only as "an invalid
type" (its position, and a note suggesting `T.Tensor[...]`), which semantic
analysis would report. The runtime reads both forms alike (the builder
evaluates the call), so the in-body rewrite reads the statement's source
and hands back what `T.Tensor[[M, K], dtype]` would have parsed to: the
dims as names, int literals or expressions (the rewrite reads an
expression's text at its position, as for the subscription form), the
dtype as a dotted name, a bare name (a parameter or a dtype bound in the
body), or a dtype string; a call naming no dtype (`T.Tensor((M, K))`) is of
the dtype the runtime gives it, dtypes.UNSTATED_TENSOR_DTYPE (float32).

A shape that is one dim (`T.Tensor((N), dtype)`: the parentheses make no
tuple, and `T.Tensor(N * 2, dtype)` alike) is a 1-D shape, as the runtime
reads a shape that is no sequence (tltyped/types/tensor.py): one when the
dim grammar reads it as a dim of the dims declared so far. The subscription
in TileLang's order with such a shape, `T.Tensor[(N), dtype]` (which the
in-body rewrite tells from tltyped's `T.Tensor[dtype, N]` by the grammar's
rule, in_body_grammar.is_shape_first), is read here the same way.

The shape may also be a name the body binds to a tuple or list
(`q_shape = [batch, seq_len, heads, dim]`), read the same way; or to a
choice of two of one length (`(K, M) if trans_A else (M, K)`): then the
rank is known and each dim is the call's (Any), and the names in it are
dims a call determines. Any other shape stays an invalid type.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from mypy.nodes import AssignmentStmt, FuncDef
from mypy.types import AnyType, RawExpressionType, Type, TypeList, TypeOfAny, UnboundType

from tltyped.errors import DimSyntaxError
from tltyped.mypy_plugin.parsed import ModuleNames
from tltyped.types import dim_grammar, dtypes


@dataclass(frozen=True)
class CallForm:
    """The annotation as the subscription form, and the dims a call determines that it does not name."""

    annotation: UnboundType
    determined: frozenset[str]


def is_call_form(typ: Type) -> bool:
    """Whether mypy parsed the annotation as an invalid type (an expression: a call, among others)."""
    return isinstance(typ, RawExpressionType) and typ.literal_value is None


def read(
    stmt: AssignmentStmt, lines: list[str], found: ModuleNames, shape_binding: Callable[[str], AssignmentStmt | None],
    resolve_dim: Callable[[str], str | None],
) -> CallForm | None:
    """`A: T.Tensor(shape, dtype)` (`stmt`, in the module's source `lines`) as `T.Tensor[[dims], dtype]`, or the
    value of `At = T.Tensor(shape, dtype)`, a name for it (`A: At`); `shape_binding` gives the body's last assignment
    to a name before `stmt`, `resolve_dim` reads a name as the dim grammar does (a declared dim, or the expression a
    name is bound to; None for no dim)."""
    parsed = _Statement.parse(stmt.line, stmt.end_line, lines)
    annotation = None
    if parsed is not None and isinstance(parsed.node, ast.AnnAssign):
        annotation = parsed.node.annotation
    elif parsed is not None and isinstance(parsed.node, ast.Assign) and len(parsed.node.targets) == 1:
        annotation = parsed.node.value
    if parsed is None or annotation is None:
        return None
    return _subscription(annotation, parsed, found, lines, shape_binding, resolve_dim)


def signature(func: FuncDef, lines: list[str], found: ModuleNames) -> dict[str, UnboundType]:
    """The call-form annotations of a kernel's parameters (`def f(A: T.Tensor((M, K), dtype))`), by parameter,
    as subscriptions; their shapes are tuples or lists written in place, or one dim (of the module's TypeVars)."""
    parsed = _Statement.parse(func.line, func.end_line, lines)
    if parsed is None or not isinstance(parsed.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    arguments = parsed.node.args
    read = {}
    for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        if isinstance(arg.annotation, ast.Call):
            found_form = _subscription(
                arg.annotation, parsed, found, lines, lambda name: None,
                lambda name: name if name in found.typevars else None,
            )
            if found_form is not None and not found_form.determined:
                read[arg.arg] = found_form.annotation
    return read


def _subscription(
    annotation: ast.expr, parsed: _Statement, found: ModuleNames, lines: list[str],
    shape_binding: Callable[[str], AssignmentStmt | None], resolve_dim: Callable[[str], str | None],
) -> CallForm | None:
    """`T.Tensor(shape, dtype)` or `T.Tensor[shape, dtype]`, parsed in `parsed`, as the subscription form; None for
    a callee other than tltyped's or TileLang's Tensor as the module's imports spell it (`ModuleNames.is_tensor`)."""
    name, shape, dtype = _parts(annotation)
    if name is None or not found.is_tensor(name):
        return None
    if dtype is None:  # `T.Tensor((M, K))`: the dtype the runtime gives a tensor annotation that names none
        dtype = ast.copy_location(ast.Constant(dtypes.UNSTATED_TENSOR_DTYPE.name), annotation)
    dtype_type = _dtype(dtype, found, *parsed.place(dtype.lineno, dtype.col_offset))
    if dtype_type is None:
        return None
    where: _Statement | None = parsed
    determined = frozenset[str]()
    if shape is not None and _is_dim(shape, resolve_dim):  # one dim, a 1-D shape
        shape = ast.copy_location(ast.Tuple([shape], ast.Load()), shape)
    elif isinstance(shape, ast.Name):  # a shape the body computed
        binding = shape_binding(shape.id)
        where = _Statement.parse(binding.line, binding.end_line, lines) if binding is not None else None
        shape = where.node.value if where is not None and isinstance(where.node, ast.Assign) else None
        if isinstance(shape, ast.IfExp):
            shape, determined = _either(shape)
    if where is None or not isinstance(shape, (ast.Tuple, ast.List)):
        return None
    dims: list[Type] = [AnyType(TypeOfAny.special_form) if determined else where.dim(d) for d in shape.elts]
    line, column = where.place(shape.lineno, shape.col_offset)
    call_line, call_column = parsed.place(annotation.lineno, annotation.col_offset)
    read = UnboundType(name, [TypeList(dims, line=line, column=column), dtype_type], line=call_line, column=call_column)
    return CallForm(read, determined)


def _parts(annotation: ast.expr) -> tuple[str | None, ast.expr | None, ast.expr | None]:
    """(the tensor's dotted name, its shape, its dtype) of `T.Tensor(shape, dtype)`, or of `T.Tensor[shape, dtype]`
    in TileLang's order; Nones for anything else."""
    if isinstance(annotation, ast.Call) and len(annotation.args) <= 2:
        given = {**dict(zip(("shape", "dtype"), annotation.args)), **{k.arg: k.value for k in annotation.keywords if k.arg}}
        return dim_grammar.dotted_name(annotation.func), given.get("shape"), given.get("dtype")
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.slice, ast.Tuple) and len(annotation.slice.elts) == 2:
        shape, dtype = annotation.slice.elts
        return dim_grammar.dotted_name(annotation.value), shape, dtype
    return None, None, None


@dataclass(frozen=True)
class _Statement:
    """One statement of the module, parsed by Python's `ast`, with its positions mapped back to the module."""

    node: ast.stmt
    line: int
    indent: int

    @classmethod
    def parse(cls, line: int, end_line: int | None, lines: list[str]) -> _Statement | None:
        """The statement on lines `line` to `end_line` (1-based, inclusive) of the module."""
        end = end_line or line
        if line < 1 or end > len(lines):
            return None
        first = lines[line - 1]
        try:
            (node,) = ast.parse(textwrap.dedent("\n".join(lines[line - 1 : end]))).body
        except (SyntaxError, ValueError):  # not the source mypy parsed, or more than one statement
            return None
        return cls(node, line, len(first) - len(first.lstrip()))

    def place(self, lineno: int, col_offset: int) -> tuple[int, int]:
        """ast counts lines from the statement, and its first line lost the indent."""
        return self.line + lineno - 1, col_offset + (self.indent if lineno == 1 else 0)

    def dim(self, dim: ast.expr) -> Type:
        line, column = self.place(dim.lineno, dim.col_offset)
        if isinstance(dim, ast.Name):
            return UnboundType(dim.id, line=line, column=column)
        if isinstance(dim, ast.Constant) and type(dim.value) is int:
            return RawExpressionType(dim.value, "builtins.int", line, column)
        expression = RawExpressionType(None, "builtins.str", line, column)  # the rewrite reads the text in between
        expression.end_line, expression.end_column = self.place(dim.end_lineno or dim.lineno, dim.end_col_offset or 0)
        return expression


def _is_dim(shape: ast.expr, resolve_dim: Callable[[str], str | None]) -> bool:
    """Whether a shape is one dim, by the dim grammar (types/dim_grammar.py)."""
    try:
        dim_grammar.normalise(shape, resolve_dim)
    except DimSyntaxError:
        return False
    return True


def _either(choice: ast.IfExp) -> tuple[ast.expr | None, frozenset[str]]:
    """`(K, M) if trans_A else (M, K)`: one branch (for its rank) and every name of both, or None."""
    branches = (choice.body, choice.orelse)
    if not all(isinstance(b, (ast.Tuple, ast.List)) for b in branches):
        return None, frozenset()
    body, orelse = (b.elts for b in branches if isinstance(b, (ast.Tuple, ast.List)))
    if len(body) != len(orelse):
        return None, frozenset()
    return choice.body, frozenset(n.id for d in (*body, *orelse) for n in ast.walk(d) if isinstance(n, ast.Name))


def _dtype(expr: ast.expr, found: ModuleNames, line: int, column: int) -> Type | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):  # `"float16"`: spelled as the module spells dtypes
        spelling = found.dtype_named(expr.value)
        return None if spelling is None else UnboundType(spelling, line=line, column=column)
    name = dim_grammar.dotted_name(expr)
    return None if name is None else UnboundType(name, line=line, column=column)
