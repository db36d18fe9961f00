"""Read one parameter annotation (an evaluated runtime object) into a Param.

This is the signature form: `A: tl.Tensor[tl.float16, M, K]` with dims as
TypeVars (`bound=tl.dyn[int]` makes one dyn), `n: tl.dyn[int]`, `p: tl.ptr`,
`flag: bool`. TileLang's own spellings read the same way: `n: T.int32` is a
dyn scalar, `p: T.ptr` a pointer, and `T.Tensor[[M, K], T.float16]` (or
`T.Tensor((M, K), T.float16)`) a tensor. A dim may also be written without a
name: `int` or a literal size is a const dim, `tl.dyn[int]` a dyn one, and
`tl.dyn[int, "K"]` a named dyn dim shared by every tensor that uses it.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, ForwardRef, Literal, TypeVar, Union, get_args, get_origin

from tltyped.abi import check_host_scalar, element_type_as_parameter
from tltyped.errors import ArgumentTypeError, DefinitionError, DimSyntaxError
from tltyped.frontend import dims as dimlib
from tltyped.frontend.signature import DTypeSpec, Kind, Param, TensorSpec
from tltyped.types import in_body_grammar as grammar
from tltyped.types.dtypes import DType, DTypeName, argument_dtype, is_dtype_like
from tltyped.types.params import CONST, DYN, PTR, DimName, Marker, Tune
from tltyped.types.tensor import Tensor

_SCALARS = {int: "int32", float: "float32", bool: "bool"}


def is_tensor_annotation(annotation: object) -> bool:
    return annotation is Tensor or get_origin(annotation) is Tensor


def _tilelang_language() -> Any:
    """TileLang's language when something has imported it: no annotation can be one of its objects before."""
    return sys.modules.get("tilelang.language")


def tilelang_scalar(annotation: object) -> str | None:
    """The dtype name when `annotation` is a TileLang dtype such as `T.int32` (or its `DTypeName`)."""
    language = _tilelang_language()
    if isinstance(annotation, DTypeName) or (language is not None and isinstance(annotation, language.dtype)):
        return None if annotation == "handle" else str(annotation)
    return None


def is_pointer(annotation: object) -> bool:
    """`tl.ptr`, or TileLang's `T.ptr` (a function making a handle variable)."""
    language = _tilelang_language()
    return (language is not None and annotation is language.ptr) or _marker(annotation) is PTR


def parse_param(name: str, annotation: object, default: Any, dims: DimReader) -> Param:
    """A Param from a signature annotation, a tensor's sizes read by `dims`. A `tl.tune` default is a const's: on a
    tensor or run-time scalar the tuner would choose the value the kernel computes with by speed."""
    param = _parsed_param(name, annotation, default, dims)
    if isinstance(default, Tune) and param.kind is not Kind.CONST:
        raise DefinitionError(
            f"parameter {name!r}: a {param.kind.value} parameter cannot take a tl.tune default; tune a const (a "
            "parameter with a plain type, or none)"
        )
    return param


def _parsed_param(name: str, annotation: object, default: Any, dims: DimReader) -> Param:
    if annotation is inspect.Parameter.empty:
        return Param(name, Kind.CONST, default, annotation=annotation)
    if is_tensor_annotation(annotation):
        tensor = parse_tensor(name, get_args(annotation), dims)
        return Param(name, Kind.TENSOR, default, tensor=tensor)
    if is_pointer(annotation):
        return Param(name, Kind.PTR, default, scalar="handle")
    marker = _marker(annotation)
    if marker is DYN:
        base = get_args(annotation)[0]
        if base not in (int, float):
            raise DefinitionError(f"parameter {name!r}: dyn[{_name(base)}] is not supported; dyn takes int or float")
        return Param(name, Kind.DYN, default, scalar=_SCALARS[base])
    scalar = tilelang_scalar(annotation)
    if scalar is not None:
        return Param(name, Kind.DYN, default, scalar=check_host_scalar(name, parameter_dtype(name, scalar)).name)
    if isinstance(annotation, type) and issubclass(annotation, DType):
        raise DefinitionError(element_type_as_parameter(name, annotation))
    if _holds_a_tensor(annotation):
        raise DefinitionError(
            f"parameter {name!r}: a tensor inside {_name(get_origin(annotation))}[...] is not supported (it would be a "
            "const, keyed by identity); a kernel's tensors are parameters of their own, always given"
        )
    return Param(name, Kind.CONST, default, annotation=_read_alike(annotation))


def _read_alike(annotation: Any) -> Any:
    """The annotation with TileLang's dtype class as `DTypeName`, what `T.dtype` is before TileLang is imported
    (`Optional[T.dtype]` and `tuple[T.dtype, ...]` too): one annotation, whenever it is read."""
    language = _tilelang_language()
    if language is not None and annotation is language.dtype:
        return DTypeName
    args = get_args(annotation)
    if language is None or not args or get_origin(annotation) in (Literal, Annotated):
        return annotation
    read = tuple(_read_alike(arg) for arg in args)
    if all(new is old for new, old in zip(read, args)):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        return Union[read]
    return get_origin(annotation)[read]


def parse_returns(annotation: object) -> tuple[TensorSpec, ...] | None:
    """The tensors a return annotation states (`-> tl.Tensor[...]`, or a tuple of them; none for `-> None`), which
    each build checks the body's returned tensors against; None where it states anything else (unchecked: it is the
    type checker's)."""
    if annotation is None or annotation is type(None):
        return ()
    items = get_args(annotation) if get_origin(annotation) is tuple else (annotation,)
    if not items or not all(is_tensor_annotation(item) and get_args(item) for item in items):
        return None
    try:  # a returned tensor's `Any` dim is any size, unchecked, as an `int` one is (no argument fixes either)
        return tuple(parse_tensor("return", tuple(int if a is Any else a for a in get_args(item)), DimReader())
                     for item in items)
    except (DefinitionError, DimSyntaxError):
        return None


