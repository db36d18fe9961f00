"""What a lazy-style factory's kernel takes, read from the `@T.prim_func` in its source.

    @tl.jit(out_idx=[-1])
    def matmul(M, N, K, dtype=T.float16):
        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")): ...
        return main

The runtime learns the kernel's signature by running the factory; a type
checker cannot, and neither do the stubs (running it imports TileLang and
needs the factory's arguments). What the source states is kept: a tensor's
rank where its shape is a tuple or list literal, an int dim, and a dtype
written as a name (`"float32"`, `T.float16`). Dims and dtypes given by the
factory's arguments (`M`, `dtype`) are a value per kernel object, unknown
here. A factory may return one of several prim_funcs from branches
(`if split > 1: return one`, `else: return two`); what its kernel objects
take is chosen once, here (`factory_kernel`). The stub generator
(tltyped/stubs) and the mypy plugin (mypy_plugin/lazy.py) both read
factories with this module, so that pyright with the stubs and mypy with
the plugin type a kernel object alike. It imports neither torch nor mypy.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tltyped.types.dtypes import BY_NAME, UNSTATED_TENSOR_DTYPE
from tltyped.types.source import annotated_parameter

_DTYPE_POSITION = {"Tensor": 1, "Buffer": 1, "StridedTensor": 2}
"""A prim_func's tensor annotations (any other is a scalar's), and where each takes its dtype: after the
shape (`T.Tensor((M, K), dtype)`), or after the shape and strides (`T.StridedTensor(shape, strides, dtype)`)."""


@dataclass(frozen=True)
class PrimFuncParam:
    """One parameter of a prim_func. For a tensor, `dims` holds each dim's size where the source writes an int
    (else None), or is None itself when the rank is not written literally; `dtype` is the name of a
    tltyped dtype class (`float16`, `bool_`) where the source names one."""

    name: str
    is_tensor: bool
    dims: tuple[int | None, ...] | None = None
    dtype: str | None = None

    @property
    def scalar(self) -> str | None:
        """A scalar's Python type (`T.int32`: int, `T.float32`: float); None for a tensor or an unknown scalar."""
        if self.is_tensor or self.dtype is None:
            return None
        return "float" if self.dtype.startswith(("float", "bfloat")) else "bool" if self.dtype == "bool_" else "int"


@dataclass(frozen=True)
class FactoryKernel:
    """What a factory's kernel objects take: `params`, those of every prim_func it returns where they all agree;
    None where they differ (which one a kernel object runs is the factory's choice per call, unknown statically,
    so it takes any call and returns Any)."""

    params: tuple[PrimFuncParam, ...] | None


def factory_kernel(factory: ast.FunctionDef) -> FactoryKernel | None:
    """The kernel objects of `factory`; None when it returns no prim_func (it is not a lazy-style factory)."""
    signatures = {tuple(params(returned)) for returned in returned_prim_funcs(factory)}
    if not signatures:
        return None
    return FactoryKernel(signatures.pop() if len(signatures) == 1 else None)


def returned_prim_funcs(factory: ast.FunctionDef) -> list[ast.FunctionDef]:
    """Every `@T.prim_func` (or `@prim_func`) the factory defines and returns by name, in the order of its returns:
    each `return` of its own, at any depth of its blocks (`if split > 1: return one` / `else: return two`), not one
    of a nested def. A name defined in several branches may be any of its definitions."""
    statements = _own_statements(factory.body)
    defined: dict[str, list[ast.FunctionDef]] = {}
    for stmt in statements:
        if isinstance(stmt, ast.FunctionDef) and any(_names_prim_func(d) for d in stmt.decorator_list):
            defined.setdefault(stmt.name, []).append(stmt)
    returned: list[ast.FunctionDef] = []
    for stmt in statements:
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name):
            returned += [found for found in defined.get(stmt.value.id, []) if found not in returned]
    return returned


def _own_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """A body's statements at any depth of blocks (if/else, loops, with, try, match); not those inside a nested
    def or class."""
    found: list[ast.stmt] = []
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        blocks: list[list[ast.stmt]] = [getattr(stmt, name, []) for name in ("body", "orelse", "finalbody")]
        blocks += [part.body for part in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]]
        for block in blocks:
            found += _own_statements(block)
    return found


def _names_prim_func(decorator: ast.expr) -> bool:
    return _last_name(decorator.func if isinstance(decorator, ast.Call) else decorator) == "prim_func"


def params(prim_func: ast.FunctionDef) -> list[PrimFuncParam]:
    """The prim_func's parameters, in order, each read from its annotation in the signature or, where the
    signature has none, at the top of the body (`A: T.Tensor[[M, K], T.float16]`, as TileLang reads it)."""
    names = [arg.arg for arg in prim_func.args.args]
    in_body: dict[str, ast.expr] = {}
    for stmt in prim_func.body:
        if (annotated := annotated_parameter(stmt, names)) is not None:
            in_body.setdefault(*annotated)
    return [read_param(arg.arg, arg.annotation or in_body.get(arg.arg)) for arg in prim_func.args.args]


