"""One kernel's desugaring: in-body annotations and dims become its signature.

The runtime reads a kernel the same way at decoration (tltyped.frontend):
- `M, N = T.const("M, N")` / `K = T.dynamic("K")` at the top of the body
  declare dims, in the order the string names them;
- `L = N * 2 + 1` names an expression of dims (a derived dim);
- `m, k = A.shape` (`k = A.shape[1]`), after A's annotation (in the body,
  or in the signature: its TypeVars and ints), names A's dims, as
  `A.shape[1]` written in a dim does (types/source.py's `shape_read`, the
  dim grammar's `shape_size`); before it, the runtime refuses an annotation
  reading them, and so does the rewrite;
- `A: T.Tensor[[M, K], T.float16]` (no value) annotates parameter `A`: the
  statement leaves the body and its type becomes `A`'s; so do TileLang's
  spellings of it: the call form `T.Tensor((M, K), dtype)` (call_form.py),
  a tuple of dims, and `T.StridedTensor[[M, N], [sM, sN], dtype]` (a tensor
  of dims M, N to callers; its stride dims are each call's);
- a const parameter or a name the body computes, used as a dim, is `Any`:
  its value is known per call only; so is a name of the function around a
  kernel that a factory makes (its closure), used as a dim or a dtype; so is
  a dim expression that uses one (`n * 4`, `T.ceildiv(N, block)`);
- but a name the body binds once, to an int literal, before the annotation
  (`block = 64`) is that size, and a constant index of a tuple the body
  binds (`shape[1]` of `shape = (M, N)`) is that item, in a dim expression too
  (`shape[1] * 2`), as the dim grammar's resolver is given it (`item_text`);
- a dim is read with the names as they stand at its place: a computed
  shape's (`shape = (L, 4)`) at its assignment, which the runtime's prelude
  runs there, whatever the body binds its names to before the annotation;
- a module-level name bound once to an int or a dtype (`dtype = T.float16`,
  `accum = "float32"`) is that size or dtype, an int item of a tuple one is
  bound to (`SHAPE[1]` of `SHAPE = (64, 128)`) that size; any other module name used as
  a dim (imported, computed, `consts.WIDTH`) is left to the annotation hook,
  which reads it as mypy types it: an int of unknown size is `Any`, as the
  runtime reads its value only at decoration;
- an unannotated parameter is a const (any hashable value): `Any` here, its
  hashability is checked at call sites; a tensor dtype that names one
  (`C: T.Tensor[[M, N], out_dtype]`) is the dtype each call gives it;
- a dtype written as a name the body binds before the annotation (a const
  parameter too: `dtype = T.float16`, `dt = in_dtype`) is the dtype that
  binding gives it there, as the runtime's prelude runs the body;
- a kernel without a return annotation returns what its `return` names:
  outputs declared with `T.empty` / `T.alloc_global` (outputs.py), or None.
Dims become PEP 695 type parameters of the kernel. Problems are recorded as
`Diagnostic`s (see rewrite.py for why they are not reported here).
"""

from __future__ import annotations

import ast
import builtins
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from mypy.errorcodes import ErrorCode
from mypy.nodes import (
    MISSING_FALLBACK,
    TYPE_VAR_KIND,
    AssignmentStmt,
    CallExpr,
    ConditionalExpr,
    Expression,
    FuncDef,
    IntExpr,
    ListExpr,
    MemberExpr,
    NameExpr,
    StarExpr,
    Statement,
    StrExpr,
    TempNode,
    TupleExpr,
    TypeParam,
)
from mypy.types import (
    AnyType,
    CallableType,
    Instance,
    RawExpressionType,
    TupleType,
    Type,
    TypeList,
    TypeOfAny,
    UnboundType,
)

from tltyped.errors import DimSyntaxError, UndeclaredDim
from tltyped.mypy_plugin import call_form, dimexpr, quoted
from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin.dtype_params import is_dtype_parameter, parameter_dtype
from tltyped.mypy_plugin.kernel_record import Diagnostic, KernelRecord
from tltyped.mypy_plugin.outputs import inferred_return
from tltyped.mypy_plugin.parsed import ModuleNames, called_name, dotted_name, target_names
from tltyped.mypy_plugin.source_text import SourceText
from tltyped.mypy_plugin.typeops import unread_annotation
from tltyped.mypy_plugin.walk import own_nodes
from tltyped.types import dim_grammar, dtypes, in_body_grammar as grammar
from tltyped.types.source import (
    ShapeRead, annotated_parameter, bound_names, is_shape_relation, nested_rebinding_read, place_of, rebound_by_nested,
    shape_read,
)


