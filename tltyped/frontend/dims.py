"""Dims: the sizes a tensor annotation states.

A dim is a literal size, a declared symbol (`M`; const or dyn), or an integer
expression of symbols (`2*N + 1`, `T.ceildiv(N, 4)`). One representation
serves every use: checking a call (evaluated on ints), building the kernel
(evaluated on TIR variables, giving a TIR expression that stays symbolic for
dyn symbols) and printing messages and stubs (its source text).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import CodeType
from typing import Any


def ceildiv(a: Any, b: Any) -> Any:
    """Ceiling division that works on ints and on TIR expressions alike."""
    return -(-a // b)


_ALLOWED_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)


class DimSyntaxError(ValueError):
    """A dim expression uses something other than ints, symbols, + - * // and ceildiv."""


@dataclass(frozen=True)
class Dim:
    """One dim of a tensor annotation, printable as `text`."""

    text: str
    symbols: tuple[str, ...]
    value: int | None = None
    _code: CodeType | None = field(default=None, compare=False, repr=False)

    @property
    def is_literal(self) -> bool:
        return self.value is not None

    @property
    def is_symbol(self) -> bool:
        """A bare symbol such as `M`: binds a size rather than checking one."""
        return self.symbols == (self.text,)

    @property
    def is_derived(self) -> bool:
        return not self.is_literal and not self.is_symbol

    def evaluate(self, values: Mapping[str, Any]) -> Any:
        """The dim's size given each symbol's value (ints or TIR variables)."""
        if self.value is not None:
            return self.value
        if self.is_symbol:
            return values[self.text]
        assert self._code is not None
        return eval(self._code, {"__builtins__": {}, "ceildiv": ceildiv}, dict(values))  # noqa: S307

    def __str__(self) -> str:
        return self.text


def literal(size: int) -> Dim:
    if size < 0:
        raise DimSyntaxError(f"a dim size must be non-negative, got {size}")
    return Dim(str(size), (), size)


def symbol(name: str) -> Dim:
    return Dim(name, (name,))


def from_ast(node: ast.expr, declared: Mapping[str, Dim]) -> Dim:
    """Parse a dim written in source; names resolve through `declared`.

    `declared` maps each usable name to its dim: declared symbols map to
    themselves, names bound to an expression (`M = N * 2 + 1`) to that
    expression, so `B: T.Tensor[[M], ...]` reads as `2*N+1`.
    """
    rewritten = _Normalise(declared).visit(ast.fix_missing_locations(ast.Expression(node)))
    body = rewritten.body
    if isinstance(body, ast.Constant) and isinstance(body.value, int):
        return literal(body.value)
    text = ast.unparse(body)
    if isinstance(body, ast.Name):
        return declared[body.id]
    symbols = tuple(sorted({n.id for n in ast.walk(body) if isinstance(n, ast.Name) and n.id != "ceildiv"}))
    code = compile(ast.fix_missing_locations(ast.Expression(body)), "<dim>", "eval")
    return Dim(text, symbols, None, code)


class _Normalise(ast.NodeTransformer):
    """Check a dim expression and inline the names bound to expressions."""

    def __init__(self, declared: Mapping[str, Dim]) -> None:
        self.declared = declared

    def generic_visit(self, node: ast.AST) -> ast.AST:
        allowed = (ast.Expression, ast.BinOp, ast.Name, ast.Constant, ast.Call, ast.Load, *_ALLOWED_BINOPS)
        if not isinstance(node, allowed):
            raise DimSyntaxError(f"unsupported syntax in dim `{ast.unparse(node)}`: use ints, dims, + - * // and ceildiv")
        return super().generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if not isinstance(node.op, _ALLOWED_BINOPS):
            raise DimSyntaxError(f"unsupported operator in dim `{ast.unparse(node)}`: use + - * // and ceildiv")
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if not isinstance(node.value, int) or isinstance(node.value, bool):
            raise DimSyntaxError(f"a dim must be an integer, got {node.value!r}")
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        dim = self.declared.get(node.id)
        if dim is None:
            raise DimSyntaxError(f"dim `{node.id}` is used but never declared")
        if dim.is_symbol:
            return node
        return ast.parse(f"({dim.text})", mode="eval").body

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name != "ceildiv" or len(node.args) != 2 or node.keywords:
            raise DimSyntaxError(f"unsupported call in dim `{ast.unparse(node)}`: only ceildiv(a, b) is allowed")
        args = [self.visit(a) for a in node.args]
        return ast.Call(func=ast.Name("ceildiv", ast.Load()), args=args, keywords=[])


def render(dim: Dim, names: Mapping[str, str]) -> str:
    """Python source computing `dim` from variables: `names` maps each symbol to one."""
    if dim.value is not None:
        return str(dim.value)
    tree = ast.parse(dim.text, mode="eval")
    return ast.unparse(_Rename(names).visit(tree).body)


class _Rename(ast.NodeTransformer):
    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(self.names[node.id], ast.Load())

    def visit_Call(self, node: ast.Call) -> ast.AST:  # ceildiv(a, b) -> -(-a // b)
        a, b = (self.visit(arg) for arg in node.args)
        return ast.UnaryOp(ast.USub(), ast.BinOp(ast.UnaryOp(ast.USub(), a), ast.FloorDiv(), b))
