"""What a parsed module says about tltyped, read before semantic analysis.

The in-body rewrite runs on the raw AST, so names cannot be resolved yet: the
module's imports tell which spellings mean `tltyped.jit_function.jit` (`tl.jit`,
`jit`), which names are the kernel language (`T`), which name tltyped
itself (`tl`), and which spellings mean tltyped's Tensor (`T.Tensor`, a
`Tensor` imported by name) and the language's StridedTensor (a class of the
module's own of either name is neither); its top-level assignments tell
which names hold a decorator made by calling jit (`hopper =
tl.jit(target="sm_90a")`), which are TypeVars, and which are constants an annotation may name (an int, a dtype).
Kernels are the functions decorated with one of those jit spellings or
stored decorators, at any nesting depth, and the functions jit is applied to
by a call (`add = tl.jit(_add)`, `tl.jit(out_idx=[-1])(fn)`, `hopper(fn)`)
where the function is a plain `def` of that scope or one around it; one
defined in a function (a factory) reads that function's names from its
closure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from mypy.nodes import (
    AssignmentStmt,
    Block,
    BytesExpr,
    CallExpr,
    ClassDef,
    Decorator,
    Expression,
    FloatExpr,
    ForStmt,
    FuncDef,
    IfStmt,
    Import,
    ImportAll,
    ImportFrom,
    IntExpr,
    ListExpr,
    MatchStmt,
    MemberExpr,
    MypyFile,
    NameExpr,
    StarExpr,
    Statement,
    StrExpr,
    TupleExpr,
    TryStmt,
    WhileStmt,
    WithStmt,
)

from tltyped.mypy_plugin import names
from tltyped.mypy_plugin.source_text import SourceText
from tltyped.mypy_plugin.walk import own_nodes
from tltyped.types import dtypes, source as source_rules


@dataclass
class ModuleNames:
    """How one module spells tltyped's jit, tltyped itself and the kernel language."""

    jit: set[str] = field(default_factory=set)  # dotted spellings of tltyped.jit_function.jit
    stored_jit: dict[str, CallExpr] = field(default_factory=dict)  # top-level names bound to `tl.jit(...)`, and that call
    typevars: set[str] = field(default_factory=set)  # top-level names bound once, to `TypeVar(...)`
    other_values: set[str] = field(default_factory=set)  # top-level names bound to anything else
    # names the module's scope binds once (in its `if` and `try` blocks too), to an int literal (`HIDDEN: Final = 256`),
    # to a tuple (`SHAPE = (64, 128)`, whose items a dim may index), to a dtype (`dtype = T.float16`, by dotted name),
    # or to another literal, which names no dtype (`NAME = "floaty"`)
    int_constants: dict[str, int] = field(default_factory=dict)
    tuple_constants: dict[str, TupleExpr] = field(default_factory=dict)
    dtype_constants: dict[str, str] = field(default_factory=dict)
    no_dtype_literals: set[str] = field(default_factory=set)
    tltyped: set[str] = field(default_factory=set)  # names bound to the tltyped package
    language: set[str] = field(default_factory=set)  # names bound to a kernel-language module
    # dotted spellings of the language's prim_func beyond `<language>.prim_func` (`from ... import prim_func`, `tilelang.language.prim_func`)
    prim_func: set[str] = field(default_factory=set)
    # dotted spellings of tltyped's Tensor beyond `<tltyped or language>.Tensor` (`from ... import Tensor`, `tilelang.language.Tensor`)
    tensor: set[str] = field(default_factory=set)
    # and of the language's StridedTensor beyond `<language>.StridedTensor`
    strided_tensor: set[str] = field(default_factory=set)
    # dotted spellings of TileLang's own Tensor (`T.Tensor` after `import tilelang.language as T`): a subset of those
    # `is_tensor` reads, which the runtime reads from source where it is a kernel's signature annotation
    tilelang_tensor: set[str] = field(default_factory=set)
    postponed: bool = False  # `from __future__ import annotations`: signature annotations are not evaluated at def
    # names the module's own scope binds (imports, assignments, defs, in its blocks too); None after a star import
    top_level: set[str] | None = field(default_factory=set)

    def is_prim_func(self, decorator: Decorator) -> bool:
        """Whether one of the function's decorators is the kernel language's prim_func (bare or called)."""
        spellings = self.prim_func | {f"{language}.prim_func" for language in self.language}
        return any(dotted_name(e.callee if isinstance(e, CallExpr) else e) in spellings for e in decorator.decorators)

    def is_tensor(self, name: str) -> bool:
        """Whether a dotted name an annotation writes is tltyped's Tensor (TileLang's `T.Tensor` is read as it),
        by the module's imports: a class of the module's own named Tensor is not."""
        return name in self.tensor or name in {f"{module}.Tensor" for module in self.tltyped | self.language}

    def is_strided_tensor(self, name: str) -> bool:
        """Whether a dotted name an annotation writes is the language's StridedTensor (`T.StridedTensor`), by the
        module's imports, as `is_tensor` reads Tensor."""
        return name in self.strided_tensor or name in {f"{language}.StridedTensor" for language in self.language}

    def reads_consts(self, name: str) -> bool:
        """Whether a kernel's signature annotation spelled `name[...]` may name the kernel's consts: TileLang's own
        Tensor under postponed annotations, which the runtime reads from source as an in-body annotation
        (tltyped/frontend/analyze.py); tltyped's Tensor is evaluated, where a parameter's name is undefined."""
        return self.postponed and name in self.tilelang_tensor

    def tensor_spelling(self) -> str | None:
        """A dotted name that resolves to tltyped's Tensor in this module (`tl.Tensor`, a `Tensor` imported by
        name), if any."""
        prefixes = sorted(self.tltyped) + sorted(self.language)
        return f"{prefixes[0]}.Tensor" if prefixes else min(self.tensor, default=None)

    def written_dtype(self, value: Expression) -> str | None:
        """A dotted name for the dtype a value writes (`T.bfloat16`, or TileLang's string `"bfloat16"`), if any.

        Any attribute reads as one: the annotation hook says whether it names a dtype."""
        if isinstance(value, StrExpr):
            return self.dtype_named(value.value)
        return dotted_name(value) if isinstance(value, MemberExpr) else None

    def dtype_named(self, text: str) -> str | None:
        """A dotted name for the dtype a string names (`"float16"`, as TileLang spells dtypes), if any."""
        known = dtypes.BY_NAME.get(text)
        return None if known is None else self.dtype_spelling(known.__name__)

    def dtype_spelling(self, class_name: str) -> str | None:
        """A dotted name that resolves to one of tltyped's dtypes (`tl.float32`), if any."""
        if self.tltyped:
            return f"{min(self.tltyped)}.{class_name}"
        if self.language:
            return f"{min(self.language)}.{class_name.rstrip('_')}"
        return None