class KernelRewrite:
    """Desugar one kernel in place."""

    def __init__(
        self, func: FuncDef, found: ModuleNames, source: SourceText, module_bound: set[str] | None,
        closure: frozenset[str] = frozenset(),
    ) -> None:
        self.func = func
        self.found = found
        self.source = source
        self.module_bound = module_bound  # names bound anywhere in the module; None if unknowable
        self.closure = closure  # names of the functions around the kernel (parsed.closure_names)
        self.params = {arg.variable.name for arg in func.arguments}
        self.record = KernelRecord(func, states_return=written_return(func) is not None)
        self.dims: dict[str, int] = {}  # declared in the body -> the line declaring it
        self.declared: dict[str, str] = {}  # a variable a declaration binds -> its dim's name
        self.rebound_dims: set[str] = set()  # declared dims' variables bound again since: no longer the dim
        self.unbound_checked: set[str] = set()  # dims whose declaration was well formed
        self.aliases: dict[str, str] = {}  # a name bound to an expression of dims -> its text
        self.bindings: dict[str, list[Binding]] = {}  # a name -> its top-level bindings so far, in order
        self.nested_rebound: set[str] = set()  # names a function nested in the body so far rebinds (`nonlocal L`)
        # the body's top-level statements so far as Python reads them, the parameters' annotations aside: the
        # runtime's (frontend/body.py), and its dim declarations and shape asserts, which read no size such a
        # function could rebind
        self.statements: list[ast.stmt] = []
        # a tensor parameter annotated so far (in the signature, or in the body) -> its sizes' dim texts (a size None:
        # known per call only; the whole None: the name bound again since, whose sizes are then its value's, per call)
        self.shapes: dict[str, tuple[str | None, ...] | None] = {}
        self.every_shape: dict[str, tuple[str | None, ...]] = {}  # as `shapes`, of every annotation in the body
        # the place being read (a statement's, as `_place` gives it), and how the names stood at each top-level
        # statement so far, before it ran: a dim is read with the names as they stand at its own place (`standing_at`)
        self.place = _place(func)
        self.standings: list[Standing] = []
        # what a name's bindings before a place read, once per (name, place): a body's names may read each other's
        # earlier values many times over (`a = a + b`, `b = b + a`, ...), exponentially many paths unmemoised
        self.no_dim_scalar = functools.cache(self.find_no_dim_scalar)
        self.dims_read = functools.cache(self.find_dims_read)
        self.determined: set[str] = set()  # dims a call determines through a shape the plugin cannot read (call_form)
        # an annotation's shape is not read here (a call form's the plugin cannot read, or one refused): its dims
        # are unknown
        self.shape_unread = False
        self.plain_dims: set[str] = set()  # dims some tensor annotation binds directly
        self.body_annotations: dict[str, tuple[Type, int]] = {}  # a parameter annotated in the body -> it, its line
        self.annotated_at: dict[str, tuple[int, int]] = {}  # a parameter annotated in the body -> its statement's place
        self.signature_dims: list[str] = []  # TypeVar dims of annotations written in the signature
        self.signature_changed = False

    def fail(self, line: int, column: int, message: str, code: ErrorCode) -> None:
        self.record.diagnostics.append(Diagnostic(line, column, message, code))

    def run(self) -> KernelRecord:
        self.annotate_signature_sizes()
        annotations = self.scan_body()
        self.report_asserts_on_shape_assert_lines()
        moved = self.move_annotations(annotations)
        for dim in self.determined - self.plain_dims:  # known to each call, unknown statically: Any, not a TypeVar
            self.dims.pop(dim, None)
        for dim, line in self.dims.items():
            if dim in self.unbound_checked and dim not in self.plain_dims and not self.shape_unread:
                self.fail(
                    line, 0,
                    codes.sentence(grammar.undetermined_dim(dim)),
                    codes.DIM,
                )
        self.rebuild_type(moved)
        return self.record

    # -- reading the body ----------------------------------------------------------------------

    def scan_body(self) -> dict[str, tuple[Type, int]]:
        """Collect dims, derived names and in-body annotations; drop the annotation statements."""
        annotations = self.body_annotations
        kept: list[Statement] = []
        for stmt in self.func.body.body:
            self.place = _place(stmt)
            self.standings.append(Standing(self.place, dict(self.aliases), set(self.rebound_dims), dict(self.shapes)))
            parsed = self.source.statement(stmt.line, stmt.end_line, stmt.column)
            annotated = self.parameter_annotation(stmt)
            if annotated is not None:
                name, typ = annotated
                if self.reads_rebound_by_nested(parsed, stmt):
                    typ = AnyType(TypeOfAny.from_error)
                    self.shape_unread = True
                if name in annotations:
                    self.fail(stmt.line, stmt.column, f'Parameter "{name}" is annotated twice in the body', codes.KERNEL)
                else:
                    annotations[name] = (typ, stmt.line)
                    self.annotated_at[name] = _place(stmt)
                    self.annotate_sizes(name, typ)
                continue
            kept.append(stmt)
            if parsed is not None:
                self.statements.append(parsed)
            read: set[str] = set()  # the names an assignment binds as the runtime reads one (body.py)
            if isinstance(stmt, AssignmentStmt) and len(stmt.lvalues) == 1 and stmt.type is None:
                self.read_assignment(stmt)
                # `L, *rest = ...` has none: bound otherwise, as is a name a nested function rebinds
                read = set(target_names(stmt.lvalues[0]) or []) - self.nested_rebound
                for name, value in self.bound_values(stmt):
                    if name in read:
                        self.bindings.setdefault(name, []).append(Binding(stmt, value))
            self.bind_otherwise(stmt, parsed, read)
        self.func.body.body = kept
        self.place = (self.func.end_line or self.func.line) + 1, 0  # past the body: names as the body leaves them
        return annotations

    def report_asserts_on_shape_assert_lines(self) -> None:
        """Report an assert sharing a shape assert's line (`assert X.shape[0] % 8 == 0; assert flag`), once on that
        line, as the runtime refuses it at decoration: the build leaves the shape assert's line out of the kernel,
        so the other assert would never run. Shape asserts sharing a line are all checked by the calls."""
        asserts = [stmt for stmt in self.statements if isinstance(stmt, ast.Assert)]
        shape_lines = {stmt.lineno for stmt in asserts if is_shape_relation(stmt.test, self.params)}
        others = {stmt.lineno for stmt in asserts if not is_shape_relation(stmt.test, self.params)}
        for line in sorted(shape_lines & others):
            self.fail(line, 0, codes.sentence(grammar.ASSERT_ON_SHAPE_ASSERT_LINE), codes.KERNEL)

    @contextmanager
    def standing_at(self, place: tuple[int, int]) -> Iterator[None]:
        """Read with the names as they stand at `place` (line, column): as the top-level statement there found them,
        which the runtime's prelude runs the statements before (frontend/prelude.py). A computed shape's dims are at
        its assignment (`shape = (L, 4)`), so they are read as the names stood there, whatever the body binds them
        to between it and the annotation (`L = N * 3`); a place before the body reads the names as they stand."""
        standing = next((found for found in reversed(self.standings) if found.place <= place), None)
        if standing is None:
            yield
            return
        now = Standing(self.place, self.aliases, self.rebound_dims, self.shapes)
        self.place, self.aliases, self.rebound_dims, self.shapes = standing
        try:
            yield
        finally:
            self.place, self.aliases, self.rebound_dims, self.shapes = now

    def reads_rebound_by_nested(self, parsed: ast.stmt | None, stmt: Statement) -> bool:
        """Whether a parameter's annotation (`parsed`: as Python reads it) reads a name that a function nested in
        the body rebinds (`nonlocal L` there), by the rule the runtime refuses it by at decoration
        (`source.nested_rebinding_read`); reported with the runtime's message."""
        annotated = None if parsed is None else annotated_parameter(parsed, self.params)
        found = None if parsed is None or annotated is None else nested_rebinding_read(
            self.statements, annotated[1], place_of(parsed))
        if found is None:
            return False
        name, rebinding = found
        message = grammar.rebound_by_nested(name, rebinding.function, rebinding.declaration, f"line {rebinding.line}")
        self.fail(stmt.line, stmt.column, codes.sentence(message), codes.ANNOTATION)
        return True

    def bind_otherwise(self, stmt: Statement, parsed: ast.stmt | None, read: set[str]) -> None:
        """A statement other than one name's assignment that binds names (`L += 1`, `L = M = ...`, an `if` or a
        loop binding them, a walrus, a nested function's `nonlocal L`): each is no alias after it, but a value of
        the body's (per call, as `is_per_call` and `named_dtype` say), as the runtime's prelude runs the statement
        (types/source.py's rule). A name a nested function rebinds stays one from that function's `def` on, even
        where an assignment binds it again: a call of the function may follow, which the runtime refuses to read
        past (frontend/prelude.py). `parsed` is the statement as Python reads it. A tensor parameter bound again (`A =
        B`, `A, B = B, A`, a nested function's `nonlocal A`) is no longer its annotation's sizes: `A.shape` after it
        is its new value's, per call, as the runtime reads it."""
        if parsed is None:
            return
        self.nested_rebound |= rebound_by_nested(parsed).keys()
        for tensor in (bound_names(parsed) | rebound_by_nested(parsed).keys()) & self.shapes.keys():
            self.shapes[tensor] = None
        for name in bound_names(parsed) - read:
            if name in self.declared:  # `N += 1`: no longer the dim, but a value of the body's, as any name so bound
                self.rebound_dims.add(name)
            self.bind_alias(name, None)
            self.bindings.setdefault(name, []).append(Binding(stmt, stmt))

    def annotate_sizes(self, tensor: str, typ: Type) -> None:
        """A tensor parameter's sizes as its annotation states them, which statements after it may read (`m, k =
        A.shape`, `A.shape[1]`): each the dim grammar's text over the names as they stand here, or None for one the
        rewrite does not read so (a size known per call only)."""
        if isinstance(typ, UnboundType) and typ.args and (
            self.found.is_tensor(typ.name) or self.found.is_strided_tensor(typ.name)
        ):
            self.shapes[tensor] = self.every_shape[tensor] = tuple(
                self.dim_text(dim) for dim in written_tensor_parts(typ)[1])

    def annotate_signature_sizes(self) -> None:
        """The sizes of the tensor parameters the signature annotates (`A: tl.Tensor[tl.float16, M, K]`, TileLang's
        `A: T.Tensor((M, K), dtype)` as its subscription), which the body may read (`m, k = A.shape`) as the runtime
        does: each the dim grammar's text over the signature's names (`signature_size`), or None for one known per
        call only."""
        for arg in self.func.arguments:
            typ = arg.type_annotation
            if isinstance(typ, UnboundType) and typ.args and self.found.is_tensor(typ.name):
                self.shapes[arg.variable.name] = tuple(self.signature_size(dim) for dim in written_tensor_parts(typ)[1])

    def signature_size(self, dim: Type) -> str | None:
        """A signature's dim as the dim grammar's text: an int (`64`, `Literal[64]`, a module's int constant) or a
        TypeVar (its name, as the kernel's type has it); None for any other (a parameter or a factory's value, per
        call; an expression, which the signature's annotation does not read either)."""
        if isinstance(dim, UnboundType) and dim.name in _LITERALS and len(dim.args) == 1:
            dim = dim.args[0]
        if isinstance(dim, RawExpressionType) and isinstance(dim.literal_value, int):
            return str(dim.literal_value)
        if not _is_bare_name(dim):
            return None
        assert isinstance(dim, UnboundType)
        if dim.name in self.found.typevars:
            return dim.name
        return str(self.found.int_constants[dim.name]) if dim.name in self.found.int_constants else None

    def shape_read(self, stmt: Statement) -> ShapeRead | None:
        """The tensor's sizes an assignment binds names to (`m, k = A.shape`, `k = A.shape[1]`), by the runtime's
        rule (types/source.py)."""
        parsed = self.source.statement(stmt.line, stmt.end_line, stmt.column)
        return None if parsed is None else shape_read(parsed, self.params)

    def read_sizes(self, stmt: AssignmentStmt, read: ShapeRead) -> None:
        """`m, k = A.shape` after A's annotation: each name is the dim A has there (as an alias of it), as TileLang's
        run binds it; before it (or where the rewrite does not read A's sizes), a value each call gives. Names that
        do not fit A's sizes (`m, k, j = A.shape` of a 2-D A) are reported, as the run fails on them."""
        sizes = self.shapes.get(read.tensor)
        axes: dict[str, int] = {}
        if sizes is not None:
            try:
                axes = read.axes(len(sizes))
            except DimSyntaxError as exc:
                self.fail(stmt.line, stmt.column, codes.sentence(str(exc)), codes.DIM)
        for name in read.names:
            if name not in self.params:
                self.bind_alias(name, sizes[axes[name]] if sizes is not None and name in axes else None)
        self.rebind_dims(list(read.names))

    def report_sizes_read_early(self, name: str, place: tuple[int, int]) -> None:
        """Report a name whose binding in force at `place` (line, column) reads a tensor's sizes before the body
        annotates that tensor (`m, k = A.shape`, then `A: T.Tensor[...]`, on the same line too), on that binding, as
        the runtime refuses it there."""
        binding = self.binding_before(name, place)
        read = None if binding is None else self.shape_read(binding.statement)
        annotated = None if read is None else self.annotated_at.get(read.tensor)
        if binding is not None and read is not None and annotated is not None and annotated > _place(binding.statement):
            statement = binding.statement
            message = grammar.sizes_not_known(read.tensor, f"line {annotated[0]}")
            self.fail(statement.line, statement.column, codes.sentence(message), codes.DIM)

    def last_assignment(self, name: str) -> AssignmentStmt | None:
        """The name's last top-level binding so far (a computed shape), if any, and if it is an assignment of its
        whole value: not `shape += (4,)` or `shape, n = (M, N), 4`, shapes the plugin does not read."""
        found = self.bindings.get(name)
        if not found or not isinstance(found[-1].statement, AssignmentStmt):
            return None
        return found[-1].statement if found[-1].value is found[-1].statement.rvalue else None

    def binding_before(self, name: str, place: tuple[int, int]) -> Binding | None:
        """The name's top-level binding in force at `place` (line, column), if the body binds it before: a
        statement's place is its line and column, so `dtype = T.float32; X: T.Tensor[[N], dtype]` reads the `dtype`
        bound before it on its line, as the runtime's prelude does."""
        return next((found for found in reversed(self.bindings.get(name, [])) if _place(found.statement) < place), None)

    def parameter_annotation(self, stmt: Statement) -> tuple[str, Type] | None:
        """`A: T.Tensor[...]` (no value) where `A` is a parameter: its name and annotation, each part of a quoted one
        (`A: "T.Tensor[...]"`) at its place in the module, where dims' text is read (quoted.py)."""
        if not (isinstance(stmt, AssignmentStmt) and len(stmt.lvalues) == 1):
            return None
        target = stmt.lvalues[0]
        typ = stmt.unanalyzed_type or stmt.type
        if typ is None or not (isinstance(stmt.rvalue, TempNode) and stmt.rvalue.no_rhs):
            return None
        if isinstance(target, NameExpr) and target.name in self.params:
            placed = quoted.placed(typ, self.source.lines())  # `A: "T.Tensor[...]"`: its dims' text is in the string
            if placed is None:  # a string whose text is not the module's (an escape): unchecked, as a shape unread
                self.shape_unread = True
                return target.name, unread_annotation()
            typ = placed
            # TileLang's `T.Tensor((M, K), dtype)`, and `T.Tensor[(N), dtype]` (its order, a shape that is no list)
            if call_form.is_call_form(typ) or self.is_shape_first(typ):
                read = call_form.read(stmt, self.source.lines(), self.found, self.last_assignment, self.resolve_dim)
                if read is None:  # a shape the plugin cannot read (a module constant, a computed tuple): unchecked,
                    self.shape_unread = True  # and any dim may be in it
                    return target.name, unread_annotation()
                typ = read.annotation
                self.determined.update(read.determined)
            return target.name, typ
        return None

    def is_shape_first(self, typ: Type) -> bool:
        """`T.Tensor[x, y]` in TileLang's order, `[shape, dtype]`, with a shape that is no list (`T.Tensor[(N),
        dtype]`, a name the body binds to a shape): told from tltyped's `[dtype, dim]` by the runtime's rule, over
        what the source shows of each part's kind (the runtime also knows a parameter's value: where neither part's
        kind shows, the tensor is left unread)."""
        if not (isinstance(typ, UnboundType) and self.found.is_tensor(typ.name) and len(typ.args) == 2):
            return False
        first, second = typ.args
        if isinstance(_dim_list(first), TypeList):
            return False
        return grammar.is_shape_first(first_is_dtype=self.is_dtype(first), second_is_dim=self.is_dim(second))

    def is_dtype(self, typ: Type) -> bool:
        """Whether an annotation's part reads as a dtype: an attribute (`T.float16`), a string, a name for one (a
        parameter only when plainly a dtype: any other const may be a size), or a module's TypeVar (the signature
        form's dtype, never a shape)."""
        if isinstance(typ, UnboundType) and not typ.args:
            if typ.name in self.params and self.binding_before(typ.name, (typ.line, typ.column)) is None:
                return is_dtype_parameter(self.func, typ.name)
            return ("." in typ.name or typ.name in self.found.typevars
                    or self.named_dtype(typ.name, typ.line, typ.column) is not None)
        return isinstance(typ, RawExpressionType) and isinstance(typ.literal_value, str)

    def is_dim(self, typ: Type) -> bool:
        """Whether an annotation's part reads as a dim: an int (a module's constant too), a declared dim or an
        expression of them."""
        if _is_bare_name(typ):
            assert isinstance(typ, UnboundType)
            return self.resolve_dim(typ.name) is not None or typ.name in self.found.int_constants
        return self.dim_text(typ) is not None

    def dim_text(self, typ: Type) -> str | None:
        """An annotation's dim as the dim grammar's canonical text over the names as they stand (an int, a declared
        dim, an alias's expression, an expression of them); None for one it does not read so."""
        with self.standing_at((typ.line, typ.column)):
            return self.standing_dim_text(typ)

    def standing_dim_text(self, typ: Type) -> str | None:
        """`dim_text` with the names as they stand."""
        if _is_bare_name(typ):
            assert isinstance(typ, UnboundType)
            return self.resolve_dim(typ.name)
        if isinstance(typ, RawExpressionType) and isinstance(typ.literal_value, int):
            return str(typ.literal_value)
        for text in self.source.span(typ.line, typ.column, typ.end_line, typ.end_column):
            try:
                return dim_grammar.normalise_source(text, self.resolve_dim)
            except DimSyntaxError:
                continue
        return None

    def read_assignment(self, stmt: AssignmentStmt) -> None:
        """Read one assignment's names: each a declaration or an alias (for a tuple of another length
        or a list target, which the runtime fails on, nothing)."""
        targets = target_names(stmt.lvalues[0])
        value = stmt.rvalue
        sizes = self.shape_read(stmt)
        if sizes is not None:
            self.read_sizes(stmt, sizes)
        elif targets is None:
            return
        elif isinstance(value, CallExpr) and grammar.is_dim_declaration(called_name(value)):
            self.declare_dims(stmt, value, targets)
        elif isinstance(value, TupleExpr) and len(value.items) == len(targets) and all(
            isinstance(item, CallExpr) and grammar.is_dim_declaration(called_name(item)) for item in value.items
        ):  # `R, C = T.dynamic("R"), T.dynamic("C")`: one declaration each
            for target, item in zip(targets, value.items):
                assert isinstance(item, CallExpr)
                self.declare_dims(stmt, item, [target])
        elif len(targets) == 1 and targets[0] not in self.params:
            self.declare_alias(targets[0], value)
            self.rebind_dims(targets)
        elif (
            isinstance(stmt.lvalues[0], TupleExpr)
            and "[" not in self.source.span(stmt.lvalues[0].line, stmt.lvalues[0].column, stmt.lvalues[0].line,
                                            stmt.lvalues[0].column + 1)  # mypy reads `[KH, KW]` as a tuple too
            and isinstance(value, (TupleExpr, ListExpr))
            and len(value.items) == len(targets)
            and not any(isinstance(item, StarExpr) for item in value.items)
        ):  # `KH, KW = K, K`: each name as the single-target path binds it; every value is read before any name is
            # bound, so `X, Y = Y, X` swaps (the runtime's prelude runs the statement itself). A list target
            # (`[KH, KW] = ...`) TileLang does not lower, so it binds nothing here either.
            aliases = [self.alias_of(item) for item in value.items]
            for target, alias in zip(targets, aliases):
                if target not in self.params:
                    self.bind_alias(target, alias)
            self.rebind_dims(targets)

    def rebind_dims(self, targets: list[str]) -> None:
        """An assignment binding a declared dim's variable again (`N = N * 2` after `N = T.dynamic("N")`): from here
        on the name is what the assignment made it (an alias, or a value of the body's), not the dim, as the
        runtime reads it (frontend/body.py's `dims_at`)."""
        self.rebound_dims |= set(targets) & set(self.declared)

    def bound_values(self, stmt: AssignmentStmt) -> list[tuple[str, Expression]]:
        """The names an assignment binds, each with the expression it binds it to: a name, the value; each name of
        a tuple target, the item of a tuple value of its length (`K, L = M * 2, 4`). Every value is read before any
        name is bound, so `X, Y = Y, X` swaps (the runtime's prelude runs the statement itself). A name unpacked
        from anything else (`P, Q = A.shape`) has no value here, and a list target (`[KH, KW] = ...`), which
        TileLang does not lower, binds nothing."""
        target, value = stmt.lvalues[0], stmt.rvalue
        if isinstance(target, NameExpr):
            return [(target.name, value)]
        sizes = self.shape_read(stmt)
        if sizes is not None:  # `m, k = A.shape`: each name a size of A's, as `k = A.shape[1]` is
            return [(name, value) for name in sizes.names]
        names = target_names(target)
        # mypy reads a list target as a tuple target: the source tells them apart
        list_target = "[" in self.source.span(target.line, target.column, target.line, target.column + 1)
        if (
            names is None or list_target or not isinstance(value, (TupleExpr, ListExpr))
            or len(value.items) != len(names) or any(isinstance(item, StarExpr) for item in value.items)
        ):
            return []
        return list(zip(names, value.items))

    def declare_dims(self, stmt: AssignmentStmt, call: CallExpr, targets: list[str]) -> None:
        """As the runtime reads it (frontend/body.py): the grammar's rules, each reported on the declaration."""
        spelled = dotted_name(call.callee) or called_name(call) or "T.const"
        declared: list[str] | None = None  # None after a malformed declaration: one error is enough
        try:
            if not call.args or not isinstance(call.args[0], StrExpr):
                raise DimSyntaxError(grammar.not_a_literal(spelled))
            declared = grammar.declared_names(spelled, call.args[0].value, targets)
            if called_name(call) in grammar.DYNAMIC_CALLS:
                self.check_dim_dtype(call, spelled)
        except DimSyntaxError as exc:
            self.fail(stmt.line, stmt.column, codes.sentence(str(exc)), codes.DIM)
        for index, name in enumerate(targets):
            dim = name if declared is None else declared[index]
            try:
                grammar.check_declared_once(name, dim, self.declared)
            except DimSyntaxError as exc:
                self.fail(stmt.line, stmt.column, codes.sentence(str(exc)), codes.DIM)
                continue
            self.declared[name] = dim
            self.dims[name] = stmt.line
            if declared is not None:
                self.unbound_checked.add(name)

    def check_dim_dtype(self, call: CallExpr, spelled: str) -> None:
        """The dtype a `T.dynamic("n", dtype)` declaration names (its second argument or `dtype=`), as the runtime
        reads it (frontend/body.py): DimSyntaxError for one no dyn dim may have, or one no literal names."""
        given = [arg for index, (arg, name) in enumerate(zip(call.args, call.arg_names))
                 if (index == 1 and name is None) or name == "dtype"]
        if not given:
            return
        node = given[0]
        if isinstance(node, StrExpr):
            grammar.dim_dtype(spelled, node.value, quoted=True)
            return
        written = node.name if isinstance(node, (MemberExpr, NameExpr)) else next(
            iter(self.source.span(node.line, node.column, node.end_line, node.end_column)), "an expression")
        grammar.dim_dtype(spelled, written, quoted=False)

    def declare_alias(self, name: str, value: Expression) -> None:
        """`M = N * 2 + 1`: a name for an expression of dims, usable in annotations."""
        self.bind_alias(name, self.alias_of(value))

    def alias_of(self, value: Expression) -> str | None:
        """The dim expression `value` is, over the dims as they stand now; None: not one, one naming no dim
        included (`K = 4` after `K = N`: a name bound to it is no alias, as the runtime's body.py reads it)."""
        try:
            source = dimexpr.source_of(value)
            if not dim_grammar.names_in_source(source) & (set(self.dims) | set(self.aliases)):
                return None
            return dim_grammar.normalise_source(source, self.resolve_dim)
        except DimSyntaxError:
            return None

    def bind_alias(self, name: str, alias: str | None) -> None:
        if alias is None:
            self.aliases.pop(name, None)
        else:
            self.aliases[name] = alias

    def named_dtype(self, name: str, line: int, column: int) -> Type | None:
        """The dtype a name written as one at (line, column) stands for there, as Python scopes it and the runtime's
        prelude reads it; None: as written (the annotation hook reads it, or says it is no dtype).

        The body's binding of the name in force there, where there is one, gives it (`binding_dtype`), a const
        parameter's too (`dtype = T.float32` in the body of `def f(A, dtype=T.float16)`); else a const parameter's
        is the one each call gives it (dtype_params.py), a name of the function around the kernel its value per
        call of that factory (Any), and a module-level dtype constant its dtype."""
        binding = self.binding_before(name, (line, column))
        if binding is not None:
            return self.binding_dtype(binding, line, column)
        if name in self.params:
            return parameter_dtype(self.func, name, line, column)
        if name in self.closure:
            return AnyType(TypeOfAny.special_form, line=line, column=column)
        if name in self.found.dtype_constants:
            return UnboundType(self.found.dtype_constants[name], line=line, column=column)
        return None

    def binding_dtype(self, binding: Binding, line: int, column: int) -> Type | None:
        """The dtype a binding of the body gives its name, for a dtype written at (line, column): the one its value
        writes (`dtype = T.bfloat16`, `"bfloat16"`); the one each call gives (Any) where a call chooses it (an `if`
        or a loop binding it, a conditional expression of dtypes); that of the name it is bound to, there (`dt =
        in_dtype`); for any other value, None (no dtype)."""
        if not binding.read or self.chooses_dtype(binding.value):
            return AnyType(TypeOfAny.special_form, line=line, column=column)
        written = self.found.written_dtype(binding.value) if isinstance(binding.value, Expression) else None
        if written is not None:
            return UnboundType(written, line=line, column=column)
        if not isinstance(binding.value, NameExpr):
            return None
        named = self.named_dtype(binding.value.name, *_place(binding.statement))
        if named is not None:
            named.set_line(line, column)
        return named

    def chooses_dtype(self, value: Expression | Statement) -> bool:
        """`T.float16 if fp else T.bfloat16` (nested too): a dtype each call chooses, as the runtime's prelude runs
        it."""
        return isinstance(value, ConditionalExpr) and all(
            self.found.written_dtype(branch) is not None or self.chooses_dtype(branch)
            for branch in (value.if_expr, value.else_expr))

    def resolve_dtype(self, spelled: str, line: int, column: int) -> Type | None:
        """For outputs' dtypes: a dtype written as a name (`named_dtype`), or a tensor parameter's `A.dtype`."""
        named = self.named_dtype(spelled, line, column)
        if named is not None:
            return named
        base, _, attr = spelled.rpartition(".")
        typ = next((arg.type_annotation for arg in self.func.arguments if arg.variable.name == base), None)
        if attr == "dtype" and isinstance(typ, UnboundType) and self.found.is_tensor(typ.name):
            return written_tensor_parts(typ)[0]
        return None

    def resolve_dim(self, name: str) -> str | None:
        """For the dim grammar's normalise: a declared dim is itself, a derived name its expression, a tensor's size
        (`A.shape[1]`, as the grammar names it) the dim A's annotation states there; DimSyntaxError for the size of a
        tensor the body annotates only after, as the runtime refuses it."""
        if name in self.dims and name not in self.rebound_dims:
            return name
        if name in self.aliases:
            return self.aliases[name]
        literal = self.body_int(name)
        if literal is not None:
            return str(literal)
        read = dim_grammar.read_item_text(name)
        if read is not None:  # `shape[1]`: the item, read at its own place
            item = self.body_item(*read) if self.is_per_call(read[0]) else None
            return None if item is None else self.dim_text(item)
        tensor = _head(name)
        if tensor in self.shapes:  # annotated before, and maybe bound again since (its sizes then per call)
            sizes = self.shapes[tensor]
            return None if sizes is None else dim_grammar.shape_sizes(tensor, sizes).get(name)
        if name in dim_grammar.shape_sizes(tensor, self.every_shape.get(tensor, ())):  # annotated after
            raise DimSyntaxError(grammar.sizes_not_known(tensor, f"line {self.body_annotations[tensor][1]}"))
        return None

    # -- annotations -----------------------------------------------------------------------------

    def move_annotations(self, annotations: dict[str, tuple[Type, int]]) -> bool:
        moved = False
        for arg in self.func.arguments:
            name = arg.variable.name
            if arg.type_annotation is not None:
                arg.type_annotation = self.signature_annotation(arg.type_annotation)
            if name not in annotations:
                continue
            typ, line = annotations[name]
            if arg.type_annotation is not None:
                self.fail(line, 0, f'Parameter "{name}" is annotated both in the signature and in the body', codes.KERNEL)
                continue
            arg.type_annotation = self.body_annotation(typ)
            moved = True
        return moved

    def signature_annotation(self, typ: Type) -> Type:
        """A signature annotation, with its never-declared dims reported and made Any.

        mypy would only say `Name "Q" is not defined`. The same object comes back
        when nothing changed.
        """
        if not isinstance(typ, UnboundType) or not typ.args:
            return typ
        if not self.found.is_tensor(typ.name):
            args = [self.signature_annotation(a) for a in typ.args]
            return typ if all(a is b for a, b in zip(args, typ.args)) else typ.copy_modified(args=args)
        dtype, dims = written_tensor_parts(typ)
        consts = self.found.reads_consts(typ.name)
        checked = [self.signature_dim(d, consts) for d in dims]
        read_dtype = self.signature_dtype(dtype, consts)
        if read_dtype is dtype and all(a is b for a, b in zip(checked, dims)):
            return typ
        first = _dim_list(typ.args[0])
        if isinstance(first, TypeList):
            dims_list = TypeList(checked, line=first.line, column=first.column)
            return typ.copy_modified(args=[dims_list, *([] if read_dtype is None else [read_dtype]), *typ.args[2:]])
        return typ.copy_modified(args=[read_dtype or first, *checked])

    def signature_dtype(self, dtype: Type | None, consts: bool = False) -> Type | None:
        """A signature's dtype written as a name of the function around the kernel (a factory's parameter or
        local, hiding the module's names) is Any, the dtype each factory call gives, as `named_dtype` reads such a
        name in the body: the signature is evaluated when the factory runs. Left as written, the annotation hook
        would find the factory's variable, which is no dtype class, and report an unknown dtype.

        Where the annotation may name the kernel's consts (`consts`: TileLang's Tensor under postponed annotations,
        `ModuleNames.reads_consts`), a const parameter's name is the dtype each call gives it, as in the body;
        left as written, mypy would find no such name."""
        if consts and isinstance(dtype, UnboundType) and _is_bare_name(dtype) and dtype.name in self.params:
            self.signature_changed = True
            return parameter_dtype(self.func, dtype.name, dtype.line, dtype.column)
        if isinstance(dtype, UnboundType) and _is_bare_name(dtype) and dtype.name in self.closure:
            self.signature_changed = True
            return AnyType(TypeOfAny.special_form, line=dtype.line, column=dtype.column)
        return dtype

    def signature_dim(self, dim: Type, consts: bool = False) -> Type:
        """A signature's dim written as a name: a declared dim, a module's name, or (where the annotation may name
        the kernel's consts, as `signature_dtype` says) a parameter, whose size each call gives (Any, as
        `body_dim` reads it); else a dim never declared."""
        if not _is_bare_name(dim):
            return dim
        assert isinstance(dim, UnboundType)
        if dim.name in self.dims:
            self.plain_dims.add(dim.name)
            return dim
        if consts and dim.name in self.params:
            self.signature_changed = True
            return self.per_call_dim(dim)
        if dim.name in self.found.other_values or hasattr(builtins, dim.name):
            return dim  # a module-level alias (`L64 = Literal[64]`) or a builtin (`int`): the hook reads it
        if self.module_bound is None or dim.name in self.module_bound:
            if dim.name not in self.signature_dims:
                self.signature_dims.append(dim.name)
            return dim
        self.fail(
            dim.line, dim.column,
            f'Dim "{dim.name}" is used but never declared; declare it with {dim.name} = TypeVar("{dim.name}")',
            codes.DIM,
        )
        self.signature_changed = True
        return AnyType(TypeOfAny.from_error, line=dim.line, column=dim.column)

    def body_annotation(self, typ: Type) -> Type:
        """An in-body annotation as a parameter type: dims resolved, a dtype parameter made Any."""
        if isinstance(typ, UnboundType) and self.found.is_strided_tensor(typ.name) and len(typ.args) == 3:
            typ = self.strided(typ)
        if not (isinstance(typ, UnboundType) and self.found.is_tensor(typ.name) and typ.args):
            return typ
        first = _dim_list(typ.args[0])
        if isinstance(first, TypeList):
            dims = TypeList([self.body_dim(d) for d in first.items], line=first.line, column=first.column)
            return typ.copy_modified(args=[dims, *(self.body_dtype(a) for a in typ.args[1:])])
        return typ.copy_modified(args=[self.body_dtype(first), *(self.body_dim(d) for d in typ.args[1:])])

    def strided(self, typ: UnboundType) -> Type:
        """`T.StridedTensor[[N, M], [N_, M_], dtype]` is a `T.Tensor[[N, M], dtype]` to callers (a tensor's type
        has no strides); each stride dim is the call's, read from the tensor's strides. The Tensor is the one of the
        same module (`T.Tensor`), or for a StridedTensor imported by name whichever spelling of tltyped's Tensor the
        module has (with none, the annotation is left as written)."""
        shape, strides, dtype = typ.args
        language, dot, _ = typ.name.rpartition(".")
        tensor = f"{language}.Tensor" if dot else self.found.tensor_spelling()
        if not (isinstance(shape, TypeList) and isinstance(strides, TypeList)) or tensor is None:
            return typ
        self.plain_dims.update(d.name for d in strides.items if _is_bare_name(d) and isinstance(d, UnboundType))
        return UnboundType(tensor, [shape, dtype], line=typ.line, column=typ.column)

    def body_dtype(self, typ: Type) -> Type:
        """A dtype written as a bare name (`out_dtype`, `dtype`) is the one `named_dtype` reads."""
        if _is_bare_name(typ):
            assert isinstance(typ, UnboundType)
            return self.named_dtype(typ.name, typ.line, typ.column) or typ
        return typ

    def body_dim(self, typ: Type) -> Type:
        """An in-body annotation's dim, read with the names as they stand at its place (`standing_at`)."""
        with self.standing_at((typ.line, typ.column)):
            return self.standing_dim(typ)

    def standing_dim(self, typ: Type) -> Type:
        """`body_dim` with the names as they stand."""
        if _is_bare_name(typ):
            assert isinstance(typ, UnboundType)
            if typ.name in self.dims and typ.name not in self.rebound_dims:
                self.plain_dims.add(typ.name)
                return typ
            if self.aliases.get(typ.name) in self.dims:  # `KH = K`: another name for a declared dim, plain as it
                alias = self.aliases[typ.name]  # is (the runtime determines K from a tensor that has KH)
                self.plain_dims.add(alias)
                return UnboundType(alias, line=typ.line, column=typ.column)
            if self.aliases.get(typ.name) in self.found.typevars:  # `m, k = A.shape` of `A: tl.Tensor[dt, M, K]`
                return UnboundType(self.aliases[typ.name], line=typ.line, column=typ.column)
            if typ.name in self.aliases:
                return self.derived(self.aliases[typ.name], typ.line, typ.column)
            literal = self.body_int(typ.name)
            if literal is not None:
                return RawExpressionType(literal, "builtins.int", line=typ.line, column=typ.column)
            if self.is_per_call(typ.name):
                self.report_sizes_read_early(typ.name, (typ.line, typ.column))
                self.determined.update(self.dims_read(typ.name, (typ.line, typ.column)))
                return self.per_call_dim(typ)
            if typ.name in self.found.int_constants:  # a module-level constant: its value, as a literal dim
                return RawExpressionType(self.found.int_constants[typ.name], "builtins.int", line=typ.line, column=typ.column)
            if self.is_module_name(typ.name):  # imported, or computed (`int(os.environ[...])`): the annotation hook
                return typ  # reads it as mypy types it, a `Final` int's size or an int of unknown size
            self.fail(
                typ.line, typ.column,
                codes.sentence(grammar.undeclared_dim(typ.name)),
                codes.DIM,
            )
            return AnyType(TypeOfAny.from_error, line=typ.line, column=typ.column)
        if isinstance(typ, AnyType) or (isinstance(typ, RawExpressionType) and isinstance(typ.literal_value, int)):
            return typ
        if isinstance(typ, UnboundType) and typ.name in _LITERALS:
            return typ
        if _is_dotted_name(typ):  # `consts.WIDTH`, `cfg.block`
            assert isinstance(typ, UnboundType)
            if self.is_per_call(_head(typ.name)):
                return AnyType(TypeOfAny.special_form, line=typ.line, column=typ.column)
            if self.is_module_name(_head(typ.name)):  # another module's int: the annotation hook reads it, as a bare name
                return typ
        item = self.tuple_item(typ)
        if item is not None:
            return item
        return self.expression_dim(typ)

    def tuple_item(self, typ: Type) -> Type | None:
        """A dim written as a constant index of a name whose value is per call (`shape[1]` after `shape = (M, N)`),
        as the runtime's prelude evaluates it: the item of the tuple or list the body's binding in force assigns it,
        read at the item's own place; the call's size (Any) where the plugin does not read that binding. None for any
        other dim."""
        for text in self.source.span(typ.line, typ.column, typ.end_line, typ.end_column):
            try:
                node = ast.parse(text.strip(), mode="eval").body
            except SyntaxError:
                continue
            read = dim_grammar.item_index(node)
            if read is None or not self.is_per_call(read[0]):
                return None
            item = self.body_item(*read)
            return AnyType(TypeOfAny.special_form, line=typ.line, column=typ.column) if item is None else self.body_dim(item)
        return None

    def body_item(self, name: str, index: int) -> Type | None:
        """The item a constant index of a name the body binds picks (`shape[1]` of `shape = (M, N)`: N), as an
        annotation's dim written where the tuple or list was: of the body's binding in force at the place read, as
        the runtime's prelude evaluates it; None where the plugin does not read that binding as one."""
        binding = self.binding_before(name, self.place)
        item = _indexed_item(None if binding is None else binding.value, index)
        return None if item is None else _written_dim(item)

    def module_int(self, name: str) -> int | None:
        """The int a module-level name stands for (`HIDDEN = 256`), or an item of a tuple one is bound to (`SHAPE[1]`
        of `SHAPE = (64, 128)`) that is an int literal or such a name, as the runtime reads it at decoration; None
        for any other."""
        if name in self.found.int_constants:
            return self.found.int_constants[name]
        read = dim_grammar.read_item_text(name)
        item = _indexed_item(self.found.tuple_constants.get(read[0]), read[1]) if read is not None else None
        if isinstance(item, IntExpr):
            return item.value
        return self.found.int_constants.get(item.name) if isinstance(item, NameExpr) else None

    def per_call_dim(self, dim: UnboundType) -> Type:
        """A dim whose size each call gives (Any), unless it is a scalar parameter of a dtype no dim has (`M:
        T.int8`) or a name the body computes from one (`K = M * 2`), which the runtime refuses at decoration: said
        here with the runtime's message."""
        scalar = self.no_dim_scalar(dim.name, (dim.line, dim.column))
        if scalar is None:
            return AnyType(TypeOfAny.special_form, line=dim.line, column=dim.column)
        self.fail(dim.line, dim.column, codes.sentence(grammar.scalar_of_no_dim_dtype(*scalar)), codes.DIM)
        return AnyType(TypeOfAny.from_error, line=dim.line, column=dim.column)

    def find_no_dim_scalar(self, name: str, place: tuple[int, int]) -> tuple[str, str] | None:
        """The scalar parameter of a dtype no dim has (and its dtype) that `name` is at `place` (line, column), or
        that the body's binding of `name` in force there reads, through other bindings too (`S = S * 2` reads the
        parameter S), as the runtime's slice of the body reads it."""
        binding = self.binding_before(name, place)
        if binding is None:
            dtype = self.scalar_dtype(name)
            return (name, dtype) if dtype is not None and dtype not in grammar.DIM_DTYPES else None
        read = (node.name for node in own_nodes(binding.value) if isinstance(node, NameExpr))
        return next((found for found in (self.no_dim_scalar(n, _place(binding.statement)) for n in read) if found), None)

    def find_dims_read(self, name: str, place: tuple[int, int]) -> frozenset[str]:
        """The declared dims the body's bindings of `name` before `place` (line, column) read, through other bindings
        too: a size per call of such a name (`L = N * 2 if flag else N`, `L += 1`) may be how a call determines them,
        as the runtime reads it per call (so none of them is reported undetermined)."""
        found: set[str] = set()
        for binding in self.bindings.get(name, []):
            if _place(binding.statement) >= place:
                continue
            for read in {node.name for node in own_nodes(binding.value) if isinstance(node, NameExpr)}:
                resolved = self.resolve_dim(read)
                if resolved is not None:
                    found.update(set(dim_grammar.symbols(resolved)) & set(self.dims))
                else:
                    found |= self.dims_read(read, _place(binding.statement))
        return frozenset(found)

    def scalar_dtype(self, name: str) -> str | None:
        """The dtype of a parameter annotated as a scalar of the kernel language (`M: T.int8`: "int8"), in the
        signature or the body, if it is one."""
        annotation = self.body_annotations[name][0] if name in self.body_annotations else next(
            (argument.type_annotation for argument in self.func.arguments if argument.variable.name == name), None)
        if isinstance(annotation, UnboundType) and not annotation.args:
            language, _, dtype = annotation.name.rpartition(".")
            if language in self.found.language and dtype in dtypes.BY_NAME:
                return dtype
        return None

    def body_int(self, name: str) -> int | None:
        """The int a name of the body stands for where it is read (`block = 64`, then `[M, block]`): one the body
        binds once, by an assignment of an int literal in force there, as the runtime's prelude runs it; None for
        any other name."""
        bindings = self.bindings.get(name, [])
        value = bindings[0].value if len(bindings) == 1 and _place(bindings[0].statement) < self.place else None
        return value.value if isinstance(value, IntExpr) else None

    def is_per_call(self, name: str) -> bool:
        """A name whose value each call gives, so a dim it is in is unknown statically: a const or scalar
        parameter (`def gemm(A, B, M, N, K)`), a name the body computes from them (`head_kv = heads // groups`),
        or the factory's around the kernel."""
        return name in self.params or name in self.bindings or name in self.closure

    def is_module_name(self, name: str) -> bool:
        """A name the module's own scope binds (an import, an assignment), which the runtime reads at decoration;
        not a TypeVar, which is no size to the runtime (an in-body dim is declared in the body)."""
        return (self.found.top_level is None or name in self.found.top_level) and name not in self.found.typevars

    def expression_dim(self, typ: Type) -> Type:
        """A dim written as an expression (`N * 2`), read back from the source."""
        candidates = self.source.span(typ.line, typ.column, typ.end_line, typ.end_column)
        if not candidates:
            self.fail(typ.line, typ.column, "Cannot read this dim: write it on one line", codes.DIM)
            return AnyType(TypeOfAny.from_error, line=typ.line, column=typ.column)
        problem = ""
        for text in candidates:
            unknown: set[str] = set()
            try:
                normalised = dim_grammar.normalise_source(text, functools.partial(self.resolve_in_expression, unknown))
            except UndeclaredDim as exc:
                problem = problem or grammar.undeclared_dim(exc.name)
                continue
            except DimSyntaxError as exc:
                problem = problem or str(exc)
                continue
            if unknown:  # `n * 4`, `T.ceildiv(N, block)`: a size known per call (or at decoration), as at run time;
                # its dims may be what a call determines
                self.determined.update(set(dim_grammar.symbols(normalised)) & set(self.dims))
                if all("." in name and not self.is_per_call(_head(name)) for name in unknown):
                    # `consts.WIDTH * 2`, `N * Cfg.WIDTH`: values of other modules or classes, which the annotation
                    # hook reads as it reads one written alone as a dim (a dotted name is never the kernel's dim)
                    return derived_dim(normalised, typ.line, typ.column)
                return AnyType(TypeOfAny.special_form, line=typ.line, column=typ.column)
            if normalised.isdigit():
                return RawExpressionType(int(normalised), "builtins.int", typ.line, typ.column)
            if normalised in self.dims:
                self.plain_dims.add(normalised)
                return UnboundType(normalised, line=typ.line, column=typ.column)
            if normalised in self.found.typevars:  # `A.shape[1]` of `A: tl.Tensor[dt, M, K]`: the signature's K
                return UnboundType(normalised, line=typ.line, column=typ.column)
            return self.derived(normalised, typ.line, typ.column)
        self.fail(typ.line, typ.column, codes.sentence(problem), codes.DIM)
        return AnyType(TypeOfAny.from_error, line=typ.line, column=typ.column)

    def derived(self, normalised: str, line: int, column: int) -> Type:
        """A derived dim, written inline (`[N * 4]`) or through a name (`L = N * 4`, `[L]`): an affine one is how a
        call's size gives its dim, as at run time."""
        affine = dim_grammar.affine(normalised)
        if affine is not None and affine[0] in self.dims:
            self.determined.add(affine[0])
        return derived_dim(normalised, line, column)

    def resolve_in_expression(self, unknown: set[str], name: str) -> str | None:
        """`resolve_dim` inside a dim expression, where the names `body_dim` reads also count: a module's int
        literal is its value; a name whose value is known only per call or to the runtime (`is_per_call`,
        `is_module_name`) is kept and added to `unknown`. A dotted name (`consts.WIDTH`, `cfg.block`) is read by
        the name it starts with, as `body_dim` reads one written alone."""
        resolved = self.resolve_dim(name)
        if resolved is not None:
            return resolved
        module_int = None if self.is_per_call(_head(name)) else self.module_int(name)
        if module_int is not None:
            return str(module_int)
        if self.is_per_call(_head(name)) or self.is_module_name(_head(name)):
            unknown.add(name)
            return name
        return None

    # -- the new signature ---------------------------------------------------------------------------

    def rebuild_type(self, moved: bool) -> None:
        func = self.func
        ret = written_return(func)
        if ret is not None:
            ret = self.signature_annotation(ret)
        unannotated = any(arg.type_annotation is None for arg in func.arguments)
        if not (moved or self.dims or unannotated or ret is None or self.signature_changed):
            return
        if self.dims:
            # Once a function has PEP 695 type parameters mypy wants all of them declared, so the
            # signature's TypeVar dims (`A: tl.Tensor[tl.float16, N]` beside `M = T.const("M")`) join.
            declared = [*self.signature_dims, *self.dims]
            func.type_args = [
                *(func.type_args or []),
                *(TypeParam(name, TYPE_VAR_KIND, None, [], None) for name in declared),
            ]
        arg_types: list[Type] = [
            # An unannotated kernel parameter is a const: any hashable value, checked at call sites.
            arg.type_annotation if arg.type_annotation is not None else AnyType(TypeOfAny.explicit)
            for arg in func.arguments
        ]
        returns = ret if ret is not None else inferred_return(func, self.found, self.resolve_dim, self.resolve_dtype)
        typ = CallableType(
            arg_types,
            [arg.kind for arg in func.arguments],
            [None if arg.pos_only else arg.variable.name for arg in func.arguments],
            returns,
            func.unanalyzed_type.fallback if isinstance(func.unanalyzed_type, CallableType) else Instance(MISSING_FALLBACK, []),
        )
        typ.set_line(func)
        typ.definition = func
        func.type = typ
        func.unanalyzed_type = typ.copy_modified()


