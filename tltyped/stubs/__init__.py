"""Typed .pyi stubs for a module's jit functions: `python -m tltyped.stubs MODULE` (see __main__.py).

A stub shows what the frontend understood, in the signature form, for IDEs and
type checkers that run no plugin: in-body annotations become parameter types,
dims become TypeVars (bound to int when dyn), and a derived dim reads as
`Annotated[Any, "N * 2 + 1"]` (any size to a type checker; the expression is
checked at run time). `tl.Tensor[...]` itself takes plain torch tensors.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import tltyped as tl
from tltyped.frontend import dims as dimlib
from tltyped.frontend.body import function_ast
from tltyped.frontend.signature import Kind, KernelSignature, Param, TensorSpec
from tltyped.templates import render

_CONST_TYPES = (bool, int, float, str)


@dataclass(frozen=True)
class _DimVar:
    name: str
    dyn: bool


@dataclass(frozen=True)
class _StubParam:
    name: str
    type: str
    default: bool


@dataclass(frozen=True)
class _StubFunction:
    name: str
    params: list[_StubParam]
    returns: str
    doc: str  # the docstring as a literal


def tensor_type(spec: TensorSpec) -> str:
    """`tl.Tensor[tl.float16, M, K]`, with literal dims as Literal and derived dims spelled out."""
    if spec.dtype.fixed is not None:
        dtype = f"tl.{'bool_' if spec.dtype.fixed.name == 'bool' else spec.dtype.fixed.__name__}"
    else:
        dtype = spec.dtype.var or "Any"
    return f"tl.Tensor[{', '.join([dtype, *(_dim(d) for d in spec.dims)])}]"


def _dim(dim: dimlib.Dim) -> str:
    if dim.is_literal:
        return f"Literal[{dim.value}]"
    if dim.is_symbol:
        return dim.text
    return f'Annotated[Any, "{dim.text}"]'


def _param_type(p: Param) -> str:
    if p.kind is Kind.TENSOR:
        return "torch.Tensor" if p.tensor is None else tensor_type(p.tensor)  # None: computed from consts
    if p.kind is Kind.PTR:
        return "tl.ptr"
    if p.kind is Kind.DYN:
        return "float" if (p.scalar or "").startswith(("float", "bfloat")) else "bool" if p.scalar == "bool" else "int"
    if p.has_default and type(p.default) in _CONST_TYPES:
        return type(p.default).__name__
    return "Any"


def _returns(fn: tl.JitFunction[..., Any]) -> str:
    """The return annotation, read through the same parser; else None when nothing is returned."""
    node, _ = function_ast(fn.__wrapped__)
    returns_value = any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(node))
    annotation = node.returns
    if annotation is None:
        return "Any" if returns_value else "None"
    text = ast.unparse(annotation)
    return text if all(part in text for part in ("tl.", "Tensor")) or text == "None" else "Any"


def _docstring(text: str) -> str:
    """`text` as a triple-quoted string literal that reads back as `text`, whatever it holds: backslashes
    and double quotes are escaped (a quote at its end would close the literal early), and so is every
    character that is not printable."""
    escaped = (f"\\{c}" if c in '\\"' else c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return f'"""{"".join(escaped)}"""'


def render_stub(module: ModuleType) -> str:
    """The .pyi text for every jit function defined in `module`."""
    functions = []
    dims: dict[str, bool] = {}
    for name, value in vars(module).items():
        if not isinstance(value, tl.JitFunction) or value.__module__ != module.__name__ or name != value.__name__:
            continue
        signature: KernelSignature = value.signature
        for dim, is_dyn in signature.dims.items():
            if dims.setdefault(dim, is_dyn) != is_dyn:
                dims[dim] = False  # one TypeVar per name: unbound, the looser of the two
        params = [_StubParam(p.name, _param_type(p), p.has_default) for p in signature.params]
        doc = (value.__doc__ or "").strip().splitlines()[0] if value.__doc__ else f"Kernel {name}."
        doc += "".join(f" Checks {check.source}." for check in signature.checks)
        functions.append(_StubFunction(name, params, _returns(value), _docstring(doc)))
    return render(
        "stub.pyi.j2", module=module.__name__, functions=functions,
        dims=[_DimVar(name, is_dyn) for name, is_dyn in sorted(dims.items())],
    )
