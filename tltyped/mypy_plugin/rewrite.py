"""The in-body form, desugared on the parsed AST before semantic analysis.

mypy reads `A: T.Tensor[[M, K], T.float16]` in a body as a redefinition of
the parameter `A` (`no-redef`), and knows nothing of `M, K = T.const("M, K")`.
Runtime and plugin agree on one reading (tltyped.frontend.analyze does the
same at decoration): each in-body annotation of a parameter becomes that
parameter's type, and each `T.const` / `T.dynamic` name becomes a dim the
annotations may use. Statically a dim is a PEP 695 type parameter of the
kernel, so callers see `def [M, K, N] (A: Tensor[float16, M, K], ...)` and
dims unify across a call's arguments like any type variable.

This runs in `get_additional_deps`, the one hook that sees a module's AST
before names are bound. Problems found here cannot be reported yet (no
error-reporting API exists at this point); they are kept as `Diagnostic`s
with their lines and reported when the kernel's decorator is type-checked,
which every fresh check of the module does.

Also done here, for every module that defines kernels:
- `@tl.jit` becomes `@tl.jit()`: the same decorator, but applying it is then
  a plain (not overloaded) call, so the plugin's definition checks run in a
  call mypy does not evaluate speculatively (see plugin.py);
- `import tilelang.language as T` is read as a typed view of TileLang's
  language (`tltyped.mypy_plugin.tilelang_language`), since TileLang ships no
  type information; tltyped's own `tltyped.language` needs no such help.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mypy.errorcodes import ErrorCode
from mypy.nodes import (
    MISSING_FALLBACK,
    TYPE_VAR_KIND,
    AssignmentStmt,
    CallExpr,
    Decorator,
    Expression,
    FuncDef,
    Import,
    ImportAll,
    ImportBase,
    ImportFrom,
    IntExpr,
    ListExpr,
    MemberExpr,
    MypyFile,
    NameExpr,
    ReturnStmt,
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

from tltyped.mypy_plugin import dimexpr, names
from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin.walk import own_nodes
from tltyped.mypy_plugin.source import (
    ModuleNames,
    called_name,
    decorated_functions,
    dotted_name,
    jit_decorator,
    bound_names,
    module_names,
    target_names,
)

_DEPENDENCY_PRIORITY = 10  # mypy.build.PRI_MED, what mypy gives a top-level `import X`


@dataclass(frozen=True)
class Diagnostic:
    """A problem in a kernel definition, reported when the kernel is type-checked."""

    line: int
    column: int
    message: str
    code: ErrorCode


@dataclass
class KernelRecord:
    """What the rewrite learnt about one kernel."""

    func: FuncDef
    diagnostics: list[Diagnostic] = field(default_factory=list)
    dims: dict[str, bool] = field(default_factory=dict)  # declared in the body -> is it dyn


class SourceText:
    """A module's source lines, read when a dim expression must be recovered.

    mypy's parser keeps `[N * 2]` inside an annotation only as "some
    expression" with its position; the text at that position is the dim.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._lines: list[str] | None = None

    def span(self, line: int, column: int, end_line: int | None, end_column: int | None) -> str | None:
        if end_line is None or end_column is None or end_line != line or line < 1 or column < 0:
            return None
        if self._lines is None:
            try:
                with open(self.path, encoding="utf-8") as source:
                    self._lines = source.read().splitlines()
            except OSError:
                self._lines = []
        if line > len(self._lines):
            return None
        return self._lines[line - 1][column:end_column]


def rewrite_module(
    file: MypyFile, done: Mapping[int, KernelRecord]
) -> tuple[list[tuple[int, str, int]], list[KernelRecord]]:
    """Rewrite the module's kernels in place; return the extra dependencies and the new records.

    `done` holds the kernels already rewritten (by `id` of their FuncDef): a
    daemon may hand the same, already rewritten, tree over again.
    """
    found = module_names(file)
    if not found.jit:
        return [], []
    source = SourceText(file.path)
    module_bound = bound_names(file)
    records = []
    for decorator in decorated_functions(file):
        index = jit_decorator(decorator, found)
        if index is None or id(decorator.func) in done:
            continue
        _call_decorator(decorator, index)
        records.append(KernelRewrite(decorator.func, found, source, module_bound).run())
    dependencies: list[tuple[int, str, int]] = []
    if records and found.tilelang_imports:
        for imp in found.tilelang_imports:
            _redirect_tilelang(imp)
        dependencies.append((_DEPENDENCY_PRIORITY, names.TILELANG_VIEW, found.tilelang_imports[0].line))
    return dependencies, records


