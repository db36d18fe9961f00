"""Typed .pyi stubs for a module's jit functions: `python -m tltyped.stubs MODULE` (see __main__.py).

A stub shows what the frontend understood, in the signature form, for IDEs and
type checkers that run no plugin: in-body annotations become parameter types,
dims become TypeVars (bound to int when dyn), a dtype TypeVar keeps the dtypes
it may be, the return annotation reads in the same TypeVars, and a derived dim
reads as `Annotated[Any, "N * 2 + 1"]` (any size to a type checker; the
expression is checked at run time). `tl.Tensor[...]` itself takes plain torch tensors. The
module's other names are not stubbed: a module `__getattr__` gives them as Any
(a stub is the whole module to a type checker).

A kernel the module imports from another (a package's `from .kern import gemm`)
is imported in its stub from where it is defined, and a package's stub keeps
its submodules: pyright resolves a relative import beside the importing file,
never in the stubs folder, so without the package's own stub its users would
get the kernel's source, not its stub.

A lazy-style factory (its body returns a `@T.prim_func`) becomes an object
called with its parameters, each a const (hashable), returning a class that
stands for its kernel objects: called with the prim_func's parameters but the
out_idx ones, returning those, with the kernel object's inspection. The
factory object has `lower` and TileLang's `compile`, `get_tir` and `par_compile` of the
same parameters. The prim_funcs it
returns (at the top of its body or from branches) are read from the source,
by the mypy plugin's rule (prim_func.py); the factory is not run.
"""

from __future__ import annotations

import ast
import copy
import inspect
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args, get_origin

import tltyped as tl
from tltyped.frontend import dims as dimlib
from tltyped.errors import ArgumentValueError, DefinitionError
from tltyped.types.source import function_ast
from tltyped.frontend.lazy import out_indices
from tltyped.frontend.signature import DTypeSpec, Kind, KernelSignature, Param, TensorSpec
from tltyped.stubs import prim_func
from tltyped.templates import render
from tltyped.types.dtypes import DType
from tltyped.types.params import CONST

if TYPE_CHECKING:
    from tltyped.callpath.factory import Factory

_CONST_TYPES = (bool, int, float, str)
_ANY_TENSOR = "tl.Tensor[Any, *tuple[Any, ...]]"
"""A tensor of any dtype and rank: one whose annotation is computed from consts (known per call only)."""


@dataclass(frozen=True)
class _DimVar:
    name: str
    dyn: bool


@dataclass(frozen=True)
class _DTypeVar:
    name: str
    bound: str | None  # the dtypes it may be: `tl.float16 | tl.bfloat16`; None: any


@dataclass(frozen=True)
class _StubParam:
    name: str
    type: str
    default: bool
    keyword_only: bool = False  # after the `*`


@dataclass(frozen=True)
class _StubFunction:
    name: str
    params: list[_StubParam]
    returns: str
    doc: str  # the docstring as a literal
    runtime: list[_StubParam] | None = None  # what its compiled kernels take (a jit function's; None: a kernel object's)


@dataclass(frozen=True)
class _Import:
    """A kernel imported from the module defining it: `import {source}`, then `{alias} = {source}.{name}`. Not
    `from {source} import {name} as {alias}`: a stub exports what it imports only under the name it is imported
    by, `as {name}`, and the module may bind the kernel to another name."""

    source: str
    name: str
    alias: str


@dataclass(frozen=True)
class _StubFactory:
    name: str
    params: str  # the factory's parameter list, as written in the stub
    kernel: _StubFunction  # the kernel objects' call: its name is their class's
    doc: str


