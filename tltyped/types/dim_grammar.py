"""The grammar of dim expressions (`N * 2 + 1`, `T.ceildiv(N, 4)`): one reading for the runtime and the plugin.

A dim is an integer expression of non-negative ints, names (dims, and names
of ints, plain or dotted: `WIDTH`, `consts.WIDTH`), a size of a tensor
parameter annotated before (`A.shape[1]`, `A.shape[-1]`), `+ - * //` and
`ceildiv(a, b)` (spelled through any module, `T.ceildiv`). Both readers
go through here, so they accept and print the same things:
- the runtime (tltyped.frontend.dims) reads annotations and shape asserts from
  Python's `ast`, evaluates dims on ints at a call and on TIR variables when
  it builds the kernel, and renders them into the generated fast path;
- the mypy plugin (tltyped.mypy_plugin.dimexpr) turns mypy's nodes into
  source, keeps a dim as its canonical text in a type, and evaluates it at
  call sites once the dims it uses are known.
Canonical text is `ast.unparse` of the checked expression, with names bound
to expressions inlined (in parentheses) and every ceildiv spelled
`ceildiv(a, b)`. This module imports neither torch nor TileLang.
"""

from __future__ import annotations

import ast
import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from types import CodeType
from typing import Any, TypeVar

from tltyped.errors import ArgumentValueError, DimSyntaxError, UndeclaredDim


_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)
_SYNTAX = "use ints, dims, + - * // and ceildiv(a, b)"
CEILDIV = "ceildiv"
_Size = TypeVar("_Size")


def ceildiv(a: Any, b: Any) -> Any:
    """Ceiling division that works on ints and on TIR expressions alike."""
    return -(-a // b)


def normalise(node: ast.expr, resolve: Callable[[str], str | None]) -> str:
    """Check a dim expression and return its canonical text.

    `resolve(name)` gives a declared dim's own name, the text of the
    expression a name is bound to (which is inlined), or None for a name that
    is not a dim; a dotted name (`consts.WIDTH`) comes to it as that text, and
    a tensor's size (`A.shape[1]`) as `shape_size` names it.
    """
    return ast.unparse(_Normalise(resolve).visit(ast.fix_missing_locations(ast.Expression(body=node))).body)


def normalise_source(source: str, resolve: Callable[[str], str | None]) -> str:
    """`normalise` for an expression given as source text."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError:
        raise DimSyntaxError(f"cannot read dim `{source.strip()}`: {_SYNTAX}") from None
    return normalise(tree.body, resolve)


def shape_size(tensor: str, index: int) -> str:
    """The name `resolve` is given for `tensor.shape[index]` written in a dim: `A.shape[1]`, `A.shape[-1]`."""
    return f"{tensor}.shape[{index}]"


def shape_sizes(tensor: str, sizes: Sequence[_Size]) -> dict[str, _Size]:
    """Each of a tensor's sizes under the names `shape_size` gives it, its index counted from either end (a rank 2
    `A`: `A.shape[1]` and `A.shape[-1]` are its second size), for a resolver to look up."""
    rank = len(sizes)
    return {shape_size(tensor, index): size for axis, size in enumerate(sizes) for index in (axis, axis - rank)}


def literal_value(text: str) -> int | None:
    """The size a canonical text states outright, if it is a plain int."""
    return int(text) if text.isdigit() else None


def symbols(text: str) -> tuple[str, ...]:
    """The dims a canonical text uses, sorted."""
    return tuple(sorted({n.id for n in ast.walk(_tree(text)) if isinstance(n, ast.Name) and n.id != CEILDIV}))


@functools.lru_cache(maxsize=1024)
def affine(text: str) -> tuple[str, int, int] | None:
    """`(s, a, b)` where a canonical text of one dim `s` is `a*s + b` (a >= 1): a size that names `s` only in such
    an expression (`n * 4`, `n + 1`) still gives it, `(size - b) // a`, which the size is then checked against.
    Read from the text's values at sample points: one that only looks affine there gives a wrong `s`, which that
    check refuses, never a kernel of another size."""
    names = symbols(text)
    if len(names) != 1:
        return None
    values = [v for v in (evaluate_int(text, {names[0]: k}) for k in _SAMPLES) if v is not None]
    if len(values) < len(_SAMPLES):
        return None
    b, a = values[0], values[1] - values[0]
    return (names[0], a, b) if a >= 1 and all(v == a * k + b for k, v in zip(_SAMPLES, values)) else None


_SAMPLES = (0, 1, 2, 3, 5, 7, 64, 1000, 4097, 65537)


def solve(affine: tuple[str, int, int], size: Any) -> Any:
    """The `s >= 0` with `a*s + b == size` for an `affine` `(s, a, b)`; None where there is none."""
    _, a, b = affine
    return (size - b) // a if size >= b and (size - b) % a == 0 else None


def names_in_source(source: str) -> set[str]:
    """Every name an expression's source mentions (dims, module aliases, functions); empty if it is no expression."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def evaluate(text: str, values: Mapping[str, Any]) -> Any:
    """The value of a canonical text given each dim's value: ints, or TIR variables."""
    try:
        return eval(_code(text), {"__builtins__": {}, CEILDIV: ceildiv}, dict(values))  # noqa: S307  (checked grammar)
    except ZeroDivisionError:
        given = ", ".join(f"{name} = {values[name]}" for name in symbols(text))
        raise ArgumentValueError(f"`{text}` divides by zero{f' ({given})' if given else ''}") from None


def evaluate_int(text: str, values: Mapping[str, int]) -> int | None:
    """The size a canonical text gives; None while one of its dims is unknown (or it divides by zero)."""
    if not set(symbols(text)) <= set(values):
        return None
    try:
        value: int = evaluate(text, values)
    except ArgumentValueError:
        return None
    return value


