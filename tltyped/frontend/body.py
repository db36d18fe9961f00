"""Static analysis of a kernel's source: the in-body form and the seeds' rules.

Reads the function's AST once, at decoration, without running it:
- dim declarations: `M, N = T.const("M, N")`, `K = T.dynamic("K")`,
  `R, C = T.dynamic("R"), T.dynamic("C")` (the variable may differ from the
  dim's name: `M = T.dynamic("m")`), and names bound to expressions of dims
  (`M = N * 2 + 1`), each from its place in the body on (`DimBinding`);
- the body's other top-level statements, kept as source: an annotation may
  use names they bind (`dtype = T.float16`, `A_shape = (K, M) if trans_A
  else (M, K)`), which frontend/prelude.py evaluates;
- shape relations: `assert B.shape[0] == 2 * A.shape[0] + 1` (or `assert
  A.shape[1] % 8 == 0`) at the top of the body, which become checks of every
  call (the signature form's derived dims) and facts the kernel assumes;
- in-body parameter annotations: `A: T.Tensor[[M, K], T.float16]`, `n: T.int32`;
- rule violations, reported with the user's file and line: a malformed
  declaration, a `T.alloc_*` passed straight into a call, a `return` of a
  Python value (a literal, arithmetic, a subscript) rather than buffers or
  what a macro returns.
Which spellings declare, make outputs or may be returned, and the messages,
are the in-body grammar's (tltyped/types/in_body_grammar.py), which the mypy
plugin reads by too.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tltyped.frontend import dims as dimlib
from tltyped.errors import DefinitionError, DimSyntaxError
from tltyped.types import in_body_grammar as grammar
from tltyped.types.source import annotated_parameter, bound_names, function_ast, is_shape_relation


@dataclass
class BodyAnnotation:
    """An annotation of parameter `name` (in the body, or in the def), still as source, and the place of its
    statement: read there, as TileLang's run of the body reads it (`L = N * 4; B: T.Tensor[[L], ...]` reads the `L`
    bound before it on its line)."""

    name: str
    node: ast.expr
    line: int
    column: int

    @property
    def place(self) -> tuple[int, int]:
        return self.line, self.column


@dataclass
class ShapeAssert:
    """`assert <dims of parameters> == <dims of parameters>`, still as source."""

    left: ast.expr
    right: ast.expr
    line: int
    message: str | None = None  # the assert's message, where it is a string (`assert ..., "K must be a multiple of 8"`)


@dataclass(frozen=True)
class DimBinding:
    """From `place` (line, column) on, `name` reads as `dim`: a declared dim's variable (`N = T.dynamic("N")`), an
    alias (`L = N * 2`), or, where `dim` is None, no dim (a statement bound it otherwise: `L += 1`, an `if`), so
    the prelude reads its value there."""

    place: tuple[int, int]
    name: str
    dim: dimlib.Dim | None


@dataclass
class BodyInfo:
    filename: str
    dim_kinds: dict[str, bool] = field(default_factory=dict)  # declared symbol -> dyn
    dim_dtypes: dict[str, str] = field(default_factory=dict)  # dyn symbol declared wider than int32 -> its dtype
    dim_bindings: list[DimBinding] = field(default_factory=list)  # in source order
    dim_vars: dict[str, str] = field(default_factory=dict)  # variable bound by T.const/T.dynamic -> its dim symbol
    dim_lines: dict[str, int] = field(default_factory=dict)  # declared symbol -> the line declaring it
    annotations: dict[str, BodyAnnotation] = field(default_factory=dict)
    signature: dict[str, BodyAnnotation] = field(default_factory=dict)  # the parameters' annotations in the def
    shape_asserts: list[ShapeAssert] = field(default_factory=list)
    statements: list[ast.stmt] = field(default_factory=list)  # the other top-level statements, in order
    returns: bool = False  # the kernel `return`s something (its T.empty outputs)

    def where(self, line: int) -> str:
        return f"{self.filename}:{line}"

    def dims_at(self, line: int, column: int) -> dict[str, dimlib.Dim]:
        """The names that read as dims at (line, column), as TileLang's run of the body has them there: a name
        bound again reads as its binding before that place (an annotation in the def, before the body, reads
        none of the body's)."""
        dims: dict[str, dimlib.Dim] = {}
        for binding in self.dim_bindings:
            if binding.place >= (line, column):
                break
            if binding.dim is None:
                dims.pop(binding.name, None)
            else:
                dims[binding.name] = binding.dim
        return dims


def analyze_body(fn: Callable[..., Any], params: Mapping[str, object]) -> BodyInfo:
    node, filename = function_ast(fn)
    info = BodyInfo(filename)
    for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
        if arg.annotation is not None:
            info.signature[arg.arg] = BodyAnnotation(
                arg.arg, arg.annotation, arg.annotation.lineno, arg.annotation.col_offset)
    for stmt in node.body:
        _declaration(stmt, params, info)
    _check_rules(node, info)
    return info


def _call_name(node: ast.expr) -> str | None:
    """`T.const(...)` -> "const"; `const(...)` -> "const"."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    if isinstance(node.func, ast.Name):
        return node.func.id
    return None


def _target_names(target: ast.expr) -> list[str] | None:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts if isinstance(e, ast.Name)]
    return None


def _dim_declarations(names: list[str], value: ast.expr) -> list[tuple[list[str], ast.Call]] | None:
    """The `T.const`/`T.dynamic` calls an assignment makes and the names each binds, or None if it makes none.

    `M, N = T.const("M, N")` is one call binding two names; `R, C =
    T.dynamic("R"), T.dynamic("C")` (TileLang's examples write both) is two
    calls, one name each, and may mix the kinds.
    """
    if grammar.is_dim_declaration(_call_name(value)):
        assert isinstance(value, ast.Call)
        return [(names, value)]
    calls = value.elts if isinstance(value, ast.Tuple) else []
    if calls and len(calls) == len(names) and all(grammar.is_dim_declaration(_call_name(c)) for c in calls):
        return [([name], call) for name, call in zip(names, calls) if isinstance(call, ast.Call)]
    return None


def _declaration(stmt: ast.stmt, params: Mapping[str, object], info: BodyInfo) -> None:
    place = (stmt.lineno, stmt.col_offset)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        names = _target_names(stmt.targets[0])
        declarations = None if names is None else _dim_declarations(names, stmt.value)
        if declarations is not None:
            for declared, call in declarations:
                _declare_dims(call, declared, _call_name(call) in grammar.DYNAMIC_CALLS, place, info)
            return
        _forget_bound(stmt, info)
        if names is not None and len(names) == 1 and names[0] not in params:
            info.dim_bindings.append(DimBinding(place, names[0], _alias(stmt.value, place, info)))
        info.statements.append(stmt)
    elif isinstance(stmt, ast.Assert) and is_shape_relation(stmt.test, params):
        assert isinstance(stmt.test, ast.Compare)
        message = stmt.msg.value if isinstance(stmt.msg, ast.Constant) and isinstance(stmt.msg.value, str) else None
        info.shape_asserts.append(ShapeAssert(stmt.test.left, stmt.test.comparators[0], stmt.lineno, message))
    elif (annotated := annotated_parameter(stmt, params)) is not None:
        name, annotation = annotated
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # (`unquoted` could not parse it)
            raise DefinitionError(f"{info.where(stmt.lineno)}: {grammar.unreadable_quote(name, annotation.value)}")
        if name in info.annotations:
            raise DefinitionError(f"{info.where(stmt.lineno)}: parameter {name!r} is annotated twice in the body")
        info.annotations[name] = BodyAnnotation(name, annotation, stmt.lineno, stmt.col_offset)
    else:
        _forget_bound(stmt, info)
        info.statements.append(stmt)


def _forget_bound(stmt: ast.stmt, info: BodyInfo) -> None:
    """A statement binds its names to a value only a run of the body gives (`L += 1`, an `if` or a loop binding
    them, a walrus, a nested function's `nonlocal L`): none reads as a dim after it, so an annotation or an alias
    bound later reads the prelude's value (`M = L + 1` after `L += 1`), not the dim the name had before. (An
    alias's assignment binds its one name again after this, to the alias.)"""
    for name in bound_names(stmt):
        info.dim_bindings.append(DimBinding((stmt.lineno, stmt.col_offset), name, None))


def _declare_dims(call: ast.Call, names: list[str], is_dyn: bool, place: tuple[int, int], info: BodyInfo) -> None:
    line = place[0]
    spelled = ast.unparse(call.func)
    if not call.args or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
        raise DefinitionError(f"{info.where(line)}: {grammar.not_a_literal(spelled)}")
    try:
        declared = grammar.declared_names(spelled, call.args[0].value, names)
        dtype = _dim_dtype(call, spelled) if is_dyn else grammar.DIM_DTYPE
        for name, dim in zip(names, declared):
            grammar.check_declared_once(name, dim, info.dim_vars)
            info.dim_kinds[dim] = is_dyn
            if dtype != grammar.DIM_DTYPE:
                info.dim_dtypes[dim] = dtype
            info.dim_lines[dim] = line
            info.dim_bindings.append(DimBinding(place, name, dimlib.symbol(dim)))
            info.dim_vars[name] = dim
    except DimSyntaxError as exc:
        raise DefinitionError(f"{info.where(line)}: {exc}") from None


def _dim_dtype(call: ast.Call, spelled: str) -> str:
    """The dtype a `T.dynamic("n", dtype)` call declares (its second argument or `dtype=`), as the grammar reads it."""
    given = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "dtype")]
    if not given:
        return grammar.DIM_DTYPE
    node = given[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return grammar.dim_dtype(spelled, node.value, quoted=True)
    written = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ast.unparse(node)
    return grammar.dim_dtype(spelled, written, quoted=False)


def _alias(value: ast.expr, place: tuple[int, int], info: BodyInfo) -> dimlib.Dim | None:
    """The dim a name assigned `value` at `place` is an alias of (`M = N * 2 + 1`: a derived dim), over the dims
    as they are there; None for a value that is no expression of dims."""
    used = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    if not used & set(info.dims_at(*place)):
        return None
    try:
        return parse_dim(value, info, *place)
    except dimlib.DimSyntaxError:
        return None


def parse_dim(
    node: ast.expr, info: BodyInfo, line: int, column: int, extra: Mapping[str, dimlib.Dim] | None = None,
) -> dimlib.Dim:
    """A dim written at (line, column) of the body, each name read as the body has it there: a declared dim's
    variable as its dim (which may be named otherwise: `M = T.dynamic("m")`), an alias as its expression, or one of
    `extra` (the int scalar parameters). A variable bound again otherwise (`N += 1`) is no dim there, so the
    prelude reads its value."""
    return dimlib.from_ast(node, {**(extra or {}), **info.dims_at(line, column)})


def _check_rules(fn_node: ast.FunctionDef, info: BodyInfo) -> None:
    for node in _walk_own(fn_node):
        if isinstance(node, ast.Call):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(arg, ast.Call) and grammar.is_buffer_call(_call_name(arg)):
                    raise DefinitionError(f"{info.where(arg.lineno)}: {grammar.passed_straight(ast.unparse(arg.func))}")
        if isinstance(node, ast.Return) and node.value is not None:
            info.returns = True
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for value in values:
                if not grammar.may_return(
                    is_name=isinstance(value, ast.Name), is_call=isinstance(value, ast.Call), called=_call_name(value)
                ):
                    raise DefinitionError(f"{info.where(node.lineno)}: {grammar.returned_value(ast.unparse(value))}")


def _walk_own(fn_node: ast.FunctionDef) -> list[ast.AST]:
    """Every node of the function's own body, not of functions nested in it."""
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    found: list[ast.AST] = []
    todo: list[ast.AST] = [s for s in fn_node.body if not isinstance(s, nested)]
    while todo:
        node = todo.pop()
        found.append(node)
        todo.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, nested))
    return found
