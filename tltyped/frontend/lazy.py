"""Lazy style: a factory whose body defines and returns a `@T.prim_func`.

    @tl.jit(out_idx=[-1])
    def matmul(M, N, K, block_M, block_N, block_K, dtype=T.float16):
        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
            ...
        return main

    kernel = matmul(1024, 1024, 1024, 128, 128, 32)   # the kernel for these values
    c = kernel(a, b)

The factory's arguments are consts: each distinct set of values is one
kernel, whose signature is the returned PrimFunc's (frontend/prim_func.py
reads it). This module holds what is needed before TileLang is imported:
telling a factory from an eager kernel at decoration, binding the factory's
arguments, and the signature's JSON form, which the disk cache keeps so that
a warm process gets a factory's kernel without running the factory (and so
without importing TileLang).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tltyped.errors import ArgumentTypeError, DefinitionError, DimSyntaxError
from tltyped.frontend import dims as dimlib
from tltyped.frontend.const_types import const_problem
from tltyped.types.source import function_ast
from tltyped.frontend.signature import DTypeSpec, Kind, KernelSignature, Param, TensorSpec
from tltyped.types.dtypes import as_dtype
from tltyped.types.params import Tune
from tltyped.types.values import describe


def is_factory(fn: Callable[..., Any]) -> bool:
    """Whether `fn` is lazy style: its body defines a function decorated `@T.prim_func` (read from the source)."""
    node, _ = function_ast(fn)
    return any(
        isinstance(inner, ast.FunctionDef) and any(_names_prim_func(d) for d in inner.decorator_list)
        for inner in ast.walk(node) if inner is not node
    )


def _names_prim_func(decorator: ast.expr) -> bool:
    """`@T.prim_func`, `@tilelang.language.prim_func`, `@prim_func`, each with or without a call."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "prim_func") or (
        isinstance(target, ast.Name) and target.id == "prim_func"
    )


def out_idx_items(name: str, out_idx: object) -> list[int]:
    """`jit(out_idx=...)`'s items, checked to be an int or a list or tuple of them (at decoration for a lazy
    kernel too, whose parameters, which the indices are checked against, are known at a factory call only)."""
    items = list(out_idx) if isinstance(out_idx, (list, tuple)) else [out_idx]
    ints = [i for i in items if isinstance(i, int) and not isinstance(i, bool)]
    if len(ints) != len(items):
        raise DefinitionError(f"{name}: out_idx must be an int or a list of ints, got {describe(out_idx)}")
    return ints


def out_indices(name: str, count: int, out_idx: int | Sequence[int] | None) -> tuple[int, ...]:
    """`jit(out_idx=...)` as indices into `count` parameters: an int or a list of ints, negative from the end."""
    if out_idx is None:
        return ()
    resolved = []
    for index in out_idx_items(name, out_idx):
        if not -count <= index < count:
            raise DefinitionError(f"{name}: out_idx {index!r} is not the index of one of its {count} parameters")
        resolved.append(index % count)
    if len(set(resolved)) != len(resolved):
        raise DefinitionError(f"{name}: out_idx {out_idx!r} names a parameter twice")
    return tuple(resolved)


def bind_factory(fn: Callable[..., Any], signature: inspect.Signature, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> dict[str, Any]:
    """The factory's arguments by name, defaults applied; each (each candidate of a `tl.tune` space) must be what a
    const must be (const_types.const_problem), its annotation aside (TileLang's factories annotate `M: int` and are
    given `T.dynamic("m")`): a kernel object is made once per set of values and served again for equal ones, so a
    tensor or an object compared by identity would be served the kernel made before its contents changed, and a
    value whose `__hash__` or `__eq__` raises would raise out of that lookup."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise ArgumentTypeError(f"{fn.__name__}: {exc}") from None
    bound.apply_defaults()
    for name, value in bound.arguments.items():
        for candidate in value.values if type(value) is Tune else (value,):
            problem = const_problem(inspect.Parameter.empty, candidate)
            if problem is not None:
                raise problem[0](f"{fn.__name__}: argument {name!r} {problem[1]}")
    return dict(bound.arguments)


# -- the signature's JSON form (the disk cache's factory records) ---------------------------


def signature_to_json(signature: KernelSignature) -> dict[str, Any]:
    """A factory kernel's signature as JSON: tensors of fixed dtypes and dims as text, dyn scalars, outputs, the dyn
    dims' dtypes."""
    return {
        "name": signature.name,
        "params": [_param_to_json(p) for p in signature.params],
        "outputs": [_param_to_json(p) for p in signature.outputs],
        "dims": dict(signature.dims),
        "scalar_dims": list(signature.scalar_dims),
        "dim_dtypes": dict(signature.dim_dtypes),
    }


def signature_from_json(data: Mapping[str, Any]) -> KernelSignature:
    """The signature `signature_to_json` wrote (a record that does not parse raises KeyError, TypeError or ValueError)."""
    dims = {str(name): bool(is_dyn) for name, is_dyn in data["dims"].items()}
    return KernelSignature(
        name=str(data["name"]),
        params=tuple(_param_from_json(p, dims) for p in data["params"]),
        dims=dims,
        outputs=tuple(_param_from_json(p, dims) for p in data["outputs"]),
        scalar_dims=tuple(str(n) for n in data["scalar_dims"]),
        dim_dtypes={str(name): str(dtype) for name, dtype in data["dim_dtypes"].items()},
    )


def _param_to_json(p: Param) -> dict[str, Any]:
    if p.tensor is None:
        return {"name": p.name, "kind": p.kind.value, "scalar": p.scalar}
    assert p.tensor.dtype.fixed is not None, "a factory kernel's tensors have fixed dtypes"
    strides = None if p.tensor.strides is None else [d.text for d in p.tensor.strides]
    return {"name": p.name, "kind": p.kind.value, "dtype": p.tensor.dtype.fixed.name,
            "dims": [d.text for d in p.tensor.dims], "strides": strides}


def _param_from_json(data: Mapping[str, Any], dims: Mapping[str, bool]) -> Param:
    kind = Kind(data["kind"])
    if kind is not Kind.TENSOR:
        return Param(str(data["name"]), kind, scalar=str(data["scalar"]))
    strides = data["strides"]
    tensor = TensorSpec(
        DTypeSpec(fixed=as_dtype(str(data["dtype"]))),
        tuple(parse_dim(str(text), dims) for text in data["dims"]),
        None if strides is None else tuple(parse_dim(str(text), dims) for text in strides),
    )
    return Param(str(data["name"]), kind, tensor=tensor)


def parse_dim(text: str, dims: Mapping[str, bool]) -> dimlib.Dim:
    """A dim from its text (`1024`, `m`, `m * 2 + 1`); its names must be among `dims`."""
    dim = dimlib.from_ast(ast.parse(text, mode="eval").body, {name: dimlib.symbol(name) for name in dims})
    unknown = set(dim.symbols) - set(dims)
    if unknown:
        raise DimSyntaxError(f"dim {text!r} names {', '.join(sorted(unknown))}, which is not a dim")
    return dim