def imports_kernel_modules(file: MypyFile) -> bool:
    """Whether the module imports tltyped or TileLang at all: a cheap test before reading its tree."""
    for imp in file.imports:
        ids = [m for m, _ in imp.ids] if isinstance(imp, Import) else [imp.id] if isinstance(imp, (ImportFrom, ImportAll)) else []
        if any(m.partition(".")[0] in ("tltyped", "tilelang") for m in ids):
            return True
    return False


def module_names(file: MypyFile) -> ModuleNames:
    """Read the module's imports (the nodes in its tree: `file.imports` may hold copies) and top-level names."""
    found = ModuleNames()
    for stmt in _statements(file.defs, into_scopes=False):
        if isinstance(stmt, ImportAll) or found.top_level is None:
            found.top_level = None
        else:
            found.top_level.update(_names_bound_by(stmt))
    for imp in _statements(file.defs):
        if isinstance(imp, Import):
            _read_import(imp, found)
        elif isinstance(imp, ImportFrom) and imp.relative == 0:
            _read_import_from(imp, found)
        elif isinstance(imp, ImportAll) and imp.relative == 0:  # as if it named each name the plugin reads
            _read_import_from(ImportFrom(imp.id, 0, [(name, None) for name in _READ_BY_NAME]), found)
    for stmt in file.defs:
        if isinstance(stmt, AssignmentStmt) and len(stmt.lvalues) == 1 and isinstance(stmt.lvalues[0], NameExpr):
            _read_assignment(stmt.lvalues[0].name, stmt.rvalue, found)
    bindings = Counter(name for stmt in _statements(file.defs, into_scopes=False) for name in _names_bound_by(stmt))
    for twice in [name for name, count in bindings.items() if count > 1]:  # which value a kernel sees depends on
        found.int_constants.pop(twice, None)  # when it runs
        found.tuple_constants.pop(twice, None)
        found.dtype_constants.pop(twice, None)
        found.no_dtype_literals.discard(twice)
        found.typevars.discard(twice)
    return found


