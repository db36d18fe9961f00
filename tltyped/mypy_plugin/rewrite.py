"""The in-body form, desugared on the parsed AST before semantic analysis.

mypy reads `A: T.Tensor[[M, K], T.float16]` in a body as a redefinition of
the parameter `A` (`no-redef`), and knows nothing of `M, K = T.const("M, K")`.
Runtime and plugin agree on one reading (tltyped.frontend.analyze does the
same at decoration): each in-body annotation of a parameter becomes that
parameter's type, and each `T.const` / `T.dynamic` name becomes a dim the
annotations may use. Statically a dim is a PEP 695 type parameter of the
kernel, so callers see `def [M, K, N] (A: Tensor[float16, M, K], ...)` and
dims unify across a call's arguments like any type variable (in_body.py).

This runs in `get_additional_deps`, the one hook that sees a module's AST
before names are bound. Problems found here cannot be reported yet (no
error-reporting API exists at this point); they are kept as `Diagnostic`s
with their lines and reported when the kernel's decorator is type-checked,
which every check of the module does.

Also done here, for every module that defines kernels:
- `@tl.jit` becomes `@tl.jit()`: the same decorator, but applying it is then
  a plain (not overloaded) call, so the plugin's definition checks run in a
  call mypy does not evaluate speculatively (see plugin.py); a stored
  decorator (`hopper = tl.jit(target=...)`, then `@hopper`) is such a call
  already, and its full name is handed to the plugin, which hooks it alike;
- jit applied by a call to a function of the module (`add = tl.jit(_add)`,
  `tl.jit(out_idx=[-1])(fn)`, `hopper(fn)`: parsed.py) makes a kernel as the
  decorator does, and `tl.jit(fn)` becomes `tl.jit()(fn)` alike;
- each kernel's `jit(out_idx=...)` is read from its decorator or from the
  call applying jit (out_idx.py);
- a kernel's `return (C,)` becomes `return C`, what a call returns;
- a lazy-style factory (its body returns a `@T.prim_func`) is not
  desugared: its record keeps what its kernel objects take, read from the
  source (lazy.py);
- kernels that mypy parsed without their bodies get them back: mypy parses
  modules whose errors it silences (installed packages) without function
  bodies, and an in-body kernel's parameter types live in its body, so the
  file is parsed once more, fully, and each kernel gets its body back.

And in every module importing tltyped or TileLang: the call-form annotations
(`A: T.Tensor((M, K), "float16")`, a description no type checker reads) of
each `@T.prim_func` (a lazy factory's, a plain one at any depth) become Any, and its in-body parameter
annotations (TileLang's other spelling) are dropped, as no-redef to mypy; and a string dtype in a
Tensor annotation of any signature (`A: T.Tensor[(M, K), "float16"]`) becomes a string literal
(`_read_dtype_strings`).
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from collections.abc import Iterator, Mapping

from mypy.errors import Errors
from mypy.nodes import (
    AssignmentStmt, CallExpr, Decorator, Expression, FuncDef, MypyFile, NameExpr, ReturnStmt, Statement, TempNode,
    TupleExpr,
)
from mypy.options import Options
from mypy.parse import parse
from mypy.type_visitor import TypeQuery
from mypy.types import AnyType, CallableType, RawExpressionType, Type, TypeOfAny, UnboundType

from tltyped.mypy_plugin import call_form, names, out_idx
from tltyped.mypy_plugin.in_body import KernelRewrite
from tltyped.mypy_plugin.kernel_record import KernelRecord
from tltyped.mypy_plugin.lazy import factory_kernel
from tltyped.mypy_plugin.parsed import (
    JitApplication,
    ModuleNames,
    bound_names,
    closure_names,
    decorated_functions,
    defined_functions,
    imports_kernel_modules,
    jit_applications,
    jit_decorator,
    module_names,
)
from tltyped.mypy_plugin.source_text import SourceText
from tltyped.mypy_plugin.typeops import unread_annotation
from tltyped.mypy_plugin.walk import own_nodes
from tltyped.mypy_plugin.written import written_tensor_parts
from tltyped.stubs import prim_func


def rewrite_module(
    file: MypyFile, done: Mapping[int, KernelRecord], options: Options
) -> tuple[dict[int, KernelRecord], set[str]]:
    """Rewrite the module's kernels in place; return the records of the kernels rewritten now, by the `id` of
    the node the jit hook sees (a decorated kernel's FuncDef, the call that applies jit to one), and the full
    names of the module's stored decorators (`hopper = tl.jit(...)`).

    `done` holds the kernels already rewritten (by that `id`): a daemon may hand the same, already rewritten,
    tree over again.
    """
    if not imports_kernel_modules(file):
        return {}, set()
    found = module_names(file)
    records, stored = _rewrite_kernels(file, found, done, options) if found.jit else ({}, set())
    factories = [record.func for record in records.values() if record.factory_kernel is not None]
    _untype_call_forms(file, found, factories)
    _read_dtype_strings(file, found)
    return records, stored


def _rewrite_kernels(
    file: MypyFile, found: ModuleNames, done: Mapping[int, KernelRecord], options: Options
) -> tuple[dict[int, KernelRecord], set[str]]:
    stored = {f"{file.fullname}.{name}" for name in found.stored_jit}
    decorated = [
        (decorator, index)
        for decorator in decorated_functions(file)
        if (index := jit_decorator(decorator, found)) is not None and id(decorator.func) not in done
    ]
    applied = [application for application in jit_applications(file, found) if id(application.call) not in done]
    if not decorated and not applied:
        return {}, stored
    _restore_bodies(file, [decorator.func for decorator, _ in decorated] + [a.func for a in applied], options)
    rewrite = _KernelRewriter(file, found)
    records = {}
    for decorator, index in decorated:
        jit_call = _jit_call(decorator.decorators[index], found)
        _call_decorator(decorator, index, found)
        records[id(decorator.func)] = rewrite.kernel(decorator.func, out_idx.read(jit_call))
    for application in applied:
        _call_jit(application)
        records[id(application.call)] = rewrite.kernel(application.func, out_idx.read(application.options))
    return records, stored


class _KernelRewriter:
    """Rewrites each kernel of one module once, however many times jit is applied to it; each application
    has its own record, with its own out_idx."""

    def __init__(self, file: MypyFile, found: ModuleNames) -> None:
        self.found = found
        self.source = SourceText(file.path)
        self.module_bound = bound_names(file)
        self.closures = closure_names(file, self.source)
        self.rewritten: dict[int, KernelRecord] = {}

    def kernel(self, func: FuncDef, kernel_out_idx: tuple[int, ...] | None) -> KernelRecord:
        record = self.rewritten.get(id(func))
        if record is None:
            record = self.rewritten[id(func)] = self.rewrite(func)
        return dataclasses.replace(record, out_idx=kernel_out_idx)

    def rewrite(self, func: FuncDef) -> KernelRecord:
        kernel = factory_kernel(func, self.source)
        if kernel is not None:  # a lazy-style factory: its parameters are consts, its body builds the kernel
            return KernelRecord(func, factory_kernel=kernel)
        _read_call_forms(func, self.source, self.found)
        _unpack_one_output(func)
        closure = self.closures.get(id(func), frozenset())
        return KernelRewrite(func, self.found, self.source, self.module_bound, closure).run()


def _unpack_one_output(func: FuncDef) -> None:
    """`return (C,)` -> `return C`: a call returns a kernel's one output itself, as the runtime unpacks it."""
    for node in own_nodes(func.body):
        if isinstance(node, ReturnStmt) and isinstance(node.expr, TupleExpr) and len(node.expr.items) == 1:
            node.expr = node.expr.items[0]


def _jit_call(expr: Expression, found: ModuleNames) -> Expression | None:
    """The call of jit that gives a kernel its options: the decorator's own, or the stored decorator's."""
    return found.stored_jit.get(expr.name) if isinstance(expr, NameExpr) else expr


def _restore_bodies(file: MypyFile, kernels: list[FuncDef], options: Options) -> None:
    """Give back the bodies of kernels parsed without one (a real `def` always has a body)."""
    stripped = [func for func in kernels if not func.body.body]
    if not stripped:
        return
    try:
        source = None
        if not options.native_parser:
            with open(file.path, encoding="utf-8") as text:
                source = text.read()
        full = parse(source, file.path, file.fullname, Errors(options), options, eager=True)
    except Exception:  # noqa: BLE001  (an unreadable file keeps mypy's reading of it)
        return
    by_place = {(func.name, func.line): func for func in defined_functions(full)}
    for func in stripped:
        found = by_place.get((func.name, func.line))
        if found is not None:
            func.body = found.body


def _read_call_forms(func: FuncDef, source: SourceText, found: ModuleNames) -> None:
    """`def f(A: T.Tensor((M, K), dtype))`: TileLang's call form in a kernel's signature is the subscription
    `T.Tensor[[M, K], dtype]`, as the runtime evaluates it (call_form.py reads it from the source)."""
    if not any(arg.type_annotation is not None and call_form.is_call_form(arg.type_annotation) for arg in func.arguments):
        return
    read = call_form.signature(func, source.lines(), found)
    for index, arg in enumerate(func.arguments):
        if arg.type_annotation is None or not call_form.is_call_form(arg.type_annotation):
            continue
        # a shape the plugin cannot read (a module constant, a computed tuple): the parameter is unchecked
        form = read.get(arg.variable.name)
        annotation: Type = unread_annotation() if form is None else form
        arg.type_annotation = annotation
        for typ in (func.type, func.unanalyzed_type):
            if isinstance(typ, CallableType):
                typ.arg_types[index] = annotation


def _untype_call_forms(file: MypyFile, found: ModuleNames, factories: list[FuncDef]) -> None:
    """The call-form annotations of every `@T.prim_func` (`A: T.Tensor((M, K), dtype)`, dims that are values of
    the code around it), and of the functions a lazy factory defines, are Any, not invalid types: inside a
    prim_func TileLang's buffers are untyped anyway, and what a call of a factory's kernel takes is read from the
    source (lazy.py). So a prim_func at module level or in any function (TileLang's own, outside tl.jit) is no
    error; a factory's functions are those defined in a branch too (`if split: @T.prim_func def one(...)`), as
    lazy.py reads them. A parameter annotated in the body instead (`A: T.Tensor[[M, K], T.float16]`) is left
    untyped, its annotation dropped."""
    source = SourceText(file.path)
    for func in _prim_funcs(file, found, factories):
        bare = {arg.variable.name for arg in func.arguments if arg.type_annotation is None}
        func.body.body = [stmt for stmt in func.body.body if not _annotates(stmt, bare)]
        shape_only = _shape_only_parameters(func, source)
        untyped = [
            arg.type_annotation is not None and (call_form.is_call_form(arg.type_annotation) or arg.variable.name in shape_only)
            for arg in func.arguments
        ]
        for arg, untype in zip(func.arguments, untyped):
            if untype:
                arg.type_annotation = AnyType(TypeOfAny.special_form)
        for typ in (func.type, func.unanalyzed_type):
            if isinstance(typ, CallableType) and len(typ.arg_types) == len(untyped):
                typ.arg_types = [AnyType(TypeOfAny.special_form) if u else t for t, u in zip(typ.arg_types, untyped)]


def _shape_only_parameters(func: FuncDef, source: SourceText) -> set[str]:
    """The prim_func's parameters annotated with a subscript that states only a shape (`T.Tensor[(M, K)]`, of the
    unstated dtype: prim_func.is_shape_only, the rule the runtime's reading is told by). Python hands it over as
    `T.Tensor[M, K]`, which the annotation hook would read in tltyped's order, `M` the dtype."""
    text = textwrap.dedent("\n".join(source.lines()[func.line - 1 : func.end_line]))
    try:
        node = ast.parse(text).body[0]
    except (SyntaxError, IndexError):  # a source that is not the one mypy parsed
        return set()
    if not isinstance(node, ast.FunctionDef):
        return set()
    return {
        arg.arg for arg in node.args.args
        if isinstance(arg.annotation, ast.Subscript) and prim_func.is_shape_only(arg.annotation.slice)
    }


def _annotates(stmt: Statement, params: set[str]) -> bool:
    """`A: T.Tensor[[M, K], T.float16]` (no value) at the top of a prim_func's body, for a parameter the signature
    leaves bare: TileLang's spelling of the parameter's buffer, which mypy would read as a redefinition."""
    return (
        isinstance(stmt, AssignmentStmt) and len(stmt.lvalues) == 1 and isinstance(stmt.lvalues[0], NameExpr)
        and stmt.lvalues[0].name in params and isinstance(stmt.rvalue, TempNode) and stmt.rvalue.no_rhs
    )


def _prim_funcs(file: MypyFile, found: ModuleNames, factories: list[FuncDef]) -> Iterator[FuncDef]:
    """The functions whose call-form annotations are Any: each decorated with the language's prim_func, anywhere
    in the module, and each a lazy factory defines."""
    for decorator in decorated_functions(file):
        if found.is_prim_func(decorator):
            yield decorator.func
    for factory in factories:
        for stmt in own_nodes(factory.body):
            if isinstance(stmt, (Decorator, FuncDef)):
                yield stmt.func if isinstance(stmt, Decorator) else stmt


def _read_dtype_strings(file: MypyFile, found: ModuleNames) -> None:
    """A string where a Tensor annotation's dtype goes (`A: T.Tensor[(M, K), "float16"]`) is a dtype name, as
    TileLang reads it, and becomes a string literal in every signature of the module (its kernels' signatures as
    the rewrite left them, in-body annotations moved there included). Only tltyped's Tensor, as the module's
    imports spell it, is read so: in a class of the module's own named Tensor a string stays a forward reference.

    mypy parses a string in an annotation as a forward reference, a name in quotes. Before it analyses a
    function's signature (where the annotation hook reads each Tensor) it looks every name of the signature up to
    find the function's type variables (`FindTypeVarVisitor`, for a function without PEP 695 type parameters), and
    there `"float16"` is an undefined name. A string literal is looked up
    nowhere; the hook reads it through the dtype table, and says a misspelt one is an unknown dtype
    (annotation_hooks.py). The Tensor is changed in place, as `func.type` and the copy mypy keeps of it to analyse
    again (`func.unanalyzed_type`) both hold it.
    """
    for func in defined_functions(file):
        if not isinstance(func.type, CallableType):
            continue
        for typ in [*func.type.arg_types, func.type.ret_type]:
            for tensor in typ.accept(_TensorAnnotations(found)):
                dtype, _ = written_tensor_parts(tensor)
                if len(tensor.args) == 2 and dtype is tensor.args[0] and _names_a_dtype(tensor.args[1]):
                    dtype = tensor.args[1]  # TileLang's order with a shape of one dim: `T.Tensor[n, "float16"]`
                if isinstance(dtype, UnboundType) and dtype.original_str_expr is not None:
                    literal = RawExpressionType(dtype.original_str_expr, "builtins.str", dtype.line, dtype.column)
                    tensor.args = tuple(literal if arg is dtype else arg for arg in tensor.args)


def _names_a_dtype(typ: Type) -> bool:
    """A string naming a dtype (`"float16"`): where a dim would go it is the dtype of TileLang's `[shape, dtype]`
    (a quoted dim name is no dim either way, and stays a forward reference the hook reports)."""
    return isinstance(typ, UnboundType) and typ.original_str_expr in names.LANGUAGE_DTYPE_CLASS


class _TensorAnnotations(TypeQuery[list[UnboundType]]):
    """The annotations of tltyped's Tensor (`T.Tensor[...]`, `tl.Tensor[...]`) in an unanalysed type, at any depth
    (`Optional[T.Tensor[...]]`); a new one for each type, as mypy's queries are."""

    def __init__(self, found: ModuleNames) -> None:
        super().__init__()
        self.found = found

    def strategy(self, items: list[list[UnboundType]]) -> list[UnboundType]:
        return [tensor for tensors in items for tensor in tensors]

    def visit_unbound_type(self, t: UnboundType, /) -> list[UnboundType]:
        inner = super().visit_unbound_type(t)
        return [t, *inner] if self.found.is_tensor(t.name) else inner


def _call_jit(application: JitApplication) -> None:
    """`tl.jit(fn)` -> `tl.jit()(fn)`, as `@tl.jit` becomes `@tl.jit()` (`_call_decorator`): the jit hook then
    sees the application, outside mypy's speculative checks of jit's overloads. A call that gives options
    (`tl.jit(out_idx=[-1])(fn)`) or a stored decorator (`hopper(fn)`) applies jit as it is."""
    if application.options is not None:
        return
    call = application.call
    jit = CallExpr(call.callee, [], [], [])
    jit.set_line(call.callee)
    call.callee = jit


def _call_decorator(decorator: Decorator, index: int, found: ModuleNames) -> None:
    """`@tl.jit` -> `@tl.jit()`: equal at run time and to a type checker (see the module docstring).

    A called `@tl.jit(...)` and a stored decorator (`@hopper`) are applied as they are.
    """
    expr = decorator.decorators[index]
    if isinstance(expr, CallExpr) or (isinstance(expr, NameExpr) and expr.name in found.stored_jit):
        return
    call = CallExpr(expr, [], [], [])
    call.set_line(expr)
    decorator.decorators[index] = call
    if index < len(decorator.original_decorators) and decorator.original_decorators[index] is expr:
        decorator.original_decorators[index] = call