def tensor_type(spec: TensorSpec, typevars: Mapping[str, str]) -> str:
    """`tl.Tensor[tl.float16, M, K]`, a parameter's or a returned tensor's, with literal dims as Literal, a dim
    symbol or dtype variable as its TypeVar in the stub (`typevars`: those the kernel's parameters declare, each
    by its name in the stub; one they don't, which only a returned tensor names, is Any: no argument fixes it),
    and derived dims spelled out."""
    if spec.dtype.fixed is not None:
        dtype = _dtype(spec.dtype.fixed)
    else:
        dtype = typevars.get(spec.dtype.var or "", "Any")
    return f"tl.Tensor[{', '.join([dtype, *(_dim(d, typevars) for d in spec.dims)])}]"


def _dtype(dtype: type[DType]) -> str:
    return f"tl.{'bool_' if dtype.name == 'bool' else dtype.__name__}"


def _dim(dim: dimlib.Dim, typevars: Mapping[str, str]) -> str:
    if dim.is_literal:
        return f"Literal[{dim.value}]"
    if dim.is_symbol:
        return typevars.get(dim.text, "Any")
    return f'Annotated[Any, "{dim.text}"]'


def _param_type(p: Param, typevars: Mapping[str, str]) -> str:
    if p.kind is Kind.TENSOR:
        return _ANY_TENSOR if p.tensor is None else tensor_type(p.tensor, typevars)  # None: computed from consts
    if p.kind is Kind.PTR:
        return "tl.ptr"
    if p.kind is Kind.DYN:
        return p.scalar_type.__name__
    return _const_type(p)


def _const_type(p: Param) -> str:
    """A const's annotation where a stub can spell it (`Literal["row", "col"]`, `int`), else Any. An unannotated
    const takes any hashable value, whatever its default (`dtype="float16"` takes `T.bfloat16`, a torch dtype):
    `Hashable`, as a lazy-style factory's parameters, and as the plugin checks such a const at call sites.
    `tl.const[X]` (`Annotated[X, CONST]`) is spelt as X is: the marker only says what an unmarked const is too,
    and a call takes an X, as the mypy plugin checks it."""
    if p.annotation is inspect.Parameter.empty:
        return "Hashable"
    annotation = p.annotation
    if get_origin(annotation) is Annotated and CONST in annotation.__metadata__:
        annotation = annotation.__origin__
    if get_origin(annotation) is Literal and all(type(v) in _CONST_TYPES for v in get_args(annotation)):
        return f"Literal[{', '.join(map(repr, get_args(annotation)))}]"
    if annotation in _CONST_TYPES:
        return str(annotation.__name__)
    return "Any"


def _returns(fn: tl.JitFunction[..., Any], typevars: Mapping[str, str]) -> str:
    """What a call returns: the `jit(out_idx=...)` tensors; else those the return annotation states, as the
    frontend read it (so the stub names only what it defines, whatever the annotation spells: `typing.Tuple`, an
    alias, another module's TypeVar, a bare int dim); else the body's outputs (the frontend refuses any other
    value), tensors sized per call."""
    signature = fn.signature
    if signature.outputs:
        return _result([_param_type(p, typevars) for p in signature.outputs])
    if signature.returns is not None:
        return _result([tensor_type(spec, typevars) for spec in signature.returns])
    node, _ = function_ast(fn.__wrapped__)
    returned = next((n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None), None)
    count = 0 if returned is None else len(returned.elts) if isinstance(returned, ast.Tuple) else 1
    return _result([_ANY_TENSOR] * count)


def _result(tensors: list[str]) -> str:
    """The type of a call returning `tensors`, as the call returns them: None, the one tensor, or a tuple."""
    return "None" if not tensors else tensors[0] if len(tensors) == 1 else f"tuple[{', '.join(tensors)}]"


