"""A kernel body's names as they stand at each place: the reader's state, and the questions asked of it.

`BodyNames` holds what reading a kernel's body (body_reader.py) learns, statement by statement: declared dims
and their variables bound again since, names of dim expressions (aliases), each name's top-level bindings, the
annotated tensors' sizes, and a `Standing` snapshot of them before each statement. It answers what a name is at
a place, as the runtime's prelude runs the body there (frontend/prelude.py): a dim's text (`resolve_dim`), a
dtype (`named_dtype`), an int (`body_int`), a tuple's item (`body_item`), a value each call gives
(`is_per_call`). Both the reading and the writing of the signature (in_body.py) ask these, so they live apart
from either.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

from mypy.errorcodes import ErrorCode
from mypy.nodes import (
    AssignmentStmt,
    ConditionalExpr,
    Expression,
    FuncDef,
    IntExpr,
    ListExpr,
    NameExpr,
    StarExpr,
    Statement,
    TupleExpr,
)
from mypy.types import AnyType, RawExpressionType, Type, TypeOfAny, UnboundType

from tltyped.errors import DimSyntaxError
from tltyped.mypy_plugin.dtype_params import parameter_dtype
from tltyped.mypy_plugin.kernel_record import Diagnostic, KernelRecord
from tltyped.mypy_plugin.parsed import ModuleNames
from tltyped.mypy_plugin.source_text import SourceText
from tltyped.mypy_plugin.walk import own_nodes
from tltyped.mypy_plugin.written import head_name, is_bare_name, written_return, written_tensor_parts
from tltyped.types import dim_grammar, dtypes, in_body_grammar as grammar


class BodyNames:
    """A kernel body's names as read so far, and what each stands for at a place."""

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
        # the place being read (a statement's, as `statement_place` gives it), and how the names stood at each
        # top-level statement so far, before it ran: a dim is read with the names as they stand at its own place (`standing_at`)
        self.place = statement_place(func)
        self.standings: list[Standing] = []
        # what a name's bindings before a place read, once per (name, place): a body's names may read each other's
        # earlier values many times over (`a = a + b`, `b = b + a`, ...), exponentially many paths unmemoised
        self.no_dim_scalar = functools.cache(self.find_no_dim_scalar)
        self.dims_read = functools.cache(self.find_dims_read)
        self.determined: set[str] = set()  # dims a call determines through a shape the plugin cannot read (call_form)
        # an annotation's shape is not read here (a call form's the plugin cannot read, or one refused): its dims
        # are unknown
        self.shape_unread = False
        self.body_annotations: dict[str, tuple[Type, int]] = {}  # a parameter annotated in the body -> it, its line
        self.annotated_at: dict[str, tuple[int, int]] = {}  # a parameter annotated in the body -> its statement's place

    def fail(self, line: int, column: int, message: str, code: ErrorCode) -> None:
        self.record.diagnostics.append(Diagnostic(line, column, message, code))

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

    def binding_before(self, name: str, place: tuple[int, int]) -> Binding | None:
        """The name's top-level binding in force at `place` (line, column), if the body binds it before: a
        statement's place is its line and column, so `dtype = T.float32; X: T.Tensor[[N], dtype]` reads the `dtype`
        bound before it on its line, as the runtime's prelude does."""
        return next(
            (found for found in reversed(self.bindings.get(name, [])) if statement_place(found.statement) < place), None)

    def last_assignment(self, name: str) -> AssignmentStmt | None:
        """The name's last top-level binding so far (a computed shape), if any, and if it is an assignment of its
        whole value: not `shape += (4,)` or `shape, n = (M, N), 4`, shapes the plugin does not read."""
        found = self.bindings.get(name)
        if not found or not isinstance(found[-1].statement, AssignmentStmt):
            return None
        return found[-1].statement if found[-1].value is found[-1].statement.rvalue else None

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
        tensor = head_name(name)
        if tensor in self.shapes:  # annotated before, and maybe bound again since (its sizes then per call)
            sizes = self.shapes[tensor]
            return None if sizes is None else dim_grammar.shape_sizes(tensor, sizes).get(name)
        annotated = self.body_annotations.get(tensor)  # annotated after
        if annotated is not None and name in dim_grammar.shape_sizes(tensor, self.stated_sizes(annotated[0]) or []):
            raise DimSyntaxError(grammar.sizes_not_known(tensor, f"line {annotated[1]}"))
        return None

    def stated_sizes(self, typ: Type) -> list[Type] | None:
        """The sizes a tensor annotation (`T.Tensor[[M, K], dt]`, `T.StridedTensor[...]`) states, as written; None
        for any other annotation."""
        if isinstance(typ, UnboundType) and typ.args and (
            self.found.is_tensor(typ.name) or self.found.is_strided_tensor(typ.name)
        ):
            return written_tensor_parts(typ)[1]
        return None

    def dim_text(self, typ: Type) -> str | None:
        """An annotation's dim as the dim grammar's canonical text over the names as they stand (an int, a declared
        dim, an alias's expression, an expression of them); None for one it does not read so."""
        with self.standing_at((typ.line, typ.column)):
            return self.standing_dim_text(typ)

    def standing_dim_text(self, typ: Type) -> str | None:
        """`dim_text` with the names as they stand."""
        if is_bare_name(typ):
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

    def body_int(self, name: str) -> int | None:
        """The int a name of the body stands for where it is read (`block = 64`, then `[M, block]`): one the body
        binds once, by an assignment of an int literal in force there, as the runtime's prelude runs it; None for
        any other name."""
        bindings = self.bindings.get(name, [])
        in_force = len(bindings) == 1 and statement_place(bindings[0].statement) < self.place
        value = bindings[0].value if in_force else None
        return value.value if isinstance(value, IntExpr) else None

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

    def is_per_call(self, name: str) -> bool:
        """A name whose value each call gives, so a dim it is in is unknown statically: a const or scalar
        parameter (`def gemm(A, B, M, N, K)`), a name the body computes from them (`head_kv = heads // groups`),
        or the factory's around the kernel."""
        return name in self.params or name in self.bindings or name in self.closure

    def is_module_name(self, name: str) -> bool:
        """A name the module's own scope binds (an import, an assignment), which the runtime reads at decoration;
        not a TypeVar, which is no size to the runtime (an in-body dim is declared in the body)."""
        return (self.found.top_level is None or name in self.found.top_level) and name not in self.found.typevars

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
        named = self.named_dtype(binding.value.name, *statement_place(binding.statement))
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

    def find_no_dim_scalar(self, name: str, place: tuple[int, int]) -> tuple[str, str] | None:
        """The scalar parameter of a dtype no dim has (and its dtype) that `name` is at `place` (line, column), or
        that the body's binding of `name` in force there reads, through other bindings too (`S = S * 2` reads the
        parameter S), as the runtime's slice of the body reads it."""
        binding = self.binding_before(name, place)
        if binding is None:
            dtype = self.scalar_dtype(name)
            return (name, dtype) if dtype is not None and dtype not in grammar.DIM_DTYPES else None
        read = (node.name for node in own_nodes(binding.value) if isinstance(node, NameExpr))
        bound_at = statement_place(binding.statement)
        return next((found for found in (self.no_dim_scalar(n, bound_at) for n in read) if found), None)

    def find_dims_read(self, name: str, place: tuple[int, int]) -> frozenset[str]:
        """The declared dims the body's bindings of `name` before `place` (line, column) read, through other bindings
        too: a size per call of such a name (`L = N * 2 if flag else N`, `L += 1`) may be how a call determines them,
        as the runtime reads it per call (so none of them is reported undetermined)."""
        found: set[str] = set()
        for binding in self.bindings.get(name, []):
            if statement_place(binding.statement) >= place:
                continue
            for read in {node.name for node in own_nodes(binding.value) if isinstance(node, NameExpr)}:
                resolved = self.resolve_dim(read)
                if resolved is not None:
                    found.update(set(dim_grammar.symbols(resolved)) & set(self.dims))
                else:
                    found |= self.dims_read(read, statement_place(binding.statement))
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


def statement_place(stmt: Statement) -> tuple[int, int]:
    """Where a statement is in the module: its line and column, which order the statements of one line."""
    return stmt.line, stmt.column


class Standing(NamedTuple):
    """The names as they stand at a place (line, column) of the body: its aliases, declared dims bound again,
    and tensors' sizes (as `BodyNames` keeps them)."""

    place: tuple[int, int]
    aliases: dict[str, str]
    rebound_dims: set[str]
    shapes: dict[str, tuple[str | None, ...] | None]


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