def _holds_a_tensor(annotation: object) -> bool:
    """`Optional[Tensor[...]]`, `tuple[Tensor[...], ...]`: an annotation with a tensor annotation inside."""
    return any(is_tensor_annotation(arg) or _holds_a_tensor(arg) for arg in get_args(annotation))


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


def parse_tensor(name: str, args: tuple[Any, ...], dims: DimReader) -> TensorSpec:
    """`Tensor[dtype, *dims]`, or TileLang's order `Tensor[[dims], dtype]`, its sizes read by `dims`."""
    if not args:
        raise DefinitionError(f"parameter {name!r}: Tensor needs a dtype and dims, e.g. Tensor[tl.float16, M, K]")
    if isinstance(args[0], (list, tuple)):
        if len(args) != 2:
            raise DefinitionError(f"parameter {name!r}: expected Tensor[[dims...], dtype]")
        dim_args, dtype_arg = tuple(args[0]), args[1]
    else:
        dtype_arg, dim_args = args[0], tuple(args[1:])
    sizes = tuple(dims.read(name, axis, d) for axis, d in enumerate(dim_args))
    return TensorSpec(_parse_dtype(name, dtype_arg), sizes)


def _parse_dtype(name: str, value: object) -> DTypeSpec:
    if isinstance(value, TypeVar):
        return DTypeSpec(var=value.__name__, var_dtypes=_variable_dtypes(name, value))
    return DTypeSpec(fixed=_fixed_dtype(name, value))


def _variable_dtypes(name: str, var: TypeVar) -> tuple[type[DType], ...]:
    """The dtypes a dtype TypeVar may be, which a stub declares it with so that type checkers refuse the others
    as the plugin does: its constraints (`TypeVar("DT", tl.float16, tl.bfloat16)`), or its bound
    (`bound=tl.float32`, or a union of dtypes, `bound=tl.float16 | tl.bfloat16`, which limits it as constraints
    do); none, any dtype, where neither names dtypes only (`bound=tl.DType`)."""
    if var.__constraints__:
        return tuple(_fixed_dtype(name, c) for c in var.__constraints__)
    bound = _unquoted(var.__bound__)
    members = [_unquoted(m) for m in get_args(bound)] if get_origin(bound) in (Union, types.UnionType) else [bound]
    return tuple(parameter_dtype(name, m) for m in members) if all(map(is_dtype_like, members)) else ()


def _fixed_dtype(name: str, value: object) -> type[DType]:
    value = _unquoted(value)
    if not is_dtype_like(value):
        raise DefinitionError(f"parameter {name!r}: unknown dtype {value!r} in Tensor annotation")
    return parameter_dtype(name, value)


def _unquoted(value: object) -> object:
    """typing wraps str arguments (and TileLang dtypes are `str`s) in a ForwardRef: the str."""
    return value.__forward_arg__ if isinstance(value, ForwardRef) else value


def parameter_dtype(name: str, value: object) -> type[DType]:
    """The dtype of what parameter `name` holds (one of the argument types: see `argument_dtype`)."""
    try:
        return argument_dtype(value)
    except ArgumentTypeError as exc:
        raise DefinitionError(f"parameter {name!r}: {exc}") from None


@dataclass
class DimReader:
    """How a tensor annotation's sizes read: a signature form's dim (a TypeVar, `int`, `tl.dyn[int]`) is declared in
    `kinds` (symbol -> dyn), an int is a literal size, and any other size is refused, but where a kernel's body
    evaluated the type (`Bt = T.Tensor[[K, M], T.float16]`, K and M dims the body declares, which evaluate to TIR
    variables): `body_size` reads those, as the same type written in a parameter's annotation in the body reads them."""

    kinds: dict[str, bool] = field(default_factory=dict)
    body_size: Callable[[object], dimlib.Dim] | None = None

    def read(self, name: str, axis: int, value: object) -> dimlib.Dim:
        """Size `axis` of parameter `name`'s tensor."""
        if isinstance(value, TypeVar):
            return self._declare(value.__name__, _marker(value.__bound__) is DYN)
        if value is int:  # an anonymous const dim: `Tensor[tl.float16, int, int]`
            return self._declare(grammar.anonymous_dim(name, axis), False)
        if _marker(value) is DYN and get_args(value)[0] is int:  # `dyn[int]` (anonymous) or `dyn[int, "K"]`
            names = [m.name for m in getattr(value, "__metadata__", ()) if isinstance(m, DimName)]
            return self._declare(names[0] if names else grammar.anonymous_dim(name, axis), True)
        if get_origin(value) is Literal:
            if len(get_args(value)) != 1:
                raise DefinitionError(
                    f"parameter {name!r}: dim {value!r} is one of several sizes; a kernel's dim is one int, or a "
                    "TypeVar for a size each call gives"
                )
            (value,) = get_args(value)
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return dimlib.literal(value)
            except DimSyntaxError as exc:
                raise DefinitionError(f"parameter {name!r}: {exc}") from None
        if self.body_size is not None:
            return self.body_size(value)
        raise DefinitionError(
            f"parameter {name!r}: dim {value!r} must be a TypeVar, an int, int, Literal[int] or tl.dyn[int, 'name']"
        )

    def _declare(self, symbol: str, is_dyn: bool) -> dimlib.Dim:
        if self.kinds.setdefault(symbol, is_dyn) != is_dyn:
            raise DefinitionError(f"dim {symbol!r} is declared both dyn and const")
        return dimlib.symbol(symbol)