_LITERALS = ("Literal", "typing.Literal", "typing_extensions.Literal")
"""How an annotation spells `Literal[64]`, a size."""


def _place(stmt: Statement) -> tuple[int, int]:
    """Where a statement is in the module: its line and column, which order the statements of one line."""
    return stmt.line, stmt.column


class Standing(NamedTuple):
    """The names as they stand at a place (line, column) of the body: its aliases, declared dims bound again,
    and tensors' sizes (as `KernelRewrite` keeps them)."""

    place: tuple[int, int]
    aliases: dict[str, str]
    rebound_dims: set[str]
    shapes: dict[str, tuple[str | None, ...] | None]


def _indexed_item(value: Expression | Statement | None, index: int) -> Expression | None:
    """The item a constant index picks of a tuple or list written in source (`(M, N)`, 1: N); None for another
    value (None: none), one with a starred item, or an index past its ends."""
    items = value.items if isinstance(value, (TupleExpr, ListExpr)) else []
    if not -len(items) <= index < len(items) or any(isinstance(item, StarExpr) for item in items):
        return None
    return items[index]


def _written_dim(item: Expression) -> Type:
    """An item of a tuple the body writes (`N` of `shape = (M, N)`) as an annotation's dim written at its place:
    a name, an int literal, or an expression whose text the rewrite reads there."""
    if isinstance(item, NameExpr):
        return UnboundType(item.name, line=item.line, column=item.column)
    if isinstance(item, IntExpr):
        return RawExpressionType(item.value, "builtins.int", line=item.line, column=item.column)
    expression = RawExpressionType(None, "builtins.str", line=item.line, column=item.column)
    expression.end_line, expression.end_column = item.end_line, item.end_column
    return expression


