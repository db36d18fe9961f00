"""Reading a kernel's body one top-level statement at a time, in the order the runtime's prelude runs it.

`BodyReader.scan_body` walks the body once: it takes the parameters' annotations out (`A: T.Tensor[...]`,
kept for the signature), reads dim declarations (`M = T.const("M")`), aliases (`L = N * 2`), shape reads
(`m, k = A.shape`) and every other binding, and snapshots the names before each statement (a `Standing`),
recording what the runtime refuses at decoration as it goes. What it learns is `BodyNames`' state
(body_names.py); in_body.py writes the kernel's signature from it.
"""

from __future__ import annotations

import ast

from mypy.nodes import (
    AssignmentStmt,
    CallExpr,
    Expression,
    ListExpr,
    MemberExpr,
    NameExpr,
    StarExpr,
    Statement,
    StrExpr,
    TempNode,
    TupleExpr,
)
from mypy.types import AnyType, RawExpressionType, Type, TypeList, TypeOfAny, UnboundType

from tltyped.errors import DimSyntaxError
from tltyped.mypy_plugin import call_form, dimexpr, quoted
from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin.body_names import Binding, BodyNames, Standing, statement_place
from tltyped.mypy_plugin.dtype_params import is_dtype_parameter
from tltyped.mypy_plugin.parsed import called_name, dotted_name, target_names
from tltyped.mypy_plugin.typeops import unread_annotation
from tltyped.mypy_plugin.written import LITERALS, dim_list, head_name, is_bare_name, written_tensor_parts
from tltyped.types import dim_grammar, in_body_grammar as grammar
from tltyped.types.source import (
    ShapeRead, annotated_parameter, bound_names, is_shape_relation, nested_rebinding_read, parameter_read, place_of,
    rebound_by_nested, shape_read,
)


