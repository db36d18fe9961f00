"""A kernel function read from its source, not run: its definition as an AST, the names its annotations may use,
which statements at the top of its body annotate a parameter, which names a statement binds (and to a
tensor's sizes), and which compute an annotation's value.

The frontend reads a kernel's in-body form through it at decoration
(frontend/body.py, prelude.py), and the kernel language's `T.prim_func` the
annotations of a lazy-style kernel (language.py), so both take the same
statements as a parameter's annotation; the mypy plugin (mypy_plugin/in_body.py)
reads the statements Python parses at the same lines by the same rules.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Collection, Container, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from tltyped.errors import DefinitionError, DimSyntaxError
from tltyped.types import dim_grammar, in_body_grammar as grammar
from tltyped.types.values import describe


def function_ast(fn: Callable[..., Any]) -> tuple[ast.FunctionDef, str]:
    """The function's definition as an AST with the file's own line numbers, and the file's name."""
    refuse_other_than_plain_def(fn)
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


def refuse_other_than_plain_def(fn: object) -> None:
    """A DefinitionError unless `fn` is a plain `def` function, raised before anything reads a function's
    attributes (`__qualname__`, its signature): `tl.jit` applied to a class, an instance, a `functools.partial` or
    a builtin names what it got, where reading those attributes would raise an AttributeError of its own."""
    kind = _other_than_plain_def(fn)
    if kind is not None:
        named = f"{fn.__qualname__}: " if inspect.isfunction(fn) else ""
        raise DefinitionError(f"{named}{grammar.not_a_plain_def(kind)}")


def _other_than_plain_def(fn: object) -> str | None:
    """What `fn` is if not a plain `def` (a lambda's source is its whole line, which may not parse alone)."""
    if not inspect.isfunction(fn):
        return f"the class {fn.__qualname__}" if isinstance(fn, type) else describe(fn)
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
        return (stmt.target.id, unquoted(stmt.annotation)) if stmt.target.id in params else None
    return None


def unquoted(annotation: ast.expr) -> ast.expr:
    """A quoted annotation (`x: "T.Tensor[[N], T.float16]"`, a forward reference) as the expression it quotes, on
    the quote's line, as typing reads one (and mypy and pyright); any other as it is."""
    if not (isinstance(annotation, ast.Constant) and isinstance(annotation.value, str)):
        return annotation
    try:
        quoted = ast.parse(annotation.value.strip(), mode="eval").body
    except SyntaxError:
        return annotation
    return ast.increment_lineno(quoted, annotation.lineno - 1)


# the methods by which Python's lists, dicts and sets change in place
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort", "update", "setdefault", "popitem",
    "add", "discard",
})


