"""Which of a kernel's parameters its compiled kernel takes: the runtime ones.

`gemm.compile(...)` returns a kernel called with the tensors, dyn scalars and
pointers only, its consts bound (Dispatcher.compile): `JitFunction[P, R, C]`'s
C. To mypy a `tl.dyn[int]` and a const `int` are both `int`, so the kinds are
read here from the annotations as written, resolved in the kernel's module,
as the runtime reads them (frontend/annotation.py's `parse_param`): a tensor,
`tl.dyn[...]`, `tl.ptr` or a TileLang scalar (`T.int32`) is passed at run
time; a `tl.tune` default (refused on any of those), no annotation, or any
other class or typing form is a const. Where an annotation cannot be resolved with certainty (a type
alias of the user's, a name imported inside a function), C stays `...` and
the compiled kernel's calls go unchecked: never a false error.
"""

from __future__ import annotations

from typing import Final

from mypy.checker import TypeChecker
from mypy.nodes import CallExpr, FuncDef, MypyFile, RefExpr, SymbolNode, TypeInfo
from mypy.plugin import CheckerPluginInterface
from mypy.types import CallableType, Instance, Parameters, Type, UnboundType, get_proper_type

from tltyped.mypy_plugin import names
from tltyped.mypy_plugin.annotation_hooks import tensor_parts
from tltyped.mypy_plugin.typeops import is_unread

_RUNTIME_ANNOTATIONS: Final = (names.DYN, names.PTR)
_CONST_ANNOTATIONS: Final = (names.CONST, *names.LANGUAGE_DTYPE_ANNOTATIONS)
_CONST_MODULES: Final = ("builtins", "typing", "typing_extensions", "collections.abc")


def with_runtime_params(kernel: Type, func: FuncDef, api: CheckerPluginInterface) -> Type:
    """The kernel's `JitFunction[P, R, C]` with C its runtime parameters, where each parameter's kind is certain."""
    proper = get_proper_type(kernel)
    if not (isinstance(proper, Instance) and proper.type.fullname == names.JIT_FUNCTION and len(proper.args) == 3):
        return kernel
    params = get_proper_type(proper.args[0])
    if not isinstance(params, Parameters) or params.is_ellipsis_args or not isinstance(api, TypeChecker):
        return kernel
    scopes = [api.tree, api.modules["builtins"]]
    kept: list[int] = []
    for index, name in enumerate(params.arg_names):
        runtime = _is_runtime(func, name, params.arg_types[index], scopes)
        if runtime is None:
            return kernel
        if runtime:
            kept.append(index)
    runtime_params = params.copy_modified(
        arg_types=[params.arg_types[i] for i in kept],
        arg_kinds=[params.arg_kinds[i] for i in kept],
        arg_names=[params.arg_names[i] for i in kept],
    )
    return proper.copy_modified(args=[proper.args[0], proper.args[1], runtime_params])


def _is_runtime(func: FuncDef, name: str | None, analyzed: Type, scopes: list[MypyFile]) -> bool | None:
    """Whether the parameter is passed at run time; None where that is not certain."""
    index = next((i for i, arg in enumerate(func.arguments) if arg.variable.name == name), None)
    if index is not None and is_tuned(func, index):
        return False  # a const (tl.tune on any other parameter is an error of the definition)
    return _annotated_runtime(func, index, analyzed, scopes)


def is_tuned(func: FuncDef, index: int) -> bool:
    """Whether the index-th parameter's default is `tl.tune([...])`."""
    default = func.arguments[index].initializer
    return isinstance(default, CallExpr) and isinstance(default.callee, RefExpr) and default.callee.fullname == names.TUNE


def annotated_runtime(func: FuncDef, index: int, analyzed: Type, api: CheckerPluginInterface) -> bool | None:
    """Whether the index-th parameter's annotation makes it one passed at run time (a tensor, `tl.dyn[...]`,
    `tl.ptr`, a TileLang scalar), whatever its default; None where that is not certain."""
    if not isinstance(api, TypeChecker):
        return None
    return _annotated_runtime(func, index, analyzed, [api.tree, api.modules["builtins"]])


def _annotated_runtime(func: FuncDef, index: int | None, analyzed: Type, scopes: list[MypyFile]) -> bool | None:
    if tensor_parts(get_proper_type(analyzed)) is not None:
        return True
    if is_unread(analyzed):
        return None  # an annotation the plugin could not read (a tensor's in the body, perhaps): not certain
    if index is None:
        return None
    written = func.unanalyzed_type.arg_types[index] if isinstance(func.unanalyzed_type, CallableType) else None
    if written is None:
        return False  # unannotated: a const
    if not isinstance(written, UnboundType):
        return False  # `int | None`, a literal, a callable type: typing forms, consts
    node = _resolve(written.name, scopes)
    if node is None:
        return None
    fullname = node.fullname
    if fullname in _RUNTIME_ANNOTATIONS or names.language_dtype_class(fullname) is not None:
        return True
    if isinstance(node, TypeInfo) or fullname.rpartition(".")[0] in _CONST_MODULES or fullname in _CONST_ANNOTATIONS:
        return False
    return None  # an alias of the user's, or anything else: not certain


def _resolve(name: str, scopes: list[MypyFile]) -> SymbolNode | None:
    """What a dotted name written in the module refers to (`tl.dyn` -> tltyped.types.params.dyn): looked up in
    the module, then in builtins."""
    head, *rest = name.split(".")
    found = next((scope.names[head] for scope in scopes if head in scope.names), None)
    node = found.node if found is not None else None
    for part in rest:
        if not isinstance(node, MypyFile):
            return None
        found = node.names.get(part)
        node = found.node if found is not None else None
    return node