def _read_assignment(name: str, value: Expression, found: ModuleNames) -> None:
    if isinstance(value, CallExpr) and dotted_name(value.callee) in found.jit:
        found.stored_jit[name] = value
    elif called_name(value) == "TypeVar":
        found.typevars.add(name)
    else:
        _read_constant(name, value, found)
        found.other_values.add(name)


def _read_constant(name: str, value: Expression, found: ModuleNames) -> None:
    """A name bound to an int literal, a tuple or a dtype is that constant where an annotation names it, to another
    literal no dtype (`module_names` drops the names bound twice). A string naming a dtype that the module has no
    spelling for (it imports neither tltyped nor the language as a module) is neither. A list is no constant: the
    module may change it before a kernel is decorated."""
    if isinstance(value, IntExpr):
        found.int_constants[name] = value.value
    elif isinstance(value, TupleExpr):
        found.tuple_constants[name] = value
    elif (dtype := found.written_dtype(value)) is not None:
        found.dtype_constants[name] = dtype
    elif isinstance(value, (StrExpr, BytesExpr, FloatExpr)) and not (isinstance(value, StrExpr) and value.value in dtypes.BY_NAME):
        found.no_dtype_literals.add(name)


def _read_import(imp: Import, found: ModuleNames) -> None:
    for module, alias in imp.ids:
        if module == "tltyped" or (module.startswith("tltyped.") and alias is None):
            bound = alias or "tltyped"
            found.tltyped.add(bound)
            found.jit.add(f"{bound}.jit")
        if module == names.JIT_MODULE:
            found.jit.add(f"{alias}.jit" if alias else names.JIT)
        if module in (names.LANGUAGE, names.TILELANG_LANGUAGE):
            found.language.add(alias or module)
        if module in names.TENSOR_MODULES:  # `tltyped.types.Tensor`, `tt.Tensor` after `import tltyped.types as tt`
            found.tensor.add(f"{alias or module}.Tensor")
        if module == names.TILELANG_LANGUAGE:
            found.tilelang_tensor.add(f"{alias or module}.Tensor")
        if module == "tilelang":  # the language as the package's attribute: `tilelang.language.prim_func`, `.Tensor`, ...
            found.prim_func.add(f"{alias or module}.language.prim_func")
            found.tensor.add(f"{alias or module}.language.Tensor")
            found.tilelang_tensor.add(f"{alias or module}.language.Tensor")
            found.strided_tensor.add(f"{alias or module}.language.StridedTensor")


_READ_BY_NAME = ("jit", "language", "prim_func", "Tensor", "StridedTensor")
"""The names `_read_import_from` reads when a module imports them by name."""


def _read_import_from(imp: ImportFrom, found: ModuleNames) -> None:
    for name, alias in imp.names:
        bound = alias or name
        if imp.id == "tltyped" and name == "jit":
            found.jit.add(bound)
        elif imp.id == names.JIT_MODULE and name == "jit":
            found.jit.add(bound)
        elif imp.id == "tltyped" and name == "language":
            found.language.add(bound)
        elif imp.id == "tilelang" and name == "language":
            found.language.add(bound)
            found.tilelang_tensor.add(f"{bound}.Tensor")
        elif imp.id == "__future__" and name == "annotations":
            found.postponed = True
        elif imp.id in (names.LANGUAGE, names.TILELANG_LANGUAGE) and name == "prim_func":
            found.prim_func.add(bound)
        elif imp.id in names.TENSOR_MODULES and name == "Tensor":
            found.tensor.add(bound)
            if imp.id == names.TILELANG_LANGUAGE:
                found.tilelang_tensor.add(bound)
        elif imp.id in (names.LANGUAGE, names.TILELANG_LANGUAGE) and name == "StridedTensor":
            found.strided_tensor.add(bound)


def dotted_name(expr: Expression) -> str | None:
    """`tl.jit` -> "tl.jit"; None for anything but names and attribute chains."""
    if isinstance(expr, NameExpr):
        return expr.name
    if isinstance(expr, MemberExpr):
        base = dotted_name(expr.expr)
        return None if base is None else f"{base}.{expr.name}"
    return None