def render(text: str, names: Mapping[str, str]) -> str:
    """Python source computing a canonical text from variables: `names` maps each dim to one; no ceildiv left."""
    return ast.unparse(_Rename(names).visit(copy.deepcopy(_tree(text))).body)


@functools.lru_cache(maxsize=1024)
def _tree(text: str) -> ast.Expression:
    return ast.parse(text, mode="eval")


@functools.lru_cache(maxsize=1024)
def _code(text: str) -> CodeType:
    return compile(_tree(text), "<dim>", "eval")


class _Normalise(ast.NodeTransformer):
    """Check a dim expression, inline the names bound to expressions, spell ceildiv one way."""

    def __init__(self, resolve: Callable[[str], str | None]) -> None:
        self.resolve = resolve

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if not isinstance(node, (ast.Expression, ast.Load)):
            raise DimSyntaxError(f"unsupported syntax in dim `{ast.unparse(node)}`: {_SYNTAX}")
        return super().generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if not isinstance(node.op, _OPERATORS):
            raise DimSyntaxError(f"unsupported operator in dim `{ast.unparse(node)}`: {_SYNTAX}")
        return ast.BinOp(self.visit(node.left), node.op, self.visit(node.right))

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if not isinstance(node.value, int) or isinstance(node.value, bool):
            raise DimSyntaxError(f"a dim must be an integer, got {node.value!r}")
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.resolved(node.id, node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        """`consts.WIDTH`, `Cfg.WIDTH`: a name reached through a module or a class, which `resolve` is given as its
        dotted text, as it is given a plain name (a misspelt attribute is then undeclared, as a misspelt name is)."""
        dotted = dotted_name(node)
        if dotted is None:  # `f().x`, `a[0].x`: no name, refused as other syntax is
            return self.generic_visit(node)
        return self.resolved(dotted, node)

    def resolved(self, name: str, node: ast.expr) -> ast.AST:
        """The node for a name (plain or dotted) as `resolve` reads it: kept, or the expression it is bound to."""
        resolved = self.resolve(name)
        if resolved is None:
            raise UndeclaredDim(name)
        return _inlined(name, resolved, node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        """`A.shape[1]`, `A.shape[-1]`: a tensor's size, which `resolve` is given as `shape_size` names it.
        `shape[1]`, `SHAPE[-1]`: an item of a tuple, which `resolve` is given as `item_text` names it; a resolver
        that reads no such item (the runtime's: its prelude evaluates the dim instead) leaves it refused as other
        syntax is, as are `s[i]` and `A.shape[i]`."""
        read = shape_index(node)
        if read is not None:
            return self.resolved(shape_size(*read), node)
        item = item_index(node)
        resolved = None if item is None else self.resolve(item_text(*item))
        if item is None or resolved is None:
            return self.generic_visit(node)
        return _inlined(item_text(*item), resolved, node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name != CEILDIV or len(node.args) != 2 or node.keywords:
            raise DimSyntaxError(f"unsupported call in dim `{ast.unparse(node)}`: only ceildiv(a, b) is allowed")
        return ast.Call(ast.Name(CEILDIV, ast.Load()), [self.visit(a) for a in node.args], [])


def dotted_name(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of attributes over a name (`consts.WIDTH`, `T.float16`); None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def shape_index(node: ast.expr) -> tuple[str, int] | None:
    """`A.shape[1]` -> ("A", 1), `A.shape[-1]` -> ("A", -1): the tensor (a name, plain or dotted) and the int
    literal index of a size written in source; None for anything else."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape"):
        return None
    tensor = dotted_name(node.value.value)
    index = constant_index(node)
    return None if tensor is None or index is None else (tensor, index)


def item_text(name: str, index: int) -> str:
    """The name `resolve` is given for a constant index of a plain name written in a dim: `shape[1]`, `SHAPE[-1]`."""
    return f"{name}[{index}]"


def item_index(node: ast.expr) -> tuple[str, int] | None:
    """`shape[1]` -> ("shape", 1), `SHAPE[-1]` -> ("SHAPE", -1): the plain name and the int literal index of an item
    written in source; None for anything else (`A.shape[1]` is `shape_index`'s)."""
    index = constant_index(node)
    if index is None or not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
        return None
    return node.value.id, index


def read_item_text(text: str) -> tuple[str, int] | None:
    """`item_index` of a text `resolve` is given (`shape[1]`: ("shape", 1)); None for a name."""
    try:
        return item_index(ast.parse(text, mode="eval").body)
    except SyntaxError:
        return None


def constant_index(node: ast.expr) -> int | None:
    """The int literal a subscript indexes by (`s[1]`: 1, `s[-1]`: -1), as written in source; None for any other
    expression."""
    if not isinstance(node, ast.Subscript):
        return None
    index = node.slice
    negative = isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub)
    written = index.operand if isinstance(index, ast.UnaryOp) and negative else index
    if not (isinstance(written, ast.Constant) and type(written.value) is int):
        return None
    return -written.value if negative else written.value


def _inlined(name: str, resolved: str, node: ast.expr) -> ast.AST:
    """The node for a name `resolve` read as `resolved`: kept, or the expression it is bound to."""
    if resolved == name:
        return node
    return _tree(resolved).body  # an expression: unparse parenthesises it where precedence needs


class _Rename(ast.NodeTransformer):
    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(self.names[node.id], ast.Load())

    def visit_Call(self, node: ast.Call) -> ast.AST:  # ceildiv(a, b) -> -(-a // b)
        a, b = (self.visit(arg) for arg in node.args)
        return ast.UnaryOp(ast.USub(), ast.BinOp(ast.UnaryOp(ast.USub(), a), ast.FloorDiv(), b))
