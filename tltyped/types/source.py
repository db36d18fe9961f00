"""A kernel function read from its source, not run: its definition as an AST, the names its annotations may use,
and which statements at the top of its body annotate a parameter.

The frontend reads a kernel's in-body form through it at decoration
(frontend/body.py), and the kernel language's `T.prim_func` the annotations
of a lazy-style kernel (language.py), so both take the same statements as
a parameter's annotation.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Container
from typing import Any

from tltyped.errors import DefinitionError
from tltyped.types import in_body_grammar as grammar


def function_ast(fn: Callable[..., Any]) -> tuple[ast.FunctionDef, str]:
    """The function's definition as an AST with the file's own line numbers, and the file's name."""
    kind = _other_than_plain_def(fn)
    if kind is not None:
        raise DefinitionError(f"{fn.__qualname__}: {grammar.not_a_plain_def(kind)}")
    try:
        lines, first = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as exc:
        raise DefinitionError(f"{fn.__qualname__}: kernels must be defined in a source file ({exc})") from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise DefinitionError(f"{fn.__qualname__}: {grammar.not_a_plain_def('this definition')}")
    return node, filename


def _other_than_plain_def(fn: Callable[..., Any]) -> str | None:
    """What `fn` is if not a plain `def` (a lambda's source is its whole line, which may not parse alone)."""
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return grammar.ASYNC_DEF
    if inspect.isgeneratorfunction(fn):
        return grammar.GENERATOR
    return grammar.LAMBDA if getattr(fn, "__name__", None) == "<lambda>" else None


def environment(fn: Callable[..., Any]) -> dict[str, Any]:
    """Names an annotation may use: the module's globals and the closure."""
    env = dict(fn.__globals__)
    env.update(inspect.getclosurevars(fn).nonlocals)
    return env


def annotated_parameter(stmt: ast.stmt, params: Container[str]) -> tuple[str, ast.expr] | None:
    """The parameter a top-level statement of the body annotates (`A: T.Tensor[[M, K], T.float16]`, no value), and
    the annotation; or None."""
    if isinstance(stmt, ast.AnnAssign) and stmt.value is None and isinstance(stmt.target, ast.Name):
        return (stmt.target.id, stmt.annotation) if stmt.target.id in params else None
    return None
