"""The runtime and the plugin read a dim expression the same way: same text, same value, same errors.

The runtime reads Python's `ast` (tltyped.frontend.dims), the plugin mypy's
nodes (tltyped.mypy_plugin.dimexpr); both go through tltyped/types/dim_grammar.py.
Expressions are generated, parsed by each reader from the same source, and
compared with each other and with plain Python arithmetic.
"""

from __future__ import annotations

import ast
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mypy.errors import Errors
from mypy.nodes import AssignmentStmt, Expression
from mypy.options import Options
from mypy.parse import parse

from tltyped.frontend import dims as runtime
from tltyped.mypy_plugin import dimexpr
from tltyped.types import dim_grammar

NAMES = ("M", "N", "K")
DECLARED = {name: runtime.symbol(name) for name in NAMES}


def _expressions() -> st.SearchStrategy[str]:
    leaves = st.one_of(st.sampled_from(NAMES), st.integers(0, 64).map(str))

    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        binary = st.tuples(children, st.sampled_from(["+", "-", "*", "//"]), children).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
        ceildiv = st.tuples(st.sampled_from(["ceildiv", "T.ceildiv"]), children, children).map(lambda t: f"{t[0]}({t[1]}, {t[2]})")
        return binary | ceildiv

    return st.recursive(leaves, extend, max_leaves=8)


def mypy_expression(source: str) -> Expression:
    """`source` as mypy's parser gives it to the plugin."""
    options = Options()
    tree = parse(f"x = {source}\n", "<dim>", "dims", Errors(options), options, eager=True)
    stmt = tree.defs[0]
    assert isinstance(stmt, AssignmentStmt)
    return stmt.rvalue


def runtime_dim(source: str) -> runtime.Dim:
    return runtime.from_ast(ast.parse(source, mode="eval").body, DECLARED)


def plugin_text(source: str) -> str:
    return dim_grammar.normalise_source(dimexpr.source_of(mypy_expression(source)), lambda n: n if n in NAMES else None)


def python_value(source: str, values: dict[str, int]) -> int:
    """The reference: Python's own arithmetic, ceildiv as ceiling division."""
    text = source.replace("T.ceildiv", "ceildiv")
    return int(eval(text, {"ceildiv": lambda a, b: -(-a // b)}, values))  # noqa: S307


@settings(max_examples=150, deadline=None)
@given(source=_expressions(), values=st.fixed_dictionaries({n: st.integers(1, 100) for n in NAMES}))
def test_both_readers_give_one_text_and_value(source: str, values: dict[str, int]) -> None:
    dim = runtime_dim(source)
    assert plugin_text(source) == dim.text
    try:
        expected: int | None = python_value(source, values)
    except ZeroDivisionError:
        expected = None
    assert dim_grammar.evaluate_int(dim.text, values) == expected
    if expected is not None:
        assert dim.evaluate(values) == expected


def test_a_name_bound_to_an_expression_reads_as_that_expression() -> None:
    declared = {**DECLARED, "L": runtime_dim("N * 2 + 1")}
    dim = runtime.from_ast(ast.parse("L * K", mode="eval").body, declared)
    aliases = {"L": "N * 2 + 1"}
    plugin = dim_grammar.normalise_source("L * K", lambda n: n if n in NAMES else aliases.get(n))
    assert dim.text == plugin == "(N * 2 + 1) * K"
    assert dim.symbols == ("K", "N")
    assert runtime.render(dim, {"N": "n", "K": "k"}) == "(n * 2 + 1) * k"


def test_a_dotted_name_is_resolved_as_its_dotted_text() -> None:
    """`consts.WIDTH`, `pkg.consts.WIDTH`: each reader's resolver is given the whole name, as it is a plain one."""
    declared = {**DECLARED, "consts.WIDTH": runtime.literal(64), "pkg.consts.WIDTH": runtime.literal(32)}
    source = "N * consts.WIDTH + pkg.consts.WIDTH"
    dim = runtime.from_ast(ast.parse(source, mode="eval").body, declared)
    asked: list[str] = []

    def resolve(name: str) -> str | None:
        asked.append(name)
        return name if name in NAMES else {"consts.WIDTH": "64", "pkg.consts.WIDTH": "32"}.get(name)

    plugin = dim_grammar.normalise_source(dimexpr.source_of(mypy_expression(source)), resolve)
    assert dim.text == plugin == "N * 64 + 32"
    assert asked == ["N", "consts.WIDTH", "pkg.consts.WIDTH"]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("N ** 2", "unsupported operator in dim `N ** 2`"),
        ("N / 2", "unsupported operator in dim `N / 2`"),
        ("max(N, 2)", "unsupported call in dim `max(N, 2)`"),
        ("1.5 * N", "a dim must be an integer, got 1.5"),
        ("N + Q", "dim `Q` is used but never declared"),
        ("N * consts.WIDHT", "dim `consts.WIDHT` is used but never declared"),
        ("f().WIDTH", "unsupported syntax in dim `f().WIDTH`"),
    ],
)
def test_both_readers_reject_the_same_things(source: str, message: str) -> None:
    with pytest.raises(runtime.DimSyntaxError, match=re.escape(message)):
        runtime_dim(source)
    with pytest.raises(dim_grammar.DimSyntaxError):
        plugin_text(source)