class Binding(NamedTuple):
    """A name's binding by a top-level statement of the body: an assignment (`K = M * 2`: the value `M * 2`), one
    item of a tuple assigned item by item (`K, L = M * 2, 4`: `M * 2`), or another statement binding it (`K += 1`,
    an `if` or a loop, a walrus: the statement itself), whose value only a call gives."""

    statement: Statement
    value: Expression | Statement

    @property
    def read(self) -> bool:
        """Whether the plugin reads the value (an assignment's or a tuple item's), not only that it is bound."""
        return self.value is not self.statement


def derived_dim(text: str, line: int, column: int) -> Type:
    """A derived dim as the annotation hook reads it: its expression as a string (dimexpr.py)."""
    return RawExpressionType(text, "builtins.str", line, column)


def _head(name: str) -> str:
    """The name a dotted name or an item starts with (`consts` of `consts.WIDTH`, `shape` of `shape[1]`), the name
    itself for a plain one."""
    return name.partition(".")[0].partition("[")[0]


def _is_bare_name(typ: Type) -> bool:
    return isinstance(typ, UnboundType) and not typ.args and "." not in typ.name and typ.original_str_expr is None


def _is_dotted_name(typ: Type) -> bool:
    return isinstance(typ, UnboundType) and not typ.args and "." in typ.name and typ.original_str_expr is None


def _dim_list(first: Type) -> Type:
    """A Tensor's first argument, with TileLang's dims in a tuple (`T.Tensor[(M, N), dtype]`) as a dim list."""
    if isinstance(first, TupleType) and first.implicit:
        return TypeList(first.items, line=first.line, column=first.column)
    return first


def written_tensor_parts(typ: UnboundType) -> tuple[Type | None, list[Type]]:
    """(dtype, dims) of an unanalysed `Tensor[dtype, *dims]`, `Tensor[[dims], dtype]` or `Tensor[(dims), dtype]`."""
    if not typ.args:
        return None, []
    first = _dim_list(typ.args[0])
    if isinstance(first, TypeList):
        return (typ.args[1] if len(typ.args) > 1 else None), list(first.items)
    return first, list(typ.args[1:])


def written_return(func: FuncDef) -> Type | None:
    """The return annotation the source writes; None where it writes none."""
    ret = func.unanalyzed_type.ret_type if isinstance(func.unanalyzed_type, CallableType) else None
    return None if isinstance(ret, AnyType) and ret.type_of_any == TypeOfAny.unannotated else ret