def _factory(name: str, factory: Factory) -> _StubFactory | None:
    """A factory's stub, from its source; None when its calls make no kernel that the source shows (its body
    returns no `@T.prim_func`, or its out_idx names none of the prim_func's parameters: its calls raise). Its
    kernel objects take what prim_func.factory_kernel says, as the mypy plugin's do: any call, returning Any,
    where the prim_funcs it may return differ in their parameters."""
    node, _ = function_ast(factory.fn)
    factory_kernel = prim_func.factory_kernel(node) if isinstance(node, ast.FunctionDef) else None
    if factory_kernel is None:
        return None
    if factory_kernel.params is None:
        kept, returns_text = [_StubParam("*args", "Any", False), _StubParam("**kwargs", "Any", False)], "Any"
    else:
        params = [_prim_func_param(p) for p in factory_kernel.params]
        try:
            outputs = out_indices(name, len(params), factory.out_idx)
        except DefinitionError:
            return None
        returns_text = _result([params[i].type for i in outputs])
        kept = [p for i, p in enumerate(params) if i not in outputs]
    kernel = _StubFunction(f"_{name}_kernel", kept, returns_text,
                           _docstring(f"A kernel object of {name}: its kernel for one set of the factory's arguments."))
    consts = copy.deepcopy(node.args)  # the factory's parameters: each a const, whose value keys a kernel
    for arg in (*consts.posonlyargs, *consts.args, *consts.kwonlyargs, consts.vararg, consts.kwarg):
        if arg is not None:
            arg.annotation = ast.Name("Hashable")
    # Defaults as the decorated function has them: `@tl.autotune(configs=...)` gives its configured parameters one.
    given = {p.name for p in factory.parameters.parameters.values() if p.default is not inspect.Parameter.empty}
    consts.defaults = [ast.Constant(...) for arg in (*consts.posonlyargs, *consts.args) if arg.arg in given]
    consts.kw_defaults = [ast.Constant(...) if arg.arg in given else None for arg in consts.kwonlyargs]
    doc = (factory.__doc__ or "").strip().splitlines()[0] if factory.__doc__ else f"Kernel factory {name}."
    return _StubFactory(name, ast.unparse(consts), kernel, _docstring(doc))


def _prim_func_param(param: prim_func.PrimFuncParam) -> _StubParam:
    """A kernel object's parameter: its dims and dtype where the prim_func writes them, else Any."""
    if not param.is_tensor:
        return _StubParam(param.name, param.scalar or "Any", False)
    dtype = "Any" if param.dtype is None else f"tl.{param.dtype}"
    dims = ["*tuple[Any, ...]"] if param.dims is None else ["Any" if d is None else f"Literal[{d}]" for d in param.dims]
    return _StubParam(param.name, f"tl.Tensor[{', '.join([dtype, *dims])}]", False)