def jit_decorator(decorator: Decorator, found: ModuleNames) -> int | None:
    """The index of the decorator that is tltyped's jit (bare, called or stored); None if there is none."""
    for index, expr in enumerate(decorator.decorators):
        target = expr.callee if isinstance(expr, CallExpr) else expr
        if dotted_name(target) in found.jit or (isinstance(expr, NameExpr) and expr.name in found.stored_jit):
            return index
    return None


class JitApplication(NamedTuple):
    """jit applied by a call: `add = tl.jit(_add)`, `tl.jit(out_idx=[-1])(fn)` or `hopper(fn)`."""

    call: CallExpr  # the call that makes the kernel, the one whose type is the JitFunction
    func: FuncDef  # the function it makes a kernel of
    options: Expression | None  # the call of jit that gives its options (`tl.jit(out_idx=[-1])`); None: none given


def jit_applications(file: MypyFile, found: ModuleNames) -> Iterator[JitApplication]:
    """Every call applying jit to a plain `def` of its scope or of one around it, at any depth (a factory's
    `return tl.jit(kernel)` too); jit applied to anything else (a lambda, a decorated function) is not read."""

    def visit(statements: list[Statement], around: dict[str, FuncDef], bound: list[str]) -> Iterator[JitApplication]:
        """`bound`: the scope's parameters; they and the names it assigns hide the functions of the scopes around."""
        own = list(_statements(statements, into_scopes=False))
        hidden = {*bound, *(name for stmt in own if isinstance(stmt, AssignmentStmt)
                            for target in stmt.lvalues for name in target_names(target) or [])}
        scope = {name: func for name, func in around.items() if name not in hidden}
        nested = [stmt for stmt in own if isinstance(stmt, (FuncDef, Decorator))]
        scope.update((stmt.name, stmt) for stmt in nested if isinstance(stmt, FuncDef))
        for node in own_nodes(Block(statements)):
            application = _jit_application(node, found, scope) if isinstance(node, CallExpr) else None
            if application is not None:
                yield application
        for stmt in nested:
            func = stmt.func if isinstance(stmt, Decorator) else stmt
            yield from visit(func.body.body, scope, [arg.variable.name for arg in func.arguments])

    return visit(file.defs, {}, [])


def _jit_application(call: CallExpr, found: ModuleNames, functions: dict[str, FuncDef]) -> JitApplication | None:
    if len(call.args) != 1 or call.arg_names != [None] or not isinstance(call.args[0], NameExpr):
        return None
    func = functions.get(call.args[0].name)
    if func is None:
        return None
    callee = call.callee
    if dotted_name(callee) in found.jit:  # `tl.jit(fn)`
        return JitApplication(call, func, None)
    if isinstance(callee, CallExpr) and dotted_name(callee.callee) in found.jit:  # `tl.jit(out_idx=[-1])(fn)`
        return JitApplication(call, func, callee)
    if isinstance(callee, NameExpr) and callee.name in found.stored_jit:  # `hopper(fn)`
        return JitApplication(call, func, found.stored_jit[callee.name])
    return None


def defined_functions(file: MypyFile) -> Iterator[FuncDef]:
    """Every function the module defines, decorated or not, nested ones included."""
    for stmt in _statements(file.defs):
        func = _defined_function(stmt)
        if func is not None:
            yield func


def decorated_functions(file: MypyFile) -> Iterator[Decorator]:
    """Every decorated function of the module, nested ones included."""
    for stmt in _statements(file.defs):
        if isinstance(stmt, Decorator):
            yield stmt


def _statements(statements: list[Statement], *, into_scopes: bool = True) -> Iterator[Statement]:
    """Every statement, at any depth of blocks; and in functions and classes, unless `into_scopes` is false."""
    for stmt in statements:
        yield stmt
        if not into_scopes and isinstance(stmt, (Decorator, FuncDef, ClassDef)):
            continue
        if isinstance(stmt, Decorator):
            yield from _statements(stmt.func.body.body)
        elif isinstance(stmt, FuncDef):
            yield from _statements(stmt.body.body)
        elif isinstance(stmt, ClassDef):
            yield from _statements(stmt.defs.body)
        else:
            for block in _blocks(stmt):
                yield from _statements(block.body, into_scopes=into_scopes)