def read_param(name: str, annotation: ast.expr | None) -> PrimFuncParam:
    """A parameter from its annotation: a tensor in TileLang's call form (`T.Tensor((M, K), dtype)`) or subscript
    form (`T.Tensor[(M, K), dtype]`, `T.Tensor[(M, K)]`: see `is_shape_only`), of dtypes.UNSTATED_TENSOR_DTYPE
    where it names no dtype, as the runtime reads it; else a scalar (`T.int32`)."""
    unstated: ast.expr | None = ast.Constant(UNSTATED_TENSOR_DTYPE.name)
    if isinstance(annotation, ast.Call):
        args: dict[int | str, ast.expr] = {**dict(enumerate(annotation.args)), **{k.arg or "": k.value for k in annotation.keywords}}
        tensor_class, default_dtype = _last_name(annotation.func), unstated
    elif isinstance(annotation, ast.Subscript):
        parts = subscript_parts(annotation.slice)
        args, tensor_class = dict(enumerate(parts)), _last_name(annotation.value)
        default_dtype = unstated if is_shape_only(annotation.slice) else None
    else:
        return PrimFuncParam(name, False, dtype=_dtype(annotation))
    position = _DTYPE_POSITION.get(tensor_class or "")
    if position is None:
        return PrimFuncParam(name, False, dtype=_dtype(annotation))
    dtype = args.get(position, args.get("dtype", default_dtype))
    return PrimFuncParam(name, True, _dims(args.get(0, args.get("shape"))), _dtype(dtype))


def subscript_parts(index: ast.expr) -> list[ast.expr]:
    """`T.Tensor[...]`'s parts as the call form's positional arguments (shape, then dtype): the parts of a
    subscript that states only a shape (`is_shape_only`) are all that shape, as one tuple."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return [ast.Tuple(list(parts), ast.Load())] if is_shape_only(index) else list(parts)


def is_shape_only(index: ast.expr) -> bool:
    """Whether the subscript `T.Tensor[index]` states a shape and no dtype, read from its spelling alone.

    Python hands `T.Tensor[(M, K)]` over as `T.Tensor[M, K]`, and the runtime
    (types/tensor.py `shape_and_dtype`, after TileLang's `TensorProxy.__getitem__`)
    decides by the parts' values: none a list, tuple or dtype makes them all
    the shape, of the unstated dtype. Values are unknown here (`M` may be a
    factory's argument, and `T.Tensor[(N), dtype]` takes one by name), so
    the parts are the shape only where no part can be a dtype: each is an int
    or arithmetic (`T.Tensor[128, 64]`, `T.Tensor[N * 2]`), or they are
    written as one parenthesised tuple (`T.Tensor[(M, K)]`, `T.Tensor[(128,)]`,
    which TileLang's examples write for a shape, never for a shape and a
    dtype). A name alone (`T.Tensor[M, K]`, `T.Tensor[(N), dtype]`) leaves
    it open: the tensor's rank and dtype stay unknown (Any).
    """
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    if not parts or any(isinstance(p, (ast.Tuple, ast.List)) or _dtype(p) is not None for p in parts):
        return False
    if all(_is_arithmetic(p) for p in parts):
        return True
    first, last = parts[0], parts[-1]
    return (  # one tuple in parentheses: its span starts before its first part and ends after its last
        isinstance(index, ast.Tuple) and (index.lineno, index.col_offset) < (first.lineno, first.col_offset)
        and (index.end_lineno or 0, index.end_col_offset or 0) > (last.end_lineno or 0, last.end_col_offset or 0)
    )


def _is_arithmetic(part: ast.expr) -> bool:
    """An int, or `+ - * //` of ints and names (`N * 2`): a dim, never a dtype."""
    if isinstance(part, ast.Constant):
        return type(part.value) is int
    if isinstance(part, ast.BinOp):
        return all(_is_arithmetic(p) or isinstance(p, ast.Name) for p in (part.left, part.right))
    return isinstance(part, ast.UnaryOp) and (_is_arithmetic(part.operand) or isinstance(part.operand, ast.Name))


def _dims(shape: ast.expr | None) -> tuple[int | None, ...] | None:
    if not isinstance(shape, (ast.Tuple, ast.List)):
        return None
    return tuple(
        d.value if isinstance(d, ast.Constant) and type(d.value) is int else None for d in shape.elts
    )


def _dtype(dtype: ast.expr | None) -> str | None:
    """The dtype class a dtype written as a name denotes (`"float32"`, `T.float16`, `tl.bfloat16`)."""
    named = dtype.value if isinstance(dtype, ast.Constant) and isinstance(dtype.value, str) else (
        dtype.attr if isinstance(dtype, ast.Attribute) else None
    )
    found = BY_NAME.get(named) if named is not None else None
    return None if found is None else found.__name__


def _last_name(expr: ast.expr | None) -> str | None:
    """`prim_func` of `T.prim_func` or of `prim_func`; None for anything but a name or attribute."""
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Name):
        return expr.id
    return None