class BodyReader(BodyNames):
    """Read one kernel's body into `BodyNames`' state, recording what the runtime refuses."""

    def scan_body(self) -> dict[str, tuple[Type, int]]:
        """Collect dims, derived names and in-body annotations; drop the annotation statements."""
        annotations = self.body_annotations
        kept: list[Statement] = []
        for stmt in self.func.body.body:
            self.place = statement_place(stmt)
            self.standings.append(Standing(self.place, dict(self.aliases), set(self.rebound_dims), dict(self.shapes)))
            parsed = self.source.statement(stmt.line, stmt.end_line, stmt.column)
            annotated = self.parameter_annotation(stmt, parsed)
            if annotated is not None:
                name, typ = annotated
                if self.reads_rebound_by_nested(parsed, stmt):
                    typ = AnyType(TypeOfAny.from_error)
                    self.shape_unread = True
                if name in annotations:
                    self.fail(stmt.line, stmt.column, f'Parameter "{name}" is annotated twice in the body', codes.KERNEL)
                else:
                    annotations[name] = (typ, stmt.line)
                    self.annotated_at[name] = statement_place(stmt)
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

    def reads_valued_parameter(self, parsed: ast.stmt | None) -> bool:
        """Whether a parameter's annotation other than a tensor form (`parsed`: as Python reads it; `B: Bt`) reads a
        parameter each call gives a value of (`m, k = A.shape; Bt = T.Tensor[[k, m], T.float16]`), by the rule the
        runtime refuses it by at decoration (`source.parameter_read`): such an annotation is read before any
        parameter's sizes or value. Reported with the runtime's message."""
        annotated = None if parsed is None else annotated_parameter(parsed, self.params)
        if parsed is None or annotated is None:
            return False
        found = parameter_read(self.statements, annotated[1], place_of(parsed), self.valued_params())
        if found is None:
            return False
        read, read_line = found
        message = grammar.computed_type_name(annotated[0], read, f"line {read_line}")
        self.fail(parsed.lineno, parsed.col_offset, codes.sentence(message), codes.ANNOTATION)
        return True

    def valued_params(self) -> set[str]:
        """The parameters each call gives the kernel a value of, as the runtime kinds them (not a const, which an
        annotation may read): those the body annotates, anywhere in it (its statements as written: `scan_body`
        drops the annotations only after reading them all), and those the signature annotates as a tensor or a
        scalar of the kernel language (`M: T.int32`). Other signature annotations (`tl.dyn[int]`, a pointer) are
        left out, so a name for a type reading one goes unreported rather than falsely reported."""
        in_body = {annotated[0] for stmt in self.func.body.body
                   if (annotated := written_annotation(stmt, self.params)) is not None}
        tensors = {arg.variable.name for arg in self.func.arguments
                   if arg.type_annotation is not None and self.stated_sizes(arg.type_annotation) is not None}
        scalars = {name for name in self.params if self.scalar_dtype(name) is not None}
        return in_body | tensors | scalars

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

    def parameter_annotation(self, stmt: Statement, parsed: ast.stmt | None) -> tuple[str, Type] | None:
        """`A: T.Tensor[...]` (no value) where `A` is a parameter: its name and annotation as read (`read_annotation`),
        each part of a quoted one (`A: "T.Tensor[...]"`) at its place in the module, where dims' text is read
        (quoted.py). `parsed` is the statement as Python reads it."""
        annotated = written_annotation(stmt, self.params)
        if annotated is None:
            return None
        assert isinstance(stmt, AssignmentStmt)  # as `written_annotation` found it
        name, typ = annotated
        placed = quoted.placed(typ, self.source.lines())  # `A: "T.Tensor[...]"`: its dims' text is in the string
        if placed is None:  # a string whose text is not the module's (an escape): unchecked, as a shape unread
            self.shape_unread = True
            return name, unread_annotation()
        return name, self.read_annotation(placed, stmt, parsed)

    def read_annotation(self, typ: Type, stmt: AssignmentStmt, parsed: ast.stmt | None) -> Type:
        """A parameter's annotation in the body (`typ`, written in `stmt`; `parsed`, as Python reads it) as the
        runtime reads it at decoration, in the order it decides:
        - a tensor form written in it is that form (`written_form`), its sizes read where it is;
        - any other annotation reading a parameter other than a const is reported (`reads_valued_parameter`), and
          unchecked (Any);
        - `B: Bt`, a name the body binds, is the tensor form Bt names where the plugin reads it
          (`named_tensor_form`), reported where its dims are the signature form's (`declares_signature_dims`),
          else unchecked (Any): the name does not exist in the signature B's annotation moves to, where mypy would
          report it undefined;
        - any other annotation is as written."""
        written = self.written_form(typ, stmt)
        if isinstance(written, AnyType) or self.stated_sizes(written) is not None:
            return written
        if self.reads_valued_parameter(parsed):
            return AnyType(TypeOfAny.from_error)
        if not (isinstance(written, UnboundType) and not written.args
                and self.binding_before(written.name, statement_place(stmt)) is not None):
            return written
        named = self.named_tensor_form(written, stmt, parsed)
        if named is None:
            self.shape_unread = True
            return unread_annotation()
        return named

    def written_form(self, typ: Type, stmt: AssignmentStmt) -> Type:
        """A tensor form as the statement writing it (`stmt`) has it, in the order and spelling the rewrite reads:
        TileLang's call form `T.Tensor((M, K), dtype)`, and `T.Tensor[(N), dtype]` (its order, a shape that is no
        list), as the subscription `T.Tensor[[M, K], dtype]` (call_form.py); any other annotation as it is."""
        if not (call_form.is_call_form(typ) or self.is_shape_first(typ)):
            return typ
        read = call_form.read(stmt, self.source.lines(), self.found, self.last_assignment, self.resolve_dim)
        if read is None:  # a shape the plugin cannot read (a module constant, a computed tuple): unchecked,
            self.shape_unread = True  # and any dim may be in it
            return unread_annotation()
        self.determined.update(read.determined)
        return read.annotation

    def named_tensor_form(self, typ: UnboundType, stmt: AssignmentStmt, parsed: ast.stmt | None) -> Type | None:
        """`B: Bt` (`B: "Bt"` too; `stmt`, and `parsed` as Python reads it) where the body's binding of Bt in force
        there assigns it a value reading no parameter (`Bt = T.Tensor[[8, 4], T.float16]`): that value as mypy would
        parse it written in B's annotation, each part at its place in the value, so that its dims are read with the
        names as they stood at Bt's assignment (`standing_at`), as the runtime's prelude evaluates it there. None
        for any other value (one reading a const the runtime refuses), one not on one line, or a tensor form of a
        size the plugin does not read written in an annotation in the body, as the names stand at its place
        (`dim_text`: an int, a dim the body declares, an expression of them, the sizes the runtime reads in such a
        name): a module's int constant leaves B unchecked rather than guessed. A form the runtime refuses for its
        signature-form dims is reported (`declares_signature_dims`), and B is Any."""
        annotated = None if parsed is None else annotated_parameter(parsed, self.params)
        binding = self.binding_before(typ.name, statement_place(stmt))
        if (parsed is None or annotated is None or binding is None or not isinstance(binding.statement, AssignmentStmt)
                or binding.value is not binding.statement.rvalue
                or parameter_read(self.statements, annotated[1], place_of(parsed), self.params) is not None):
            return None
        value = binding.value
        texts = self.source.span(value.line, value.column, value.end_line, value.end_column)
        units: tuple[type[str] | type[bytes], ...] = (str, bytes)  # how `span` reads the columns, text by text
        for unit, text in zip(units, texts):
            form = quoted.written_at(text, value.line, value.column, unit)
            if form is not None:
                read = self.written_form(form, binding.statement)
                sizes = self.stated_sizes(read)
                if sizes is None:
                    return None
                if self.declares_signature_dims(annotated[0], read, sizes, stmt):
                    self.shape_unread = True  # the sizes B is meant to have, which may hold the body's dims
                    return AnyType(TypeOfAny.from_error)
                return read if all(self.dim_text(dim) is not None for dim in sizes) else None
        return None

    def declares_signature_dims(self, param: str, typ: Type, sizes: list[Type], stmt: AssignmentStmt) -> bool:
        """Whether the tensor type a parameter's annotation names (`typ`, of sizes `sizes`: `Bt = tl.Tensor[tl.float16,
        M, K]; B: Bt` in `stmt`) declares dims of the signature form, by the rule the runtime refuses it by at
        decoration (frontend/analyze.py, reading the type as a signature annotation): in the body a dim is one the
        body declares. Only tltyped's Tensor is read so: TileLang's own types (its `T.Tensor`, `T.StridedTensor`)
        evaluate to a buffer, which such a size fails to make. Every other size must be one the plugin reads (an
        int, the body's dims), as the runtime reads them all before refusing the dims. Reported with the runtime's
        message."""
        assert isinstance(typ, UnboundType)  # as `stated_sizes` read it
        if typ.name in self.found.tilelang_tensor or self.found.is_strided_tensor(typ.name):
            return False
        declared = [self.signature_form_dim(param, axis, dim) for axis, dim in enumerate(sizes)]
        if not any(declared) or any(name is None and self.dim_text(dim) is None for name, dim in zip(declared, sizes)):
            return False
        message = grammar.type_name_declaring_dims(param, list(dict.fromkeys(name for name in declared if name)))
        self.fail(stmt.line, stmt.column, codes.sentence(message), codes.ANNOTATION)
        return True

    def signature_form_dim(self, param: str, axis: int, dim: Type) -> str | None:
        """The dim size `axis` of parameter `param`'s tensor declares where it is of the signature form, as the
        runtime names it (annotation.DimReader): a module's TypeVar (`M`), `int` or `tl.dyn[int]` (no name:
        `grammar.anonymous_dim`), `tl.dyn[int, "K"]` (`K`), each name the module's (`names_module_scope`); None for
        any other size."""
        if not isinstance(dim, UnboundType) or not self.names_module_scope(dim.name):
            return None
        if dim.name in self.found.typevars and not dim.args:
            return dim.name
        if self.is_int(dim):
            return grammar.anonymous_dim(param, axis)
        owner, _, attribute = dim.name.rpartition(".")
        if not (owner in self.found.tltyped and attribute == "dyn" and dim.args and self.is_int(dim.args[0])):
            return None
        if len(dim.args) == 1:
            return grammar.anonymous_dim(param, axis)
        named = dim.args[1]
        return named.original_str_expr if len(dim.args) == 2 and isinstance(named, UnboundType) else None

    def is_int(self, typ: Type) -> bool:
        """Whether an annotation's part is Python's `int`, a name the module leaves to the builtins."""
        return (isinstance(typ, UnboundType) and typ.name == "int" and not typ.args
                and self.found.top_level is not None and "int" not in self.found.top_level)

    def names_module_scope(self, name: str) -> bool:
        """Whether a name (its head, of a dotted one) is the module's or a builtin wherever the body reads it: not a
        parameter, a name of the factory around the kernel, or one the body binds anywhere (the runtime reads a dim
        the body declares as that dim even where read before its declaration; a name the body binds otherwise is
        left out with it, so that no binding is mistaken for the module's)."""
        head = head_name(name)
        if head in self.params or head in self.closure:
            return False
        statements = (self.source.statement(stmt.line, stmt.end_line, stmt.column) for stmt in self.func.body.body)
        return not any(head in bound_names(parsed) for parsed in statements if parsed is not None)

    def is_shape_first(self, typ: Type) -> bool:
        """`T.Tensor[x, y]` in TileLang's order, `[shape, dtype]`, with a shape that is no list (`T.Tensor[(N),
        dtype]`, a name the body binds to a shape): told from tltyped's `[dtype, dim]` by the runtime's rule, over
        what the source shows of each part's kind (the runtime also knows a parameter's value: where neither part's
        kind shows, the tensor is left unread)."""
        if not (isinstance(typ, UnboundType) and self.found.is_tensor(typ.name) and len(typ.args) == 2):
            return False
        first, second = typ.args
        if isinstance(dim_list(first), TypeList):
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
        if is_bare_name(typ):
            assert isinstance(typ, UnboundType)
            return self.resolve_dim(typ.name) is not None or typ.name in self.found.int_constants
        return self.dim_text(typ) is not None

    def annotate_sizes(self, tensor: str, typ: Type) -> None:
        """A tensor parameter's sizes as its annotation states them, which statements after it may read (`m, k =
        A.shape`, `A.shape[1]`): each the dim grammar's text over the names as they stand here, or None for one the
        rewrite does not read so (a size known per call only)."""
        sizes = self.stated_sizes(typ)
        if sizes is not None:
            self.shapes[tensor] = tuple(self.dim_text(dim) for dim in sizes)

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
        if isinstance(dim, UnboundType) and dim.name in LITERALS and len(dim.args) == 1:
            dim = dim.args[0]
        if isinstance(dim, RawExpressionType) and isinstance(dim.literal_value, int):
            return str(dim.literal_value)
        if not is_bare_name(dim):
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
        if (binding is not None and read is not None and annotated is not None
                and annotated > statement_place(binding.statement)):
            statement = binding.statement
            message = grammar.sizes_not_known(read.tensor, f"line {annotated[0]}")
            self.fail(statement.line, statement.column, codes.sentence(message), codes.DIM)

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


def written_annotation(stmt: Statement, params: set[str]) -> tuple[str, Type] | None:
    """The parameter a top-level statement of the body annotates (`A: T.Tensor[...]`, no value), as mypy parses it,
    and its annotation as written; or None."""
    if not (isinstance(stmt, AssignmentStmt) and len(stmt.lvalues) == 1
            and isinstance(stmt.rvalue, TempNode) and stmt.rvalue.no_rhs):
        return None
    target, typ = stmt.lvalues[0], stmt.unanalyzed_type or stmt.type
    if typ is None or not (isinstance(target, NameExpr) and target.name in params):
        return None
    return target.name, typ