def _blocks(stmt: Statement) -> list[Block]:
    if isinstance(stmt, IfStmt):
        return [*stmt.body, *([stmt.else_body] if stmt.else_body else [])]
    if isinstance(stmt, (ForStmt, WhileStmt)):
        return [stmt.body, *([stmt.else_body] if stmt.else_body else [])]
    if isinstance(stmt, WithStmt):
        return [stmt.body]
    if isinstance(stmt, TryStmt):
        extra = [b for b in (stmt.else_body, stmt.finally_body) if b is not None]
        return [stmt.body, *stmt.handlers, *extra]
    if isinstance(stmt, MatchStmt):
        return list(stmt.bodies)
    if isinstance(stmt, Block):
        return [stmt]
    return []


def target_names(target: Expression) -> list[str] | None:
    if isinstance(target, NameExpr):
        return [target.name]
    if isinstance(target, (TupleExpr, ListExpr)) and all(isinstance(e, NameExpr) for e in target.items):
        return [e.name for e in target.items if isinstance(e, NameExpr)]
    return None


def called_name(call: Expression) -> str | None:
    """`T.const(...)` -> "const"; `const(...)` -> "const" (matched by name, as the runtime does)."""
    if not isinstance(call, CallExpr):
        return None
    if isinstance(call.callee, MemberExpr):
        return call.callee.name
    if isinstance(call.callee, NameExpr):
        return call.callee.name
    return None


def bound_names(file: MypyFile) -> set[str] | None:
    """Every name the module binds anywhere (assignments, imports, defs, parameters, loop targets).

    None when a star import makes that unknowable. A kernel's signature dim
    that is none of these is a name that was never declared.
    """
    found: set[str] = set()
    for stmt in _statements(file.defs):
        if isinstance(stmt, ImportAll):
            return None
        found.update(_names_bound_by(stmt))
        func = _defined_function(stmt)
        if func is not None:
            found.update(a.variable.name for a in func.arguments)
    return found


def closure_names(file: MypyFile, source: SourceText) -> dict[int, frozenset[str]]:
    """By `id` of each function defined in another: the names the functions around it bind (parameters, local
    names). A kernel a factory defines reads them from its closure, a value per call of the factory; they hide
    the module's names. A statement's names are read by the runtime's rule (`types.source.bound_names`: a walrus,
    an `except ... as`, a `match` capture bind too) over the statement as Python reads it (`source`); by its
    targets as mypy parsed them where the module's text is not the source mypy read."""
    found: dict[int, frozenset[str]] = {}

    def visit(statements: list[Statement], around: frozenset[str]) -> None:
        for stmt in _statements(statements, into_scopes=False):
            if isinstance(stmt, ClassDef):  # a class body's names are no closure of its methods
                visit(stmt.defs.body, around)
            func = _defined_function(stmt)
            if func is None:
                continue
            if around:
                found[id(func)] = around
            own = {a.variable.name for a in func.arguments}
            for inner in func.body.body:
                parsed = source.statement(inner.line, inner.end_line, inner.column)
                if parsed is not None:
                    own.update(source_rules.bound_names(parsed))
                else:
                    own.update(name for node in _statements([inner], into_scopes=False) for name in _names_bound_by(node))
            visit(func.body.body, around | own)

    visit(file.defs, frozenset())
    return found


def _defined_function(stmt: Statement) -> FuncDef | None:
    """The function a `def` statement (decorated or not) defines."""
    return stmt.func if isinstance(stmt, Decorator) else stmt if isinstance(stmt, FuncDef) else None


def _names_bound_by(stmt: Statement) -> list[str]:
    """The names one statement binds in its own scope (a `def` its name, not its parameters)."""
    if isinstance(stmt, Import):
        return [alias or module.split(".")[0] for module, alias in stmt.ids]
    if isinstance(stmt, ImportFrom):
        return [alias or name for name, alias in stmt.names]
    if isinstance(stmt, (FuncDef, ClassDef)):
        return [stmt.name]
    if isinstance(stmt, Decorator):
        return [stmt.func.name]
    if isinstance(stmt, AssignmentStmt):
        return [name for target in stmt.lvalues for name in _names_in_target(target)]
    if isinstance(stmt, ForStmt):
        return _names_in_target(stmt.index)
    if isinstance(stmt, WithStmt):
        return [name for target in stmt.target if target is not None for name in _names_in_target(target)]
    return []


def _names_in_target(target: Expression) -> list[str]:
    if isinstance(target, NameExpr):
        return [target.name]
    if isinstance(target, (TupleExpr, ListExpr)):
        return [name for item in target.items for name in _names_in_target(item)]
    if isinstance(target, StarExpr):
        return _names_in_target(target.expr)
    return []