def _call_decorator(decorator: Decorator, index: int) -> None:
    """`@tl.jit` -> `@tl.jit()`: equal at run time and to a type checker (see module docstring)."""
    expr = decorator.decorators[index]
    if isinstance(expr, CallExpr):
        return
    call = CallExpr(expr, [], [], [])
    call.set_line(expr)
    decorator.decorators[index] = call
    if index < len(decorator.original_decorators) and decorator.original_decorators[index] is expr:
        decorator.original_decorators[index] = call


def _redirect_tilelang(imp: ImportBase) -> None:
    if isinstance(imp, Import):
        imp.ids = [(names.TILELANG_VIEW if module == names.TILELANG_LANGUAGE else module, alias) for module, alias in imp.ids]
    elif isinstance(imp, ImportFrom) and imp.id == "tilelang":
        (name, alias), = imp.names
        imp.id, imp.names = names.TILELANG_VIEW.rpartition(".")[0], [("tilelang_language", alias or name)]
    elif isinstance(imp, (ImportFrom, ImportAll)):
        imp.id = names.TILELANG_VIEW


class KernelRewrite:
    """Desugar one kernel: in-body annotations, dim declarations, missing annotations."""

    def __init__(self, func: FuncDef, found: ModuleNames, source: SourceText, module_bound: set[str] | None) -> None:
        self.func = func
        self.found = found
        self.source = source
        self.module_bound = module_bound  # names bound anywhere in the module; None if unknowable
        self.params = {arg.variable.name for arg in func.arguments}
        self.record = KernelRecord(func)
        self.dim_lines: dict[str, int] = {}
        self.aliases: dict[str, str] = {}  # a name bound to an expression of dims -> its text
        self.plain_dims: set[str] = set()  # dims some tensor annotation binds directly
        self.signature_dims: list[str] = []  # TypeVar dims of annotations written in the signature
        self.replaced_dims = False  # a signature annotation lost a never-declared dim

    @property
    def dims(self) -> dict[str, bool]:
        return self.record.dims

    def fail(self, line: int, column: int, message: str, code: ErrorCode) -> None:
        self.record.diagnostics.append(Diagnostic(line, column, message, code))

    def run(self) -> KernelRecord:
        annotations = self.scan_body()
        moved = self.move_annotations(annotations)
        for dim, line in self.dim_lines.items():
            if dim not in self.plain_dims:
                self.fail(
                    line, 0,
                    f'Dim "{dim}" is declared but no tensor has it as a plain dim, so a call cannot determine it',
                    codes.DIM,
                )
        self.rebuild_type(moved)
        return self.record

    # -- reading the body --------------------------------------------------------------

    def scan_body(self) -> dict[str, tuple[Type, int]]:
        """Collect dims, derived names and in-body annotations; drop the annotation statements."""
        annotations: dict[str, tuple[Type, int]] = {}
        kept: list[Statement] = []
        for stmt in self.func.body.body:
            annotated = self.parameter_annotation(stmt)
            if annotated is not None:
                name, typ = annotated
                if name in annotations:
                    self.fail(stmt.line, stmt.column, f'Parameter "{name}" is annotated twice in the body', codes.KERNEL)
                else:
                    annotations[name] = (typ, stmt.line)
                continue
            kept.append(stmt)
            if isinstance(stmt, AssignmentStmt) and len(stmt.lvalues) == 1 and stmt.type is None:
                self.read_assignment(stmt)
        self.func.body.body = kept
        return annotations

    def parameter_annotation(self, stmt: Statement) -> tuple[str, Type] | None:
        if not (isinstance(stmt, AssignmentStmt) and len(stmt.lvalues) == 1):
            return None
        target = stmt.lvalues[0]
        typ = stmt.unanalyzed_type or stmt.type
        if typ is None or not (isinstance(stmt.rvalue, TempNode) and stmt.rvalue.no_rhs):
            return None
        if isinstance(target, NameExpr) and target.name in self.params:
            return target.name, typ
        return None

    def read_assignment(self, stmt: AssignmentStmt) -> None:
        targets = target_names(stmt.lvalues[0])
        value = stmt.rvalue
        if targets is None:
            return
        if isinstance(value, CallExpr) and called_name(value) in names.DIM_DECLARATION_CALLS:
            self.declare_dims(stmt, value, targets)
        elif len(targets) == 1 and targets[0] not in self.params:
            self.declare_alias(targets[0], value)

    def declare_dims(self, stmt: AssignmentStmt, call: CallExpr, targets: list[str]) -> None:
        spelled = dotted_name(call.callee) or called_name(call) or "T.const"
        is_dyn = called_name(call) == "dynamic"
        report_unbound = True  # not after a malformed declaration: one error is enough
        if not call.args or not isinstance(call.args[0], StrExpr):
            self.fail(stmt.line, stmt.column, f"{spelled}() takes the dim names as a string literal", codes.DIM)
            declared = targets
            report_unbound = False
        else:
            text = call.args[0].value
            declared = [n for n in text.replace(",", " ").split() if n]
            if declared != targets:
                self.fail(
                    stmt.line, stmt.column,
                    f'{spelled}("{text}") declares {", ".join(declared) or "no dims"} but assigns to '
                    f"{', '.join(targets)}; use the same names in the same order",
                    codes.DIM,
                )
                declared = targets
                report_unbound = False
        for name in declared:
            if name in self.dims:
                self.fail(stmt.line, stmt.column, f'Dim "{name}" is declared twice', codes.DIM)
                continue
            self.dims[name] = is_dyn
            if report_unbound:
                self.dim_lines[name] = stmt.line

    def declare_alias(self, name: str, value: Expression) -> None:
        """`M = N * 2 + 1`: a name for an expression of dims, usable in annotations."""
        try:
            source = dimexpr.source_of(value)
            if not dimexpr.symbols_in_source(source) & (set(self.dims) | set(self.aliases)):
                return
            self.aliases[name] = dimexpr.normalise(source, self.resolve_dim)
        except dimexpr.DimExpressionError:
            self.aliases.pop(name, None)

    def resolve_dim(self, name: str) -> str | None:
        if name in self.dims:
            return name
        return self.aliases.get(name)

    # -- annotations -----------------------------------------------------------------------

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
                self.fail(
                    line, 0, f'Parameter "{name}" is annotated both in the signature and in the body', codes.KERNEL
                )
                continue
            arg.type_annotation = self.translate(typ)
            moved = True
        return moved

    def signature_annotation(self, typ: Type) -> Type:
        """A signature annotation, its never-declared dims reported (as in the body) and made Any.

        mypy would only say `Name "Q" is not defined`; a dim is declared by a
        TypeVar (or, beside in-body annotations, T.const / T.dynamic).
        """
        self.note_plain_dims(typ)
        if not (isinstance(typ, UnboundType) and _is_tensor_spelling(typ.name) and typ.args) or self.module_bound is None:
            return typ
        first = typ.args[0]
        if isinstance(first, TypeList):
            dims = TypeList([self.declared_or_any(d) for d in first.items], line=first.line, column=first.column)
            return typ.copy_modified(args=[dims, *typ.args[1:]])
        return typ.copy_modified(args=[first, *(self.declared_or_any(d) for d in typ.args[1:])])

    def declared_or_any(self, dim: Type) -> Type:
        if not (isinstance(dim, UnboundType) and not dim.args and "." not in dim.name and dim.original_str_expr is None):
            return dim
        if self.module_bound is None or dim.name in self.module_bound or dim.name in self.dims:
            return dim
        self.fail(
            dim.line, dim.column,
            f'Dim "{dim.name}" is used but never declared; declare it with {dim.name} = TypeVar("{dim.name}")',
            codes.DIM,
        )
        self.replaced_dims = True
        return AnyType(TypeOfAny.from_error, line=dim.line, column=dim.column)

    def note_plain_dims(self, typ: Type) -> None:
        """Dims a signature annotation binds: declared ones, and TypeVars (a dim must be one)."""
        if isinstance(typ, UnboundType) and _is_tensor_spelling(typ.name):
            for dim in _tensor_parts(typ)[1]:
                if not (isinstance(dim, UnboundType) and not dim.args and "." not in dim.name):
                    continue
                if dim.name in self.dims:
                    self.plain_dims.add(dim.name)
                elif dim.name not in self.signature_dims:
                    self.signature_dims.append(dim.name)
        elif isinstance(typ, UnboundType):
            for arg in typ.args:
                self.note_plain_dims(arg)

    def translate(self, typ: Type) -> Type:
        if not (isinstance(typ, UnboundType) and _is_tensor_spelling(typ.name) and typ.args):
            return typ
        first = typ.args[0]
        if isinstance(first, TypeList):
            dims = TypeList([self.dim(d) for d in first.items], line=first.line, column=first.column)
            return typ.copy_modified(args=[dims, *(self.dtype(a) for a in typ.args[1:])])
        return typ.copy_modified(args=[self.dtype(first), *(self.dim(d) for d in typ.args[1:])])

    def dtype(self, typ: Type) -> Type:
        """A dtype naming a const parameter (`out_dtype`) is known per call only: Any here."""
        if isinstance(typ, UnboundType) and not typ.args and typ.name in self.params:
            return AnyType(TypeOfAny.special_form, line=typ.line, column=typ.column)
        return typ

    def dim(self, typ: Type) -> Type:
        if isinstance(typ, UnboundType) and not typ.args and "." not in typ.name and typ.original_str_expr is None:
            if typ.name in self.dims:
                self.plain_dims.add(typ.name)
                return typ
            if typ.name in self.aliases:
                return _derived(self.aliases[typ.name], typ)
            self.fail(
                typ.line, typ.column,
                f'Dim "{typ.name}" is used but never declared; declare it with '
                f'T.const("{typ.name}") or T.dynamic("{typ.name}")',
                codes.DIM,
            )
            return AnyType(TypeOfAny.from_error, line=typ.line, column=typ.column)
        if isinstance(typ, RawExpressionType) and isinstance(typ.literal_value, int):
            return typ
        if isinstance(typ, UnboundType) and typ.name in ("Literal", "typing.Literal", "typing_extensions.Literal"):
            return typ
        text = self.source.span(typ.line, typ.column, typ.end_line, typ.end_column)
        if text is None:
            self.fail(typ.line, typ.column, "Cannot read this dim: write it on one line", codes.DIM)
            return AnyType(TypeOfAny.from_error, line=typ.line, column=typ.column)
        try:
            normalised = dimexpr.normalise(text, self.resolve_dim)
        except dimexpr.DimExpressionError as exc:
            message = str(exc)
            self.fail(typ.line, typ.column, message[:1].upper() + message[1:], codes.DIM)
            return AnyType(TypeOfAny.from_error, line=typ.line, column=typ.column)
        if normalised.isdigit():
            return RawExpressionType(int(normalised), "builtins.int", typ.line, typ.column)
        if normalised in self.dims:
            self.plain_dims.add(normalised)
            return UnboundType(normalised, line=typ.line, column=typ.column)
        return _derived(normalised, typ)

    # -- the new signature -------------------------------------------------------------------

    def rebuild_type(self, moved: bool) -> None:
        func = self.func
        old = func.unanalyzed_type if isinstance(func.unanalyzed_type, CallableType) else None
        ret = old.ret_type if old is not None else None
        if ret is not None and _is_unannotated(ret):
            ret = None
        if ret is not None:
            ret = self.signature_annotation(ret)
        unannotated = any(arg.type_annotation is None for arg in func.arguments)
        if not (moved or self.dims or unannotated or ret is None or self.replaced_dims):
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
            arg.type_annotation if arg.type_annotation is not None else _const_parameter_type()
            for arg in func.arguments
        ]
        typ = CallableType(
            arg_types,
            [arg.kind for arg in func.arguments],
            [None if arg.pos_only else arg.variable.name for arg in func.arguments],
            ret if ret is not None else self.inferred_return(),
            old.fallback if old is not None else Instance(MISSING_FALLBACK, []),
        )
        typ.set_line(func)
        typ.definition = func
        func.type = typ
        func.unanalyzed_type = typ.copy_modified()

    def inferred_return(self) -> Type:
        """The return type a kernel without one states: its returned output tensors, or None."""
        returns, outputs = _returns_and_outputs(self.func)
        returned = next((r.expr for r in returns if r.expr is not None), None)
        if returned is None:
            return UnboundType("None", line=self.func.line)
        items = returned.items if isinstance(returned, TupleExpr) else [returned]
        types = [self.returned_type(item, outputs) for item in items]
        if isinstance(returned, TupleExpr):
            return TupleType(types, Instance(MISSING_FALLBACK, []), line=returned.line)
        return types[0]

    def returned_type(self, expr: Expression, outputs: dict[str, CallExpr]) -> Type:
        unknown = AnyType(TypeOfAny.explicit, line=expr.line)
        if not isinstance(expr, NameExpr):
            return unknown
        for arg in self.func.arguments:
            if arg.variable.name == expr.name and arg.type_annotation is not None:
                return arg.type_annotation
        call = outputs.get(expr.name)
        tensor = self.found.tensor_spelling()
        if call is None or tensor is None:
            return unknown
        dims, dtype = _output_shape_and_dtype(call)
        if dims is None:
            return unknown
        dtype_type: Type
        spelled = None if dtype is None else dotted_name(dtype)
        if dtype is None:
            default = self.found.dtype_spelling("float32")
            dtype_type = UnboundType(default) if default is not None else unknown
        elif spelled is not None and spelled not in self.params:
            dtype_type = UnboundType(spelled, line=dtype.line, column=dtype.column)
        else:
            dtype_type = AnyType(TypeOfAny.special_form)
        return UnboundType(tensor, [dtype_type, *(self.output_dim(d) for d in dims)], line=expr.line)

    def output_dim(self, expr: Expression) -> Type:
        try:
            text = dimexpr.normalise(dimexpr.source_of(expr), self.resolve_dim)
        except dimexpr.DimExpressionError:
            return AnyType(TypeOfAny.special_form)
        if text.isdigit():
            return RawExpressionType(int(text), "builtins.int", expr.line, expr.column)
        if text in self.dims:
            return UnboundType(text, line=expr.line, column=expr.column)
        return RawExpressionType(text, "builtins.str", expr.line, expr.column)


