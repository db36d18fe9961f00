"""analyze(fn) -> KernelSignature: both declaration forms, one result.

The in-body form is desugared here exactly as the mypy plugin desugars it
statically: each in-body annotation of a parameter becomes that parameter's
type, and `T.const` / `T.dynamic` names become the dims it may use.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any

from tltyped.frontend import dims as dimlib
from tltyped.frontend.annotation import parse_param
from tltyped.frontend.body import BodyAnnotation, BodyInfo, ShapeAssert, analyze_body, shape_reference
from tltyped.frontend.signature import DefinitionError, DTypeSpec, Kind, KernelSignature, Param, ShapeCheck, TensorSpec
from tltyped.types.dtypes import as_dtype, is_dtype_like
from tltyped.types.tensor import Tensor


def analyze(fn: Callable[..., Any]) -> KernelSignature:
    name = fn.__name__
    parameters = inspect.signature(fn).parameters
    for p in parameters.values():
        if p.kind is p.POSITIONAL_ONLY:
            raise DefinitionError(f"{name}: positional-only parameter {p.name!r} is not supported; remove the `/`")
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise DefinitionError(f"{name}: variadic parameter {p.name!r} is not supported; name each parameter")
    body = analyze_body(fn, parameters)
    hints = _signature_hints(fn)
    env = _environment(fn)
    dim_kinds = dict(body.dim_kinds)
    params = []
    for p in parameters.values():
        in_body = body.annotations.get(p.name)
        if in_body is not None:
            if p.name in hints:
                raise DefinitionError(
                    f"{body.where(in_body.line)}: parameter {p.name!r} is annotated both in the signature and in the body"
                )
            params.append(_body_param(p.name, p.default, in_body, body, env, parameters))
        else:
            try:
                params.append(parse_param(p.name, hints.get(p.name, p.empty), p.default, dim_kinds))
            except DefinitionError as exc:
                raise DefinitionError(f"{name}: {exc}") from None
    signature = KernelSignature(name, tuple(params), dim_kinds, frozenset(body.annotations))
    _check_dims_bound(signature)
    checks = tuple(_shape_check(signature, a, body) for a in body.shape_asserts)
    return dataclasses.replace(signature, checks=checks)


def _shape_check(signature: KernelSignature, relation: ShapeAssert, body: BodyInfo) -> ShapeCheck:
    """`assert B.shape[0] == 2 * A.shape[0] + 1` -> a check between the parameters' dims."""
    where = body.where(relation.line)
    params = {p.name: p for p in signature.params}

    class _Dims(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            ref = shape_reference(node, params)
            param = params.get(ref[0]) if ref else None
            if ref is None or param is None or param.tensor is None or not 0 <= ref[1] < len(param.tensor.dims):
                raise DefinitionError(f"{where}: `{ast.unparse(node)}` is not a dim of a tensor parameter")
            return ast.parse(f"({param.tensor.dims[ref[1]].text})", mode="eval").body

    declared = {d: dimlib.symbol(d) for d in signature.dims}
    sides = [dimlib.from_ast(_Dims().visit(copy.deepcopy(side)), declared) for side in (relation.left, relation.right)]
    source = f"{ast.unparse(relation.left)} == {ast.unparse(relation.right)}"
    return ShapeCheck(sides[0], sides[1], source)


def _signature_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The evaluated annotations of the parameters (strings under `from __future__ import annotations`).

    Evaluated here rather than by `typing.get_type_hints`, which would read a
    TileLang dtype (a `str` subclass such as `T.float32`) as another forward reference.
    """
    env = _environment(fn)
    hints = {}
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        if name == "return":
            continue
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, env)  # noqa: S307
            except Exception as exc:
                raise DefinitionError(f"{fn.__name__}: cannot evaluate the annotation of {name!r}: {exc}") from exc
        hints[name] = annotation
    return hints


def _environment(fn: Callable[..., Any]) -> dict[str, Any]:
    """Names an in-body annotation may use: the module's globals and the closure."""
    env = dict(fn.__globals__)
    env.update(inspect.getclosurevars(fn).nonlocals)
    return env


def _is_tensor_class(value: object) -> bool:
    from tilelang.language.proxy import TensorProxy

    return value is Tensor or isinstance(value, TensorProxy)


def _evaluate(node: ast.expr, env: dict[str, Any]) -> Any:
    return eval(compile(ast.Expression(node), "<annotation>", "eval"), env)  # noqa: S307


def _body_param(
    name: str, default: Any, ann: BodyAnnotation, body: BodyInfo, env: dict[str, Any],
    parameters: typing.Mapping[str, inspect.Parameter],
) -> Param:
    node, where = ann.node, body.where(ann.line)
    try:
        if isinstance(node, ast.Subscript) and _is_tensor_class(_evaluate(node.value, env)):
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if isinstance(elts[0], (ast.List, ast.Tuple)):
                if len(elts) != 2:
                    raise DefinitionError(f"expected T.Tensor[[dims...], dtype] for {name!r}")
                dim_nodes, dtype_node = elts[0].elts, elts[1]
            else:
                dtype_node, dim_nodes = elts[0], elts[1:]
            dims = tuple(dimlib.from_ast(d, body.dims) for d in dim_nodes)
            return Param(name, Kind.TENSOR, default, tensor=TensorSpec(_body_dtype(dtype_node, env, parameters), dims))
        return parse_param(name, _evaluate(node, env), default, {})
    except (DefinitionError, dimlib.DimSyntaxError) as exc:
        raise DefinitionError(f"{where}: {exc}") from None
    except Exception as exc:
        raise DefinitionError(f"{where}: cannot read the annotation of {name!r}: {exc}") from None


def _body_dtype(node: ast.expr, env: dict[str, Any], parameters: typing.Mapping[str, inspect.Parameter]) -> DTypeSpec:
    """A fixed dtype, or (when it names const parameters such as `out_dtype`) an expression."""
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if used & set(parameters):
        return DTypeSpec(source=ast.unparse(node))
    value = _evaluate(node, env)
    if not is_dtype_like(value):
        raise DefinitionError(f"unknown dtype `{ast.unparse(node)}`")
    return DTypeSpec(fixed=as_dtype(value))


def _check_dims_bound(signature: KernelSignature) -> None:
    """Every dim must be read directly off some tensor, or its value is unknowable."""
    bound = signature.dim_sources()
    for dim in signature.dims:
        if dim not in bound:
            raise DefinitionError(
                f"{signature.name}: dim {dim!r} is declared but no tensor has it as a plain dim, "
                "so a call cannot determine it"
            )