def _docstring(text: str) -> str:
    """`text` as a triple-quoted string literal that reads back as `text`, whatever it holds: backslashes
    and double quotes are escaped (a quote at its end would close the literal early), and so is every
    character that is not printable."""
    escaped = (f"\\{c}" if c in '\\"' else c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return f'"""{"".join(escaped)}"""'


def render_stub(module: ModuleType) -> str:
    """The .pyi text for every jit function defined in `module`, under each name the module binds it to (`add =
    tl.jit(_add)` is `add`); ArgumentValueError if it defines none."""
    from tltyped.callpath.factory import Factory  # imports torch: not at import, the mypy plugin reads prim_func.py

    factories = []
    kernels: list[tuple[str, tl.JitFunction[..., Any]]] = []
    imported = []
    for name, value in kernels_bound(module).items():
        if defining_module(value) != module.__name__:
            found = _imported_kernel(name, value)
            if found is not None:
                imported.append(found)
        elif isinstance(value, Factory):
            factory = _factory(name, value)
            if factory is not None:
                factories.append(factory)
        else:
            kernels.append((name, value))
    if not factories and not kernels and not imported:  # its stub would only hide the module's own types
        raise ArgumentValueError(f"{module.__name__} defines no jit function and imports none")
    # A package's submodules, which its stub would otherwise hide behind `__getattr__`, as Any: `from pkg import
    # kern as kern` gives `from pkg import kern` the submodule's own stub (pyright finds none that is not in the
    # stubs folder through its package's stub, so a submodule without one stays Any that way).
    submodules = [
        name for name, value in vars(module).items()
        if isinstance(value, ModuleType) and value.__name__ == f"{module.__name__}.{name}"
    ] if hasattr(module, "__path__") else []
    # One TypeVar per dim name, bound to int when dyn; a name dyn in one kernel and const in another is two
    # TypeVars, the dyn one `N_dyn`, so that each kernel keeps its own bound.
    kinds: dict[str, set[bool]] = {}
    for _, fn in kernels:
        for dim, is_dyn in fn.signature.dims.items():
            kinds.setdefault(dim, set()).add(is_dyn)
    dyn_names = {dim: f"{dim}_dyn" for dim, found in kinds.items() if len(found) == 2}
    dtype_vars: dict[str, DTypeSpec] = {}
    functions = []
    for name, fn in kernels:
        signature: KernelSignature = fn.signature
        declared = _dtype_vars(signature)
        dtype_vars.update(declared)
        typevars = {dim: dyn_names.get(dim, dim) if is_dyn else dim for dim, is_dyn in signature.dims.items()}
        typevars |= {var: var for var in declared}
        params = [_StubParam(p.name, _param_type(p, typevars), p.has_default, p.keyword_only) for p in signature.params]
        runtime = [stub for stub, p in zip(params, signature.params) if p.is_runtime]
        doc = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else f"Kernel {name}."
        doc += "".join(f" Checks {check.source}." for check in signature.checks)
        functions.append(_StubFunction(name, params, _returns(fn, typevars), _docstring(doc), runtime))
    dims = {dim: found == {True} for dim, found in kinds.items()} | {typevar: True for typevar in dyn_names.values()}
    return render(
        "stub.pyi.j2", module=module.__name__, functions=functions, factories=factories, imports=imported,
        submodules=submodules,
        dims=[_DimVar(name, is_dyn) for name, is_dyn in sorted(dims.items())],
        dtype_vars=[_DTypeVar(var, _dtype_var_bound(dtype_vars[var])) for var in sorted(dtype_vars)],
    )


def _dtype_vars(signature: KernelSignature) -> dict[str, DTypeSpec]:
    """The dtype variables a kernel's tensor parameters (outputs included) declare, by name."""
    return {
        p.tensor.dtype.var: p.tensor.dtype for p in (*signature.params, *signature.outputs)
        if p.tensor is not None and p.tensor.dtype.var is not None
    }


def _dtype_var_bound(dtype: DTypeSpec) -> str | None:
    """The dtypes a dtype variable may be, as its TypeVar's bound (`tl.float16 | tl.bfloat16`); None: any dtype.
    A bound rather than constraints, which it amounts to for dtypes (no dtype is another's subclass), as mypy
    cannot give a generic function with a constrained TypeVar to `runtime_parameters`."""
    return " | ".join(map(_dtype, dtype.var_dtypes)) or None


def kernels_bound(module: ModuleType) -> dict[str, Factory | tl.JitFunction[..., Any]]:
    """The jit functions and lazy-style factories the module binds, by name: its own and those it imports."""
    from tltyped.callpath.factory import Factory

    return {name: value for name, value in vars(module).items() if isinstance(value, (Factory, tl.JitFunction))}


def defining_module(kernel: Factory | tl.JitFunction[..., Any]) -> str:
    """The name of the module whose source defines the kernel (a factory's, its function's)."""
    from tltyped.callpath.factory import Factory

    return str(kernel.fn.__module__ if isinstance(kernel, Factory) else kernel.__module__)


def _imported_kernel(name: str, kernel: Factory | tl.JitFunction[..., Any]) -> _Import | None:
    """The import of a kernel bound here but defined in another module, from the name that module binds it to,
    whose stub types it (an absolute import: a stub's relative one is resolved in the stubs folder alone);
    None where that module binds it to no name (a kernel a function there made)."""
    source = defining_module(kernel)
    found = next((n for n, v in vars(sys.modules.get(source, ModuleType(source))).items() if v is kernel), None)
    return None if found is None else _Import(source, found, name)
