"""Dim expressions (`N * 2 + 1`, `T.ceildiv(N, 4)`) as the plugin carries them: text.

The in-body form lets a tensor dim be an integer expression of declared dims,
written inline or bound to a name first (`M = N * 2 + 1`). A type cannot hold
an expression, so the rewrite stores its canonical text as a string
`Literal` dim; call sites evaluate that text once the dims it uses are known.
The grammar, the canonical text and the evaluation are the runtime's
(tltyped/types/dim_grammar.py); what is the plugin's own is reading mypy's
nodes back into source.
"""

from __future__ import annotations

from mypy.nodes import CallExpr, Expression, IntExpr, MemberExpr, NameExpr, OpExpr

from tltyped.errors import DimSyntaxError


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
    raise DimSyntaxError("unsupported syntax in a dim: use ints, dims, + - * // and ceildiv(a, b)")