def bound_names(stmt: ast.AST) -> set[str]:
    """The names a statement of a body (or an expression, by its walrus) binds in the body's own scope: its
    assignments' targets (`for`, `with`, walrus, `except`, `import` and `match` capture targets, and those of the
    statements nested in an `if` or a loop, included; a walrus in a comprehension too, which binds in the scope
    around it), a nested function's or class's name, not what binds inside one (a nested function's locals are its
    own), but the names it declares `nonlocal` or `global` (`rebound_by_nested`). `L: int` binds nothing (it only
    annotates). A name whose value the statement changes in place counts as bound (`shape.append(4)`, `s[1] += 4`,
    `c.y = N`, `del s[0]`): a size read from it is its value after."""
    found: set[str] = set()
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
            found |= rebound_by_nested(node).keys()
            todo.extend(node.decorator_list)
            continue
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            found |= {n.target.id for n in _own_walk(node) if isinstance(n, ast.NamedExpr)}
            continue
        elif isinstance(node, ast.AnnAssign) and node.value is None:
            continue
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            found.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found.add(node.rest)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found |= _held_by(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING_METHODS:
            found |= _held_by(node.func.value)
        if not isinstance(node, ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return found


class NestedRebinding(NamedTuple):
    """A `nonlocal` or `global` declaration in a function (or class) nested in a body."""

    function: str  # the innermost def or class declaring it
    line: int
    declaration: str  # as written: `nonlocal L`


def rebound_by_nested(node: ast.AST) -> dict[str, NestedRebinding]:
    """The names that the functions and classes `node` is or holds (at any depth) declare `nonlocal` or `global`,
    each with its first such declaration. A call of such a function rebinds the name in the body's scope (or the
    module's) wherever the body makes one, so from the `def` on the name's value is known only to a run of the body.

    Every such declaration counts, even one naming a local of a function between it and the body: read so, no
    name the body's own scope shares with a nested function is missed."""
    found: dict[str, NestedRebinding] = {}
    todo: list[tuple[ast.AST, str | None]] = [(node, None)]  # a node, and the innermost def or class holding it
    while todo:
        current, owner = todo.pop()
        if isinstance(current, (ast.Nonlocal, ast.Global)) and owner is not None:
            for name in current.names:
                first = found.get(name)
                if first is None or current.lineno < first.line:
                    found[name] = NestedRebinding(owner, current.lineno, ast.unparse(current))
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            owner = current.name
        todo.extend((child, owner) for child in ast.iter_child_nodes(current))
    return found


def nested_rebinding_read(
    statements: Sequence[ast.stmt], node: ast.expr, place: tuple[int, int]
) -> tuple[str, NestedRebinding] | None:
    """A name the value of `node` at `place` (line, column) reads that a function nested in the body, defined
    before it, rebinds (`rebound_by_nested`), with that function's declaration; None if it reads none. `statements`
    are the body's top-level statements. The value reads a name itself or through the statements computing it
    (`computing`), those from the function's `def` on: one before it read the name before any call could rebind it
    (`shape = (L,)` then the `def`). Which value such a name holds there depends on when the body called that
    function, which no reading of the statements tells (running them runs none of its calls), so both readers of
    the in-body form refuse the annotation (in_body_grammar.rebound_by_nested)."""
    computed = computing(statements, loaded_names(node), place)
    for stmt in statements:
        if place_of(stmt) >= place:
            continue
        read = loaded_names(node).union(*(loaded_names(s) for s in computed if place_of(s) >= place_of(stmt)))
        for name, rebinding in rebound_by_nested(stmt).items():
            if name in read:
                return name, rebinding
    return None


def computing(statements: Sequence[ast.stmt], names: Collection[str], before: tuple[int, int]) -> list[ast.stmt]:
    """The statements of `statements` (a body's top-level ones) that (transitively) bind `names` as they are at
    place `before` (line, column), in source order.

    Each name a chosen statement loads is looked for before that statement,
    so `H_kv = H // g` later followed by `H = H_kv` reads the parameter `H`.
    """
    chosen: dict[int, ast.stmt] = {}
    todo = [(name, before) for name in names]
    seen: set[tuple[str, tuple[int, int]]] = set()
    while todo:
        name, place = todo.pop()
        if (name, place) in seen:
            continue
        seen.add((name, place))
        for stmt in reversed(statements):
            if place_of(stmt) < place and name in bound_names(stmt):
                if id(stmt) not in chosen:
                    chosen[id(stmt)] = stmt
                    todo += [(loaded, place_of(stmt)) for loaded in loaded_names(stmt)]
                break
    return sorted(chosen.values(), key=place_of)


def slice_reads(
    statements: Sequence[ast.stmt], node: ast.expr, place: tuple[int, int]
) -> list[tuple[ast.stmt | ast.expr, set[str]]]:
    """The statements of `statements` (a body's top-level ones) the value of `node` at `place` (line, column) needs
    (`computing`), in order, then `node`, each with the names it loads from outside the body (loaded before any of
    those statements binds them): what the runtime's prelude runs to evaluate `node` there, and what it reads."""
    reads: list[tuple[ast.stmt | ast.expr, set[str]]] = []
    stored: set[str] = set()
    parts: list[ast.stmt | ast.expr] = [*computing(statements, loaded_names(node), place), node]
    for part in parts:
        reads.append((part, loaded_names(part) - stored))
        stored |= bound_names(part)
    return reads


def parameter_read(
    statements: Sequence[ast.stmt], node: ast.expr, place: tuple[int, int], among: Collection[str]
) -> tuple[str, int] | None:
    """The first parameter `among` those given that the value of `node` at `place` (line, column) reads, itself or
    through the statements computing it (`slice_reads`), and the line reading it (a statement's, or `node`'s own
    `place`); None where it reads none of them.

    Both readers of the in-body form refuse a parameter's annotation other than a tensor form (`B: Bt`) that reads
    a parameter other than a const (`m, k = A.shape; Bt = T.Tensor[[k, m], T.float16]`): such annotations are read
    before the tensor forms, when no parameter's sizes or value are known (in_body_grammar.computed_type_name)."""
    for part, free in slice_reads(statements, node, place):
        read = sorted(free & set(among))
        if read:
            return read[0], place[0] if part is node else part.lineno
    return None


def place_of(stmt: ast.stmt) -> tuple[int, int]:
    """Where a statement is in the body: its line and column, so that of `L = N * 2; L += 1` on one line the
    second is after the first."""
    return stmt.lineno, stmt.col_offset


def loaded_names(node: ast.AST) -> set[str]:
    """The names `node` reads; a statement that may keep a name's earlier value (`L += 1`, an `if` binding it)
    reads that name too, so `computing` takes the earlier binding before it."""
    loaded = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if isinstance(node, ast.stmt) and keeps_earlier_values(node):
        loaded |= bound_names(node)
    return loaded


def _held_by(node: ast.expr) -> set[str]:
    """The name whose value holds what `node` reads (`s` of `s[1]`, `c` of `c.y.z`), if any."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return {node.id} if isinstance(node, ast.Name) else set()


def _own_walk(node: ast.AST) -> list[ast.AST]:
    """`node` and what it holds, not inside a lambda (whose walrus binds in the lambda's scope)."""
    found: list[ast.AST] = []
    todo = [node]
    while todo:
        found.append(current := todo.pop())
        todo.extend(child for child in ast.iter_child_nodes(current) if not isinstance(child, ast.Lambda))
    return found


def shape_reference(node: ast.AST, params: Container[str]) -> tuple[str, int] | None:
    """`A.shape[1]` -> ("A", 1), `A.shape[-1]` -> ("A", -1), when A is a parameter (the dim grammar's reading)."""
    read = dim_grammar.shape_index(node) if isinstance(node, ast.expr) else None
    return read if read is not None and read[0] in params else None


def is_shape_relation(test: ast.expr, params: Container[str]) -> bool:
    """Whether an assert's test is a shape relation, `x == y` where both sides use parameters' shapes, ints and
    + - * // % only: the runtime checks it at every call and leaves it out of the kernel (frontend/body.py), and the
    mypy plugin reports another assert on its line as the runtime refuses one (in_body_grammar's
    ASSERT_ON_SHAPE_ASSERT_LINE)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    refs = [n for side in sides for n in ast.walk(side) if shape_reference(n, params) is not None]
    allowed = (ast.BinOp, ast.Constant, ast.Subscript, ast.Attribute, ast.Name, ast.Load, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)
    return bool(refs) and all(isinstance(n, allowed) for side in sides for n in ast.walk(side))


@dataclass(frozen=True)
class ShapeRead:
    """A top-level assignment binding names to a tensor parameter's sizes: `m, k = A.shape` (or `(m, k) = A.shape`)
    each name to the size at its place, `k = A.shape[1]` (`n = A.shape[-1]`) one name to the size at that index.
    After the tensor's annotation, TileLang's run of the body binds them to the sizes that annotation states; a
    starred name (`m, *rest = A.shape`) it does not unpack."""

    tensor: str
    names: tuple[str, ...]
    index: int | None  # the one size read; None where the whole shape is unpacked
    starred: bool = False

    def axes(self, rank: int) -> dict[str, int]:
        """Each name's axis of a shape of `rank` sizes; DimSyntaxError where the read does not fit it (as the run
        would fail: a starred name, too many or too few names to unpack, an index past the last size)."""
        if self.starred:
            raise DimSyntaxError(grammar.sizes_star_unpacked(self.tensor))
        if self.index is None:
            if len(self.names) != rank:
                raise DimSyntaxError(grammar.sizes_unpacked(self.tensor, rank, len(self.names)))
            return {name: axis for axis, name in enumerate(self.names)}
        if not -rank <= self.index < rank:
            raise DimSyntaxError(grammar.size_past_rank(self.tensor, rank, self.index))
        return {self.names[0]: self.index % rank}


def shape_read(stmt: ast.AST, params: Container[str]) -> ShapeRead | None:
    """The sizes of a parameter a statement binds names to (`ShapeRead`), if it is such an assignment. A list target
    (`[m, k] = A.shape`, which TileLang does not lower) makes none: the names are then only the body's values."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    target, value = stmt.targets[0], stmt.value
    names = [name.value if isinstance(name, ast.Starred) else name for name in target.elts] if isinstance(
        target, ast.Tuple) else []
    if (
        names and all(isinstance(name, ast.Name) for name in names)
        and isinstance(value, ast.Attribute) and value.attr == "shape"
        and isinstance(value.value, ast.Name) and value.value.id in params
    ):
        assert isinstance(target, ast.Tuple)
        starred = any(isinstance(name, ast.Starred) for name in target.elts)
        return ShapeRead(value.value.id, tuple(name.id for name in names if isinstance(name, ast.Name)), None, starred)
    size = dim_grammar.shape_index(value)
    if isinstance(target, ast.Name) and size is not None and size[0] in params:
        return ShapeRead(size[0], (target.id,), size[1])
    return None


def keeps_earlier_values(stmt: ast.stmt) -> bool:
    """Whether a statement may leave a name it binds as it was before (`L += 1` reads it; an `if` or a loop may
    not run the binding): its value there depends on the earlier binding too."""
    return not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom, ast.FunctionDef,
                                 ast.AsyncFunctionDef, ast.ClassDef))
