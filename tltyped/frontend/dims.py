"""Dims: the sizes a tensor annotation states.

A dim is a literal size, a declared symbol (`M`; const or dyn), or an integer
expression of symbols (`2*N + 1`, `T.ceildiv(N, 4)`). One representation
serves every use: checking a call (evaluated on ints), building the kernel
(evaluated on TIR variables, giving a TIR expression that stays symbolic for
dyn symbols) and printing messages and stubs (its source text). The grammar
itself, shared with the mypy plugin, is tltyped/types/dim_grammar.py.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tltyped.errors import DimSyntaxError
from tltyped.types import dim_grammar
from tltyped.types.dim_grammar import ceildiv

__all__ = ["Dim", "DimSyntaxError", "ceildiv", "from_ast", "literal", "render", "symbol"]


@dataclass(frozen=True)
class Dim:
    """One dim of a tensor annotation, printable as `text` (the grammar's canonical text)."""

    text: str
    symbols: tuple[str, ...]
    value: int | None = None

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

    @property
    def affine(self) -> tuple[str, int, int] | None:
        """`(s, a, b)` where the dim is `a*s + b` of its one symbol, which a size solves for (dim_grammar.affine)."""
        return None if self.value is not None or self.is_symbol else dim_grammar.affine(self.text)

    def evaluate(self, values: Mapping[str, Any]) -> Any:
        """The dim's size given each symbol's value (ints or TIR variables)."""
        if self.value is not None:
            return self.value
        if self.is_symbol:
            return values[self.text]
        return dim_grammar.evaluate(self.text, values)

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

    `declared` maps each usable name to its dim: a declared symbol, or the
    variable bound to it (`M = T.dynamic("m")`: M to m), to the symbol; a
    name bound to an expression (`M = N * 2 + 1`) to that expression, so
    `B: T.Tensor[[M], ...]` reads as `2*N+1`.
    """

    def resolve(name: str) -> str | None:
        dim = declared.get(name)
        return None if dim is None else dim.text

    text = dim_grammar.normalise(node, resolve)
    size = dim_grammar.literal_value(text)
    if size is not None:
        return literal(size)
    return Dim(text, dim_grammar.symbols(text))


def render(dim: Dim, names: Mapping[str, str]) -> str:
    """Python source computing `dim` from variables: `names` maps each symbol to one."""
    if dim.value is not None:
        return str(dim.value)
    return dim_grammar.render(dim.text, names)
