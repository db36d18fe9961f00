"""Every statement and expression of a kernel's own body, nested functions excluded.

mypy's compiled `TraverserVisitor` cannot be subclassed from interpreted code
(its base is a compiled trait), so the plugin walks the nodes it needs here.
Nested `def`, `class` and `lambda` bodies are skipped: their `return`s and
calls are not the kernel's.
"""

from __future__ import annotations

from collections.abc import Iterator

from mypy.nodes import (
    AssertStmt,
    AssertTypeExpr,
    AssignmentExpr,
    AssignmentStmt,
    AwaitExpr,
    Block,
    CallExpr,
    CastExpr,
    ComparisonExpr,
    ConditionalExpr,
    DelStmt,
    DictExpr,
    DictionaryComprehension,
    ExpressionStmt,
    ForStmt,
    GeneratorExpr,
    IfStmt,
    IndexExpr,
    ListComprehension,
    ListExpr,
    MatchStmt,
    MemberExpr,
    Node,
    OperatorAssignmentStmt,
    OpExpr,
    RaiseStmt,
    ReturnStmt,
    SetComprehension,
    SetExpr,
    SliceExpr,
    StarExpr,
    Statement,
    TryStmt,
    TupleExpr,
    UnaryExpr,
    WhileStmt,
    WithStmt,
    YieldExpr,
    YieldFromExpr,
)


def own_nodes(root: Node) -> Iterator[Node]:
    """Depth first, statements before the expressions they contain."""
    todo: list[Node | None] = [root]
    while todo:
        node = todo.pop()
        if node is None:
            continue
        yield node
        children = _statement_children(node) if isinstance(node, Statement) else _expression_children(node)
        todo.extend(reversed(children))


def _statement_children(stmt: Statement) -> list[Node | None]:
    if isinstance(stmt, Block):
        return list(stmt.body)
    if isinstance(stmt, ExpressionStmt):
        return [stmt.expr]
    if isinstance(stmt, AssignmentStmt):
        return [*stmt.lvalues, stmt.rvalue]
    if isinstance(stmt, OperatorAssignmentStmt):
        return [stmt.lvalue, stmt.rvalue]
    if isinstance(stmt, IfStmt):
        return [*stmt.expr, *stmt.body, stmt.else_body]
    if isinstance(stmt, WhileStmt):
        return [stmt.expr, stmt.body, stmt.else_body]
    if isinstance(stmt, ForStmt):
        return [stmt.index, stmt.expr, stmt.body, stmt.else_body]
    if isinstance(stmt, WithStmt):
        return [*stmt.expr, *stmt.target, stmt.body]
    if isinstance(stmt, TryStmt):
        return [stmt.body, *stmt.types, *stmt.handlers, stmt.else_body, stmt.finally_body]
    if isinstance(stmt, (ReturnStmt, DelStmt)):
        return [stmt.expr]
    if isinstance(stmt, AssertStmt):
        return [stmt.expr, stmt.msg]
    if isinstance(stmt, RaiseStmt):
        return [stmt.expr, stmt.from_expr]
    if isinstance(stmt, MatchStmt):
        return [stmt.subject, *stmt.guards, *stmt.bodies]
    return []  # def, class, import, pass, ...: nothing of the kernel's own


def _expression_children(expr: Node) -> list[Node | None]:
    if isinstance(expr, CallExpr):
        return [expr.callee, *expr.args]
    if isinstance(expr, OpExpr):
        return [expr.left, expr.right]
    if isinstance(expr, ComparisonExpr):
        return list(expr.operands)
    if isinstance(expr, (UnaryExpr, StarExpr, AwaitExpr, CastExpr, AssertTypeExpr, YieldFromExpr)):
        return [expr.expr]
    if isinstance(expr, YieldExpr):
        return [expr.expr]
    if isinstance(expr, MemberExpr):
        return [expr.expr]
    if isinstance(expr, IndexExpr):
        return [expr.base, expr.index]
    if isinstance(expr, SliceExpr):
        return [expr.begin_index, expr.end_index, expr.stride]
    if isinstance(expr, (TupleExpr, ListExpr, SetExpr)):
        return list(expr.items)
    if isinstance(expr, DictExpr):
        return [part for key, value in expr.items for part in (key, value)]
    if isinstance(expr, ConditionalExpr):
        return [expr.cond, expr.if_expr, expr.else_expr]
    if isinstance(expr, AssignmentExpr):
        return [expr.target, expr.value]
    if isinstance(expr, (ListComprehension, SetComprehension)):
        return [expr.generator]
    if isinstance(expr, GeneratorExpr):
        return [expr.left_expr, *expr.sequences, *(c for conds in expr.condlists for c in conds)]
    if isinstance(expr, DictionaryComprehension):
        return [expr.key, expr.value, *expr.sequences, *(c for conds in expr.condlists for c in conds)]
    return []  # names, literals, lambdas (not the kernel's own body), ...
