"""Dim expressions (`N * 2 + 1`, `T.ceildiv(N, 4)`) as the plugin carries them: text.

The in-body form lets a tensor dim be an integer expression of declared dims,
written inline or bound to a name first (`M = N * 2 + 1`). A type cannot hold
an expression, so the rewrite stores its normalised source text as a string
`Literal` dim; call sites evaluate that text once the dims it uses are known.
The accepted syntax is the runtime's (tltyped.frontend.dims): ints, dims,
`+ - * //` and `ceildiv(a, b)`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from mypy.nodes import CallExpr, Expression, IntExpr, MemberExpr, NameExpr, OpExpr

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//"}


class DimExpressionError(ValueError):
    """A dim expression uses something other than ints, dims, + - * // and ceildiv."""


def source_of(expr: Expression) -> str:
    """Python source for the parts of a mypy expression a dim may use."""
    if isinstance(expr, IntExpr):
        return str(expr.value)
    if isinstance(expr, NameExpr):
        return expr.name
    if isinstance(expr, MemberExpr):
        return f"{source_of(expr.expr)}.{expr.name}"
    if isinstance(expr, OpExpr):
        return f"({source_of(expr.left)} {expr.op} {source_of(expr.right)})"
    if isinstance(expr, CallExpr) and not any(expr.arg_names):
        return f"{source_of(expr.callee)}({', '.join(source_of(a) for a in expr.args)})"
    raise DimExpressionError("unsupported syntax in a dim: use ints, dims, + - * // and ceildiv")


def normalise(source: str, resolve: Callable[[str], str | None]) -> str:
    """Check a dim expression and return its canonical text.

    `resolve(name)` gives a declared dim's own name, a derived name's expression
    text (inlined), or None for a name that is not a dim.
    """
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError:
        raise DimExpressionError(f"cannot read dim `{source.strip()}`") from None
    return _text(tree.body, resolve)


def _text(node: ast.expr, resolve: Callable[[str], str | None]) -> str:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            return str(node.value)
        raise DimExpressionError(f"a dim must be an integer, got {node.value!r}")
    if isinstance(node, ast.Name):
        resolved = resolve(node.id)
        if resolved is None:
            raise DimExpressionError(f'dim "{node.id}" is used but never declared')
        return resolved if resolved == node.id else f"({resolved})"
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return f"{_text(node.left, resolve)} {_OPERATORS[type(node.op)]} {_text(node.right, resolve)}"
    if isinstance(node, ast.Call) and _called_name(node) == "ceildiv" and len(node.args) == 2 and not node.keywords:
        return f"ceildiv({_text(node.args[0], resolve)}, {_text(node.args[1], resolve)})"
    raise DimExpressionError(
        f"unsupported dim `{ast.unparse(node)}`: use ints, dims, + - * // and ceildiv(a, b)"
    )


def _called_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    if isinstance(node.func, ast.Name):
        return node.func.id
    return None


def symbols_in_source(source: str) -> set[str]:
    """Every name an expression's source mentions (dims, module aliases, functions)."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def symbols(text: str) -> set[str]:
    """The dims a normalised expression uses."""
    tree = ast.parse(text, mode="eval")
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id != "ceildiv"}


def evaluate(text: str, values: Mapping[str, int]) -> int | None:
    """The size a normalised expression gives; None while one of its dims is unknown."""
    if not symbols(text) <= set(values):
        return None
    try:
        return _evaluate(ast.parse(text, mode="eval").body, values)
    except ZeroDivisionError:
        return None


def _evaluate(node: ast.expr, values: Mapping[str, int]) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, values), _evaluate(node.right, values)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        return left // right
    assert isinstance(node, ast.Call)
    numerator, denominator = (_evaluate(a, values) for a in node.args)
    return -(-numerator // denominator)
