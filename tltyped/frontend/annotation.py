"""Read one parameter annotation (an evaluated runtime object) into a Param.

This is the signature form: `A: tl.Tensor[tl.float16, M, K]` with dims as
TypeVars (`bound=tl.dyn[int]` makes one dyn), `n: tl.dyn[int]`, `p: tl.ptr`,
`flag: bool`. TileLang's own spellings read the same way: `n: T.int32` is a
dyn scalar and `T.Tensor[[M, K], T.float16]` a tensor.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any, ForwardRef, Literal, TypeVar, get_args, get_origin

from tltyped.frontend import dims as dimlib
from tltyped.frontend.signature import DefinitionError, DTypeSpec, Kind, Param, TensorSpec
from tltyped.types.dtypes import as_dtype, is_dtype_like
from tltyped.types.params import CONST, DYN, PTR, Marker, Tune
from tltyped.types.tensor import Tensor

_SCALARS = {int: "int32", float: "float32", bool: "bool"}


def is_tensor_annotation(annotation: object) -> bool:
    return annotation is Tensor or get_origin(annotation) is Tensor


def tilelang_scalar(annotation: object) -> str | None:
    """The dtype name when `annotation` is a TileLang dtype object such as `T.int32`."""
    import tilelang.language as tl_language

    if isinstance(annotation, tl_language.dtype) and annotation != "handle":
        return str(annotation)
    return None


def parse_param(name: str, annotation: object, default: Any, dim_kinds: dict[str, bool]) -> Param:
    """A Param from a signature annotation; `dim_kinds` collects the dims it declares."""
    if isinstance(default, Tune) or annotation is inspect.Parameter.empty:
        return Param(name, Kind.CONST, default, annotation=annotation)
    if is_tensor_annotation(annotation):
        return Param(name, Kind.TENSOR, default, tensor=parse_tensor(name, get_args(annotation), dim_kinds))
    marker = _marker(annotation)
    if marker is DYN:
        base = get_args(annotation)[0]
        if base not in (int, float):
            raise DefinitionError(f"parameter {name!r}: dyn[{_name(base)}] is not supported; dyn takes int or float")
        return Param(name, Kind.DYN, default, scalar=_SCALARS[base])
    if marker is PTR:
        return Param(name, Kind.PTR, default, scalar="handle")
    scalar = tilelang_scalar(annotation)
    if scalar is not None:
        return Param(name, Kind.DYN, default, scalar=scalar)
    return Param(name, Kind.CONST, default, annotation=annotation)


def _marker(annotation: object) -> Marker | None:
    if get_origin(annotation) is not Annotated:
        return None
    for meta in getattr(annotation, "__metadata__", ()):
        if meta in (DYN, PTR, CONST):
            marker: Marker = meta
            return marker
    return None


def _name(value: object) -> str:
    return getattr(value, "__name__", repr(value))


def parse_tensor(name: str, args: tuple[Any, ...], dim_kinds: dict[str, bool]) -> TensorSpec:
    """`Tensor[dtype, *dims]`, or TileLang's order `Tensor[[dims], dtype]`."""
    if not args:
        raise DefinitionError(f"parameter {name!r}: Tensor needs a dtype and dims, e.g. Tensor[tl.float16, M, K]")
    if isinstance(args[0], (list, tuple)):
        if len(args) != 2:
            raise DefinitionError(f"parameter {name!r}: expected Tensor[[dims...], dtype]")
        dim_args, dtype_arg = tuple(args[0]), args[1]
    else:
        dtype_arg, dim_args = args[0], tuple(args[1:])
    return TensorSpec(_parse_dtype(name, dtype_arg), tuple(_parse_dim(name, d, dim_kinds) for d in dim_args))


def _parse_dtype(name: str, value: object) -> DTypeSpec:
    if isinstance(value, ForwardRef):  # typing wraps str arguments, and TileLang dtypes are `str`s
        value = value.__forward_arg__
    if isinstance(value, TypeVar):
        return DTypeSpec(var=value.__name__)
    if is_dtype_like(value):
        return DTypeSpec(fixed=as_dtype(value))
    raise DefinitionError(f"parameter {name!r}: unknown dtype {value!r} in Tensor annotation")


def _parse_dim(name: str, value: object, dim_kinds: dict[str, bool]) -> dimlib.Dim:
    if isinstance(value, TypeVar):
        is_dyn = _marker(value.__bound__) is DYN
        previous = dim_kinds.setdefault(value.__name__, is_dyn)
        if previous != is_dyn:
            raise DefinitionError(f"dim {value.__name__!r} is declared both dyn and const")
        return dimlib.symbol(value.__name__)
    if get_origin(value) is Literal:
        (value,) = get_args(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return dimlib.literal(value)
    raise DefinitionError(
        f"parameter {name!r}: dim {value!r} must be a TypeVar, an int or Literal[int]"
    )
