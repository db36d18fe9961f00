"""Evaluate what an in-body annotation computes from the statements before it.

TileLang runs a kernel's body as Python, so an annotation may use any name
the body bound before it: `dtype = T.float16` then `A: T.Tensor[[M, K],
dtype]`, or `A_shape = (K, M) if trans_A else (M, K)` then `A: T.Tensor(
A_shape, in_dtype)`. The analysis reads such an annotation by running, in
order, only the top-level statements it depends on (its slice), with the
declared dims as TIR variables, const parameters as their values, a tensor
parameter annotated before a statement as its sizes there (`m, k = A.shape`,
as TileLang's run binds them), and the function's globals and closure as the
rest; nothing else of the body runs.

When the slice needs a const parameter's value, or a name that does not exist
yet (a module global assigned after the decorated function), the annotation
cannot be read at decoration: `Deferred` says so, and the signature is
resolved per specialisation instead (see analyze.py).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from tltyped.errors import Deferred, DefinitionError, Undefined
from tltyped.frontend import dims as dimlib
from tltyped.frontend.body import BodyInfo
from tltyped.types import in_body_grammar as grammar
from tltyped.types.source import (
    bound_names, loaded_names, nested_rebinding_read, place_of, shape_read, slice_reads,
)


@dataclass(frozen=True)
class AnnotatedSizes:
    """A tensor parameter's annotation as a statement of the body after it reads its sizes: the annotation's place
    (line, column), and the dims it states (None while they wait for the values of the const parameters `waits`)."""

    place: tuple[int, int]
    dims: tuple[dimlib.Dim, ...] | None = None
    waits: frozenset[str] = frozenset()


class _Annotated(NamedTuple):
    """A tensor parameter as the slice reads it after its annotation: its sizes, ints and the dims' TIR variables
    (and expressions of them), as TileLang's run has them; anything else of it only that run knows."""

    shape: tuple[Any, ...]


class Prelude:
    """The top-level statements of a kernel body, evaluable at any place (line, column) of it: a statement's place
    is its line and column, so `L = N * 4; B: T.Tensor[[L], ...]` reads the `L` bound before it on its line."""

    def __init__(
        self, body: BodyInfo, env: Mapping[str, Any], params: Sequence[str], const_params: Sequence[str],
        module_names: frozenset[str],
    ) -> None:
        self.body = body
        self.env = env
        self.params = frozenset(params)  # they hide the module's names of theirs, as in Python
        self.const_params = frozenset(const_params)
        self.module_names = module_names  # what the kernel's module assigns at top level, maybe after the kernel

    def refuse_rebound_by_nested(self, node: ast.expr, place: tuple[int, int]) -> None:
        """A DefinitionError where the value of `node` at `place` reads a name that a function nested in the body
        rebinds (`nonlocal L` there, then the body calls it), by the rule both readers of the in-body form share
        (`source.nested_rebinding_read`)."""
        found = nested_rebinding_read(self.body.statements, node, place)
        if found is not None:
            name, rebinding = found
            raise DefinitionError(grammar.rebound_by_nested(
                name, rebinding.function, rebinding.declaration, self.body.where(rebinding.line)))

    def bound_before(self, place: tuple[int, int]) -> set[str]:
        """The names the body's top-level statements bind before `place`."""
        return {name for stmt in self.body.statements if place_of(stmt) < place for name in bound_names(stmt)}

    def consts_read(self, node: ast.expr, place: tuple[int, int]) -> frozenset[str]:
        """The const parameters the value of `node` as written at `place` reads."""
        return frozenset(self._free(node, place)[1] & self.const_params)

    def _free(self, node: ast.expr, place: tuple[int, int]) -> tuple[list[ast.stmt], set[str]]:
        """The body's statements `node`'s value at `place` needs, and the names they and it load from outside the
        body."""
        reads = slice_reads(self.body.statements, node, place)
        return [part for part, _ in reads if isinstance(part, ast.stmt)], set().union(*(free for _, free in reads))

    def evaluate(
        self, node: ast.expr, place: tuple[int, int], consts: Mapping[str, Any] | None,
        scalars: Mapping[str, str] | None = None, tensors: Mapping[str, AnnotatedSizes] | None = None,
    ) -> Any:
        """The value of `node` as written at `place`; `Deferred` if it needs consts and none are given. `scalars`
        (name -> dtype) are parameters read as TIR variables, as the declared dims are; `tensors` the tensor
        parameters, whose sizes a statement after their annotation may read."""
        statements, free = self._free(node, place)
        needed = free & self.const_params
        if consts is None and needed:
            raise Deferred(frozenset(needed))
        sized = {name: sizes for name, sizes in (tensors or {}).items() if name in free}
        self._check_sizes_read(statements, node, place, sized)
        namespace = {name: value for name, value in self.env.items() if name not in self.params}
        namespace.update({var: _tir_var(dim, self.body.dim_dtypes.get(dim, grammar.DIM_DTYPE))  # TVM only if used
                          for var, dim in self.body.dim_vars.items() if var in free})
        namespace.update({name: _tir_var(name, dtype) for name, dtype in (scalars or {}).items() if name in free})
        namespace.update({name: consts[name] for name in needed if consts is not None})
        namespace.update({name: self._annotated(sizes, scalars or {}) for name, sizes in sized.items()})
        missing = {n for n in free if n not in namespace and not hasattr(builtins, n)}
        if consts is None and missing & self.module_names - self.params:
            raise Deferred(frozenset())  # a global the module assigns after the kernel: read it at the call
        for stmt in statements:
            try:
                code = compile(ast.Module(body=[stmt], type_ignores=[]), self.body.filename, "exec")
                exec(code, namespace)  # noqa: S102  (the user's own statement, run as TileLang runs it)
            except Exception as exc:
                raise _failure(exc, f"{self.body.where(stmt.lineno)}: `{_first_line(stmt)}` failed while reading an annotation") from None
        try:
            code = compile(ast.Expression(node), self.body.filename, "eval")
            return eval(code, namespace)  # noqa: S307
        except Exception as exc:
            raise _failure(exc, f"{self.body.where(place[0])}: cannot evaluate `{ast.unparse(node)}`") from None

    def _check_sizes_read(
        self, statements: list[ast.stmt], node: ast.expr, place: tuple[int, int], tensors: Mapping[str, AnnotatedSizes],
    ) -> None:
        """A DefinitionError where a statement of the slice (or the annotation at `place`) reads a tensor parameter
        the body annotates only after it, whose sizes there a reading of the source does not know, or reads its
        sizes into names that do not fit them (source.py's `ShapeRead`); `Deferred` where they wait for const
        values."""
        for part, at in [*((stmt, place_of(stmt)) for stmt in statements), (node, place)]:
            for name in loaded_names(part) & tensors.keys():
                if tensors[name].place >= at:
                    annotated = self.body.where(tensors[name].place[0])
                    raise DefinitionError(f"{self.body.where(at[0])}: {grammar.sizes_not_known(name, annotated)}")
        waiting = [sizes for sizes in tensors.values() if sizes.dims is None]
        if waiting:
            raise Deferred(frozenset().union(*(sizes.waits for sizes in waiting)))
        for stmt in statements:
            read = shape_read(stmt, tensors)
            if read is not None:
                try:
                    read.axes(len(tensors[read.tensor].dims or ()))
                except dimlib.DimSyntaxError as exc:
                    raise DefinitionError(f"{self.body.where(stmt.lineno)}: {exc}") from None

    def _annotated(self, sizes: AnnotatedSizes, scalars: Mapping[str, str]) -> _Annotated:
        """A tensor parameter as the slice reads it: its dims over the TIR variables of the dims and the int scalar
        parameters (`scalars`, name -> dtype) they name."""
        assert sizes.dims is not None
        dtypes = {**self.body.dim_dtypes, **scalars}
        return _Annotated(tuple(dim.evaluate({s: _tir_var(s, dtypes.get(s, grammar.DIM_DTYPE)) for s in dim.symbols})
                                for dim in sizes.dims))