def _returns_and_outputs(func: FuncDef) -> tuple[list[ReturnStmt], dict[str, CallExpr]]:
    """The kernel's own `return`s, and its names bound to `T.empty(...)` / `T.alloc_global(...)`."""
    returns: list[ReturnStmt] = []
    outputs: dict[str, CallExpr] = {}
    for node in own_nodes(func.body):
        if isinstance(node, ReturnStmt):
            returns.append(node)
        elif isinstance(node, AssignmentStmt) and len(node.lvalues) == 1 and isinstance(node.lvalues[0], NameExpr):
            if isinstance(node.rvalue, CallExpr) and called_name(node.rvalue) in names.OUTPUT_CALLS:
                outputs[node.lvalues[0].name] = node.rvalue
    return returns, outputs


def _output_shape_and_dtype(call: CallExpr) -> tuple[list[Expression] | None, Expression | None]:
    """Dims and dtype of `T.empty((M, N), dtype)`, or TileLang's `T.empty(M, N, dtype=...)`."""
    positional = [a for a, n in zip(call.args, call.arg_names) if n is None]
    dtype = next((a for a, n in zip(call.args, call.arg_names) if n == "dtype"), None)
    if positional and isinstance(positional[0], (TupleExpr, ListExpr)):
        if dtype is None and len(positional) > 1:
            dtype = positional[1]
        return list(positional[0].items), dtype
    if all(isinstance(a, (NameExpr, IntExpr)) for a in positional) and positional:
        return positional, dtype
    return None, dtype


def _const_parameter_type() -> Type:
    """An unannotated kernel parameter is a const: any hashable value, checked at call sites."""
    return AnyType(TypeOfAny.explicit)


def _derived(text: str, where: Type) -> Type:
    return RawExpressionType(text, "builtins.str", where.line, where.column)


def _is_unannotated(typ: Type) -> bool:
    return isinstance(typ, AnyType) and typ.type_of_any == TypeOfAny.unannotated


def _is_tensor_spelling(name: str) -> bool:
    return name == "Tensor" or name.endswith(".Tensor")


def _tensor_parts(typ: UnboundType) -> tuple[Type | None, list[Type]]:
    """(dtype, dims) of an unanalysed `Tensor[dtype, *dims]` or `Tensor[[dims], dtype]`."""
    if not typ.args:
        return None, []
    first = typ.args[0]
    if isinstance(first, TypeList):
        return (typ.args[1] if len(typ.args) > 1 else None), list(first.items)
    return first, list(typ.args[1:])