def _failure(exc: Exception, where: str) -> DefinitionError:
    text = f"{where}: {type(exc).__name__}: {exc}"
    return Undefined(text, exc.name or "") if isinstance(exc, NameError) else DefinitionError(text)


def module_names(filename: str) -> frozenset[str]:
    """The names a module's source binds at its top level (a global may be assigned after the kernel using it)."""
    try:
        with open(filename) as file:
            tree = ast.parse(file.read())
    except (OSError, SyntaxError):
        return frozenset()
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
        else:
            names |= bound_names(stmt)
    return frozenset(names)


def _first_line(stmt: ast.stmt) -> str:
    return ast.unparse(stmt).splitlines()[0]


def _tir_var(name: str, dtype: str) -> Any:
    from tilelang import tvm

    return tvm.tirx.Var(name, dtype)


def to_dim(value: Any, declared: Mapping[str, dimlib.Dim]) -> dimlib.Dim:
    """A dim from an evaluated size: an int, a dim's TIR variable, or a TIR expression of them."""
    from tilelang import tvm

    tirx = tvm.tirx
    if isinstance(value, bool):
        raise dimlib.DimSyntaxError(f"a dim must be an integer, got {value!r}")
    if isinstance(value, int):
        return dimlib.literal(value)
    if isinstance(value, tirx.IntImm):
        return dimlib.literal(int(value))
    if isinstance(value, tirx.PrimExpr):
        return dimlib.from_ast(ast.parse(_tir_text(value), mode="eval").body, declared)
    raise dimlib.DimSyntaxError(f"a dim must be an int or an expression of dims, got {type(value).__name__} {value!r}")


def _is_negated(expr: Any) -> bool:
    """Whether a TIR expression is `x * -1`, as TVM writes `-x`."""
    from tilelang import tvm

    return isinstance(expr, tvm.tirx.Mul) and isinstance(expr.b, tvm.tirx.IntImm) and int(expr.b) == -1


def _tir_text(expr: Any) -> str:
    """Python source of a TIR integer expression over dim variables (+ - * //)."""
    from tilelang import tvm

    tirx = tvm.tirx
    if isinstance(expr, tirx.IntImm):
        return str(int(expr))
    if isinstance(expr, tirx.Var):
        return str(expr.name)
    if isinstance(expr, tirx.Cast) and expr.value.dtype.type_code == expr.dtype.type_code and expr.value.dtype.bits <= expr.dtype.bits:
        return _tir_text(expr.value)  # an int32 dim widened beside an int64 one (`M + N`): the same size
    if _is_negated(expr) and isinstance(expr.a, tirx.FloorDiv) and _is_negated(expr.a.a):
        # `-(-a // b)`: a dim's `ceildiv(a, b)` as the dim grammar computes it on TIR variables (a tensor's size
        # read through `A.shape`)
        return f"ceildiv({_tir_text(expr.a.a.a)}, {_tir_text(expr.a.b)})"
    ops = {tirx.Add: "+", tirx.Sub: "-", tirx.Mul: "*", tirx.FloorDiv: "//"}
    for kind, op in ops.items():
        if isinstance(expr, kind):
            return f"({_tir_text(expr.a)} {op} {_tir_text(expr.b)})"
    raise dimlib.DimSyntaxError(f"unsupported dim expression `{expr}`: use ints, dims, + - * // and ceildiv")
