"""The slow path's view of a call: validate every argument and bind the dims.

The fast path checks nothing static: a call whose dtypes, ranks, const dims,
layouts, devices or const values differ from a compiled kernel's misses the
cache and lands here, where each mismatch becomes an error that names the
parameter, what was expected and what came.

A tensor passed to a `ptr` parameter stands for its data pointer (as in
TileLang): the binder checks it is on the call's device and records the
address.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_origin

import torch

from tltyped.abi import ALIGNMENT
from tltyped.errors import ArgumentTypeError, ArgumentValueError
from tltyped.frontend.const_types import const_problem
from tltyped.frontend.signature import KernelSignature, Kind, Param
from tltyped.types import dim_grammar
from tltyped.types.dtypes import (
    PACKING, DType, as_dtype, is_packed, logical_sizes, packed_storage, storage_sizes, to_torch,
)
from tltyped.types.params import Tune
from tltyped.types.tensor import Tensor, shape_and_dtype
from tltyped.types.values import describe, shown_size

_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)  # a tracer's values


def _specialised(value: Any) -> Any:
    """A const as the kernel is built for it: a tracer's symbolic int, float or bool becomes its value (the
    tracer guards on it, as on any size a program specialises on); any other value as it is."""
    for symbolic, concrete in zip(_SYMBOLIC, (int, float, bool)):
        if issubclass(type(value), symbolic):
            return concrete(value)
    return value


def _has_value(symbolic: Any) -> bool:
    """Whether a tracer's symbolic scalar stands for an input's value (the tracer can guard on it), not for data
    the program computes (a tensor's `.item()`)."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    return not free_unbacked_symbols(symbolic)


@dataclass
class Bound:
    """A validated call: values, dims and tensor facts, keyed by parameter name."""

    values: dict[str, Any]
    dims: dict[str, int] = field(default_factory=dict)
    dim_origin: dict[str, str] = field(default_factory=dict)  # dim -> "A, axis 1"
    dtypes: dict[str, type[DType]] = field(default_factory=dict)
    dtype_vars: dict[str, type[DType]] = field(default_factory=dict)  # dtype TypeVar -> bound dtype
    strides: dict[str, tuple[int, ...] | None] = field(default_factory=dict)
    device: torch.device | None = None


class Binder:
    def __init__(self, signature: KernelSignature, env: Mapping[str, Any]) -> None:
        self.signature = signature
        self.env = env

    def _fail(self, kind: type[Exception], message: str) -> Exception:
        return kind(f"{self.signature.name}: {message}")

    def bind(self, args: Sequence[Any], *, allow_meta: bool = False) -> Bound:
        params = self.signature.params
        if len(args) != len(params):  # the generated fast path always passes every parameter
            raise self._fail(ArgumentTypeError, f"expected {len(params)} arguments, got {len(args)}")
        bound = Bound(dict(zip((p.name for p in params), args)))
        for p in params:
            if p.kind is Kind.CONST:
                bound.values[p.name] = _specialised(bound.values[p.name])
                self._check_const(p, bound.values[p.name])
            elif p.kind is Kind.DYN:
                if issubclass(type(bound.values[p.name]), (torch.SymFloat, torch.SymBool)) and _has_value(bound.values[p.name]):
                    # an input the compiler made dynamic: the op takes a `float`/`bool`, as torch's own ops do
                    bound.values[p.name] = _specialised(bound.values[p.name])
                self._check_scalar(p, bound.values[p.name])
            elif p.kind is Kind.PTR and not issubclass(type(bound.values[p.name]), torch.Tensor):
                self._pointer(p, bound.values[p.name], bound, allow_meta)  # an address, checked as the launcher does
        for p in self.signature.tensors:
            self._bind_tensor(p, bound.values[p.name], bound, allow_meta)
        for p in params:
            if p.kind is Kind.PTR:  # a tensor's data pointer, once the call's device is known
                bound.values[p.name] = self._pointer(p, bound.values[p.name], bound, allow_meta)
        for p in self.signature.tensors:
            self._solve_dims(p, bound.values[p.name], bound)
        for p in self.signature.outputs:
            bound.dtypes[p.name] = self._expected_dtype(p, bound, None)
        for name in self.signature.scalar_dims:
            if name not in bound.dims:  # no input's size gives it (it sizes outputs): the scalar gives it
                bound.dims[name] = bound.values[name]
                bound.dim_origin[name] = f"argument {name!r}"
            elif bound.values[name] != bound.dims[name]:
                raise self._fail(
                    ArgumentValueError, f"argument {name!r} = {bound.values[name]}, but it is dim {name} of "
                    f"{bound.dim_origin[name]}, which is {bound.dims[name]}",
                )
        for p in self.signature.tensors:
            self._check_derived_dims(p, bound.values[p.name], bound)
        for dim in self.signature.dyn_dims:  # a traced size (a SymInt) is left to the real call: no guard on it
            if type(bound.dims[dim]) is int:
                _check_dim_fits(self.signature, dim, bound.dims[dim], f"from {bound.dim_origin[dim]}")
        for check in self.signature.checks:
            left, right = check.left.evaluate(bound.dims), check.right.evaluate(bound.dims)
            if left != right:
                symbols = sorted({*check.left.symbols, *check.right.symbols})
                given = ", ".join(f"{s} = {shown_size(bound.dims[s])} from {bound.dim_origin[s]}" for s in symbols)
                raise self._fail(
                    ArgumentValueError, f"shape check `{check.source}` fails: {check.sides[0]} is {left}, not {right}"
                    + (f" ({given})" if given else "") + (f": {check.message}" if check.message else ""),
                )
        return bound

    def _check_const(self, p: Param, value: Any) -> None:
        """A const (each candidate of a tuning space) must be a cache key and of its annotation's type. A default
        that is not (`sizes=[64, 128]`) is refused at each call that leaves it out, saying it is the default: the
        call passed nothing for the parameter the message names."""
        for candidate in value.values if type(value) is Tune else (value,):
            problem = const_problem(p.annotation, candidate)
            if problem is not None:
                outputs = ", ".join(repr(o.name) for o in self.signature.outputs)
                passed_an_output = issubclass(type(candidate), torch.Tensor) and outputs
                defaulted = p.has_default and value is p.default
                raise self._fail(problem[0], f"const parameter {p.name!r} {problem[1]}" + (
                    f" (if it was meant for {outputs}: the kernel allocates and returns it, out_idx, and a call does not "
                    "pass it)" if passed_an_output else "") + (
                    " (it is the parameter's default: pass a value, or change the default)"
                    if defaulted else ""))

    def _pointer(self, p: Param, value: Any, bound: Bound, allow_meta: bool) -> int:
        """A `ptr` argument's address: an int as given, or a CUDA tensor's data pointer (a tracer's has none)."""
        if issubclass(type(value), torch.Tensor):  # never `value.__class__`, which a value may fake
            if traced(value):
                raise self._fail(
                    ArgumentTypeError, f"ptr parameter {p.name!r} cannot be traced (a traced tensor has no address; "
                    "declare the parameter a tensor to pass it under a tracer)",
                )
            self._check_device(p, value, bound, allow_meta)
            return int(value.data_ptr())
        if allow_meta and _is_pointer_placeholder(value):  # `fn.compile(A=T.ptr(), ...)`: any address, as in TileLang
            return 0
        if type(value) is not int or not 0 <= value < 2**64:
            raise self._fail(
                ArgumentTypeError, f"ptr parameter {p.name!r} expects a device address (an int from 0 to 2**64 - 1) "
                f"or a CUDA tensor, got {describe(value)}"
            )
        return value

    def _check_scalar(self, p: Param, value: Any) -> None:
        """The values the launcher converts: exact ints (no bools), ints or floats (or a float's subclass), bools,
        non-negative addresses; under a tracer, a symbolic int for a dyn int (the op takes a SymInt: torch_op.py),
        whose value the real call checks."""
        scalar = p.scalar or ""
        if issubclass(type(value), _SYMBOLIC):
            if issubclass(type(value), torch.SymInt) and p.scalar_type is int:
                return
            raise self._fail(
                ArgumentTypeError, f"dyn parameter {p.name!r} expects a {scalar} fixed when the program is traced, got "
                f"{describe(value)} (a traced value: a tensor's `.item()`, or an input the compiler made dynamic); "
                "pass a Python value, or compute it in the kernel from a tensor",
            )
        if p.scalar_type is bool:
            if type(value) is not bool:
                raise self._fail(ArgumentTypeError, f"dyn parameter {p.name!r} expects a bool, got {describe(value)}")
        elif p.scalar_type is float:
            is_float = issubclass(type(value), float)  # a float's subclass too (numpy's float64); the type, not a
            if type(value) is not int and not is_float:  # `__class__` that a hostile object may override
                raise self._fail(ArgumentTypeError, f"dyn parameter {p.name!r} expects a float, got {describe(value)}")
            magnitude = math.fabs(value) if is_float else abs(value)  # the raw double, as the launcher reads it
            if magnitude > torch.finfo(to_torch(scalar)).max and not (is_float and math.isinf(value)):
                raise self._fail(ArgumentValueError, f"dyn parameter {p.name!r} = {describe(value)} does not fit in {scalar}")
        elif type(value) is not int:
            raise self._fail(ArgumentTypeError, f"dyn parameter {p.name!r} expects an int, got {describe(value)}")
        else:
            low, high = as_dtype(scalar).value_range()
            if not low <= value <= high:
                raise self._fail(ArgumentValueError, f"dyn parameter {p.name!r} = {describe(value)} does not fit in {scalar}")

    def _bind_tensor(self, p: Param, t: Any, bound: Bound, allow_meta: bool) -> None:
        spec = p.tensor
        assert spec is not None
        if not issubclass(type(t), torch.Tensor):  # never `t.__class__`, which a value may fake
            raise self._fail(ArgumentTypeError, f"argument {p.name!r} expects a torch tensor {spec}, got {describe(t)}")
        self._check_device(p, t, bound, allow_meta)
        if t.layout is not torch.strided:  # before anything reads strides or memory, which such a tensor may not have
            raise self._fail(
                ArgumentValueError, f"argument {p.name!r} is a {str(t.layout).removeprefix('torch.')} tensor; kernels "
                f"take dense (strided) tensors, whose elements lie in memory at their strides: pass a dense copy "
                f"({p.name}.to_dense() for a sparse one)",
            )
        if not without_data(t) and t.numel() and not _has_memory(t):
            raise self._fail(
                ArgumentValueError, f"argument {p.name!r} is a {type(t).__qualname__} with no memory of its own "
                f"(a tensor subclass without storage); kernels take tensors whose data is on the device",
            )
        dtype = self._check_dtype(p, t, bound)
        if t.is_neg() or t.is_conj():
            raise self._fail(
                ArgumentValueError, f"argument {p.name!r} is a {'negated' if t.is_neg() else 'conjugated'} view "
                f"(torch's lazy {'negative' if t.is_neg() else 'conjugate'} bit, as `.conj().imag` gives): its memory "
                f"holds other values than its elements; pass {p.name}.resolve_neg().resolve_conj()",
            )
        if t.dim() != len(spec.dims):
            raise self._fail(
                ArgumentValueError, f"argument {p.name!r} expects rank {len(spec.dims)} ({spec}), got rank {t.dim()} with shape {tuple(t.shape)}"
            )
        if is_packed(dtype) and t.dim() and t.shape[-1] > 1 and t.stride(-1) != 1:
            raise self._fail(
                ArgumentValueError, f"argument {p.name!r} holds {dtype.name} packed two values a byte along its "
                f"innermost dim, whose stride must be 1 byte, got {t.stride(-1)} (shape {tuple(t.shape)}, strides "
                f"{tuple(t.stride())}); pass {p.name}.contiguous()",
            )
        shape, strides = _logical(t, dtype)
        sizes = [(f"dim {axis}", f"axis {axis}", dim, size) for axis, (dim, size) in enumerate(zip(spec.dims, shape))]
        sizes += [(f"stride {axis}", f"stride {axis}", dim, st) for axis, (dim, st) in enumerate(zip(spec.strides or (), strides))]
        for what, where, dim, size in sizes:
            if dim.is_literal and dim.value != size:
                raise self._fail(ArgumentValueError, f"argument {p.name!r}: {what} must be {dim.value}, got {shown_size(size)}")
            if dim.is_symbol:
                seen = bound.dims.setdefault(dim.text, size)
                origin = bound.dim_origin.setdefault(dim.text, f"{p.name}, {where}")
                if seen != size:
                    raise self._fail(ArgumentValueError, f"dim {dim.text}: {shown_size(seen)} (from {origin}) vs {shown_size(size)} "
                                     f"(from {p.name}, {where})")
        bound.dtypes[p.name] = dtype
        bound.strides[p.name] = None if t.is_contiguous() or spec.strides is not None else strides
        if not without_data(t) and t.data_ptr() % ALIGNMENT:
            raise self._fail(
                ArgumentValueError,
                f"argument {p.name!r}: data pointer is not {ALIGNMENT}-byte aligned "
                f"(a view at storage offset {t.storage_offset()}); pass a copy ({p.name}.clone())",
            )

    def _check_device(self, p: Param, t: torch.Tensor, bound: Bound, allow_meta: bool) -> None:
        kinds = ("cuda", "meta") if allow_meta else ("cuda",)
        if t.device.type not in kinds:
            where = "CUDA or meta" if allow_meta else "CUDA"
            raise self._fail(ArgumentValueError, f"argument {p.name!r} is on {t.device}; kernels take {where} tensors")
        if bound.device is None:
            bound.device = t.device
        elif t.device != bound.device:
            first = next(q.name for q in self.signature.tensors)
            raise self._fail(ArgumentValueError, f"argument {p.name!r} is on {t.device} but {first!r} is on {bound.device}")

    def _check_dtype(self, p: Param, t: torch.Tensor, bound: Bound) -> type[DType]:
        assert p.tensor is not None
        if p.tensor.dtype.var is None:
            expected = self._expected_dtype(p, bound, None)
            if is_packed(expected):  # a sub-byte type: held packed in a byte-sized torch dtype (dtypes.PACKED_DTYPES)
                storage = packed_storage(expected)
                if t.dtype not in storage:
                    shown = " or ".join(str(d) for d in storage)
                    raise self._fail(
                        ArgumentTypeError, f"argument {p.name!r} expects dtype {expected.name} (held packed two values "
                        f"a byte: a {shown} tensor with the innermost dim halved), got {t.dtype}",
                    )
                return expected
        try:
            actual = as_dtype(t.dtype)
        except ValueError:
            raise self._fail(ArgumentTypeError, f"argument {p.name!r} has unsupported dtype {t.dtype}") from None
        expected = self._expected_dtype(p, bound, actual)
        if expected is not actual:
            raise self._fail(ArgumentTypeError, f"argument {p.name!r} expects dtype {expected.name}, got {actual.name}")
        assert p.tensor is not None
        variable, allowed = p.tensor.dtype.var, p.tensor.dtype.var_dtypes
        if allowed and actual not in allowed:  # a dtype variable's constraints or bound, as type checkers read them
            shown = " or ".join(d.name for d in allowed)
            raise self._fail(ArgumentTypeError, f"argument {p.name!r} expects dtype {variable} ({shown}), got {actual.name}")
        return actual

    def _expected_dtype(self, p: Param, bound: Bound, actual: type[DType] | None) -> type[DType]:
        """The dtype `p` must have in this call; `actual` binds a dtype variable seen first here."""
        spec = p.tensor
        assert spec is not None
        if spec.dtype.source is not None:
            return self._evaluate_dtype(p, spec.dtype.source, bound)
        if spec.dtype.var is not None:
            if actual is None and spec.dtype.var not in bound.dtype_vars:
                raise self._fail(ArgumentTypeError, f"output {p.name!r}: dtype {spec.dtype.var} is not bound by any input")
            return bound.dtype_vars.setdefault(spec.dtype.var, actual)  # type: ignore[arg-type]
        assert spec.dtype.fixed is not None
        return spec.dtype.fixed

    def _evaluate_dtype(self, p: Param, source: str, bound: Bound) -> type[DType]:
        consts = {q.name: bound.values[q.name] for q in self.signature.params if q.kind is Kind.CONST}
        try:
            return evaluate_dtype(source, self.env, consts)
        except Exception as exc:
            raise self._fail(ArgumentTypeError, f"argument {p.name!r}: dtype `{source}` did not evaluate to a dtype: {exc}") from None

    def _solve_dims(self, p: Param, t: torch.Tensor, bound: Bound) -> None:
        """The dims no input has as a plain dim, from the first size that is an affine expression of one (`n * 4`:
        a size of 16 gives n = 4); `_check_derived_dims` then checks every such size against them."""
        assert p.tensor is not None
        for axis, (dim, size) in enumerate(zip(p.tensor.dims, _logical(t, bound.dtypes[p.name])[0])):
            affine = dim.affine
            if affine is None or affine[0] in bound.dims:
                continue
            solved = dim_grammar.solve(affine, size)
            if solved is None:
                raise self._fail(ArgumentValueError, f"argument {p.name!r}: dim {axis} is {size}, which is {dim.text} for "
                                 f"no {affine[0]} >= 0")
            bound.dims[affine[0]] = solved
            bound.dim_origin[affine[0]] = f"{p.name}, axis {axis} = {dim.text}"

    def _check_derived_dims(self, p: Param, t: torch.Tensor, bound: Bound) -> None:
        assert p.tensor is not None
        shape, strides = _logical(t, bound.dtypes[p.name])
        sizes = [(f"dim {axis}", dim, size) for axis, (dim, size) in enumerate(zip(p.tensor.dims, shape))]
        sizes += [(f"stride {axis}", dim, st) for axis, (dim, st) in enumerate(zip(p.tensor.strides or (), strides))]
        for what, dim, size in sizes:
            if dim.is_derived:
                try:
                    expected = dim.evaluate(bound.dims)
                except ArgumentValueError as exc:
                    raise self._fail(ArgumentValueError, f"argument {p.name!r}: {what} cannot be checked: {exc}") from None
                if expected != size:
                    where = ", ".join(f"{s} = {shown_size(bound.dims[s])} from {bound.dim_origin[s]}" for s in dim.symbols)
                    raise self._fail(ArgumentValueError, f"argument {p.name!r}: {what} is {dim.text} = {shown_size(expected)} "
                                     f"({where}), got {shown_size(size)}")


def _logical(t: torch.Tensor, dtype: type[DType]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape and strides of the tensor a kernel sees in `t` (strides as a contiguous tensor's where `t` is one):
    for a sub-byte dtype, held packed in `t` (dtypes.PACKED_DTYPES), the logical ones."""
    shape = tuple(t.shape)
    strides = tuple(t.stride()) if not t.is_contiguous() else contiguous_strides(shape)
    if is_packed(dtype):
        shape, strides = logical_sizes(shape, strides)
        if t.is_contiguous():
            strides = contiguous_strides(shape)
    return shape, strides


def without_data(t: torch.Tensor) -> bool:
    """A tensor that stands for one: on meta, or a tracer's (`traced`)."""
    return t.device.type == "meta" or traced(t)


def traced(t: torch.Tensor) -> bool:
    """A tracer's tensor, on any device (a torch.export of meta inputs traces meta FakeTensors): torch's
    FakeTensor, FunctionalTensor (whose modules exist once something has made such tensors), or one a
    `torch.func` transform wraps. A call with one is the kernel's torch op, which the tracer records."""
    if transformed(t):
        return True
    fake = sys.modules.get("torch._subclasses.fake_tensor")
    functional = sys.modules.get("torch._subclasses.functional_tensor")
    return (fake is not None and isinstance(t, fake.FakeTensor)) or (
        functional is not None and isinstance(t, functional.FunctionalTensor))


def transformed(t: torch.Tensor) -> bool:
    """A tensor a `torch.func` transform wraps (grad, vmap, jvp): the kernel runs on what torch unwraps."""
    return bool(torch._C._functorch.is_functorch_wrapped_tensor(t))


def unwrapped(value: Any) -> Any:
    """A value as the kernel's call sees it: a tensor a `torch.func` transform wraps, unwrapped."""
    while issubclass(type(value), torch.Tensor) and transformed(value):
        value = torch._C._functorch.get_unwrapped(value)
    return value


def _has_memory(t: torch.Tensor) -> bool:
    """Whether a tensor has data of its own: a wrapper subclass has a null data pointer, or none at all."""
    try:
        return t.data_ptr() != 0
    except Exception:  # noqa: BLE001 - whatever a subclass's data_ptr raises: it has none to give
        return False


def evaluate_dtype(source: str, env: Mapping[str, Any], consts: Mapping[str, Any]) -> type[DType]:
    """A dtype annotation written over const parameters (`C: T.Tensor[[M, N], out_dtype]`), for these values."""
    return as_dtype(eval(source, dict(env), dict(consts)))  # noqa: S307


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a contiguous tensor of this shape (what a contiguous tensor's stride dims bind)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def inspection_arguments(
    signature: KernelSignature, args: Sequence[Any], kwargs: Mapping[str, Any], env: Mapping[str, Any]
) -> tuple[Any, ...]:
    """Every parameter's argument for `fn.lower(...)` / `fn.compile(...)`, in order.

    As TileLang's `compile` allows, a tensor may be described rather than
    passed: as `T.Tensor((M, K), dtype)`, or left out when its dims are given
    by name (`fn.compile(M=1024, K=512, block_M=64)`); either becomes a meta
    tensor of that shape. A dyn scalar may be left out: no kernel depends on
    its value (one that sizes a tensor takes that dim's).
    """
    name = signature.name
    params = {p.name: p for p in signature.params}
    positional = [p for p in signature.params if not p.keyword_only]
    if len(args) > len(positional):
        raise ArgumentTypeError(f"{name}: expected at most {len(positional)} positional arguments, got {len(args)}")
    values: dict[str, Any] = dict(zip(params, args))
    dims: dict[str, int] = {}
    named: dict[str, int] = {}  # the dims given by name
    for key, value in kwargs.items():
        if key in values:
            raise ArgumentTypeError(f"{name}: got multiple values for argument {key!r}")
        if key in params:
            values[key] = value
        elif key in signature.dims:
            dims[key] = named[key] = _size(name, f"dim {key} given by name", value)
            if signature.dims[key]:
                _check_dim_fits(signature, key, dims[key], "given by name")
        else:
            raise ArgumentTypeError(f"{name}: unexpected argument {key!r} (neither a parameter nor a dim)")
    described: dict[str, tuple[list[int | None], Any]] = {}  # `T.Tensor(shape, dtype)`: sizes (None: T.dynamic)
    for p in params.values():
        if p.name not in values and p.has_default:
            values[p.name] = p.default
        if p.kind is Kind.TENSOR and p.name in values and _describes_a_tensor(values[p.name]):
            described[p.name] = _description(name, p, values.pop(p.name))  # made a meta tensor once dims are known
    consts = {p.name: values[p.name] for p in params.values() if p.kind is Kind.CONST and p.name in values}
    for p in params.values():  # a dyn dim no tensor or name gives: any size builds the same kernel (TileLang's
        given = values.get(p.name)  # `compile(n_stream=4)` leaves `seqlen` open); the tensors' own come first
        # (type() first: a hostile value's `__class__` is never asked)
        if p.tensor is None:
            continue
        if issubclass(type(given), torch.Tensor) and isinstance(given, torch.Tensor):  # (a jagged tensor's sizes are no
            # ints: it gives none, and the binder refuses its layout)
            sizes: list[int | None] = [int(size) for size in given.shape] if given.layout is torch.strided else []
        else:
            sizes = described[p.name][0] if p.name in described else []
        if len(sizes) == len(p.tensor.dims):
            _gather_dims(name, p, sizes, dims, named)
    for dim_name in signature.scalar_dims:  # a scalar given that sizes tensors sizes those described
        if type(values.get(dim_name)) is int:
            dims.setdefault(dim_name, values[dim_name])
    for dim_name, is_dyn in signature.dims.items():
        if is_dyn:
            dims.setdefault(dim_name, DYN_PLACEHOLDER)
    for tensor_name, (sizes, dtype) in described.items():
        values[tensor_name] = _described(signature, params[tensor_name], sizes, dtype, dims)
    for p in params.values():
        value = values.get(p.name, _MISSING)
        if p.kind is Kind.TENSOR and value is _MISSING:
            values[p.name] = _placeholder(name, p, dims, consts, env)
        elif p.kind is Kind.DYN and value is _MISSING:  # no kernel is specialised on it: any value builds the same
            values[p.name] = dims.get(p.name, DYN_PLACEHOLDER) if p.name in signature.scalar_dims else p.scalar_type()
        elif value is _MISSING:
            raise ArgumentTypeError(f"{name}: missing argument {p.name!r}")
    return tuple(values[p] for p in params)


def _check_dim_fits(signature: KernelSignature, dim: str, size: int, origin: str) -> None:
    """A dyn dim reaches the kernel in its dtype (`T.dynamic("n", "int64")`, else int32): a size past that dtype's
    range is refused here, naming where it came from (the launcher refuses it too, where the fast path's sizes
    reach it, which sends the call here)."""
    dtype = signature.dim_dtype(dim)
    largest = as_dtype(dtype).value_range()[1]
    if size > largest:
        raise ArgumentValueError(f"{signature.name}: dim {dim} = {size} ({origin}) is too large for a dyn dim ({dtype}, "
                                 f"at most {largest}); declare it const to specialise on it")


def _size(name: str, what: str, value: Any) -> int:
    """A size given for inspection, by name (`fn.lower(M=1024)`) or in `T.Tensor((1024,), dtype)`: an int, not
    negative; `what` names where it came from."""
    if type(value) is bool or not hasattr(type(value), "__index__"):
        raise ArgumentTypeError(f"{name}: {what} must be an int size, got {describe(value)}")
    if value < 0:
        raise ArgumentValueError(f"{name}: {what} must not be negative, got {value}")
    return int(value)


_MISSING = object()
DYN_PLACEHOLDER = 128
"""The size a described tensor gets for a dyn dim nothing gives (a multiple of what alignment asserts ask)."""


def _describes_a_tensor(value: Any) -> bool:
    """`T.Tensor(shape, dtype)` given for a tensor (any other value, however it behaves, is not)."""
    try:
        return value is Tensor or get_origin(value) is Tensor
    except Exception:  # noqa: BLE001 - a value whose attributes raise is simply not a description
        return False


def _is_pointer_placeholder(value: object) -> bool:
    """TileLang's `T.ptr()`, which its inspection calls pass for a pointer: a TIR variable of type handle."""
    return _is_tir_var(value) and str(getattr(value, "dtype", "")) == "handle"


def _is_tir_var(value: object) -> bool:
    """A TIR variable (`T.dynamic("k")`, `T.ptr()`), told by its type without importing TVM."""
    return type(value).__module__.startswith("tvm") and type(value).__name__ == "Var"


def _description(name: str, p: Param, value: Any) -> tuple[list[int | None], Any]:
    """The sizes (None for TileLang's `T.dynamic("k")`: any) and dtype of a `T.Tensor(shape, dtype)`."""
    stated = shape_and_dtype(value)
    if stated is None:  # the bare class `T.Tensor`
        raise ArgumentTypeError(f"{name}: argument {p.name!r}: T.Tensor describes a tensor by a shape and a dtype")
    shape_arg, dtype_arg = stated
    sizes = [None if _is_tir_var(size) else _size(name, f"argument {p.name!r}: T.Tensor's dim {axis}", size)
             for axis, size in enumerate(shape_arg)]
    return sizes, dtype_arg


def _gather_dims(name: str, p: Param, sizes: Sequence[int | None], dims: dict[str, int], named: Mapping[str, int]) -> None:
    """The dims a tensor's sizes give (a plain dim's size, or the one an affine size solves for), into `dims`;
    one given by name must agree."""
    assert p.tensor is not None
    for axis, (dim, size) in enumerate(zip(p.tensor.dims, sizes)):
        affine = dim.affine
        if size is None:
            continue
        value: int | None
        if dim.is_symbol:
            symbol, value = dim.text, size
        elif affine is not None:
            symbol, value = affine[0], dim_grammar.solve(affine, size)
        else:
            continue
        if value is not None and dims.setdefault(symbol, value) != value and symbol in named:
            where = f"{p.name}, axis {axis}" + ("" if dim.is_symbol else f" = {dim.text}")
            raise ArgumentValueError(f"{name}: dim {symbol}: {dims[symbol]} given by name vs {value} (from {where})")


def _described(
    signature: KernelSignature, p: Param, sizes: Sequence[int | None], dtype: Any, dims: Mapping[str, int]
) -> torch.Tensor:
    """A meta tensor for a tensor parameter described by `T.Tensor(shape, dtype)`: a `T.dynamic` size, where the
    kernel's size is over dyn dims alone, is the one those dims give (from the other tensors, by name, or any)."""
    assert p.tensor is not None
    kernel_dims = p.tensor.dims if len(sizes) == len(p.tensor.dims) else [None] * len(sizes)  # the binder names the rank
    shape: list[int] = []
    for axis, (dim, size) in enumerate(zip(kernel_dims, sizes)):
        if size is not None:
            shape.append(size)
        elif dim is None:
            shape.append(DYN_PLACEHOLDER)
        elif dim.is_literal or not all(signature.dims[s] for s in dim.symbols):
            raise ArgumentTypeError(f"{signature.name}: argument {p.name!r}: T.Tensor's dim {axis} is a variable, "
                                    f"but the kernel specialises on its size there ({dim}): give the size")
        else:
            shape.append(int(dim.evaluate(dims)))
    return _meta(signature.name, p, tuple(shape), as_dtype(dtype), None)


def _placeholder(
    name: str, p: Param, dims: Mapping[str, int], consts: Mapping[str, Any], env: Mapping[str, Any]
) -> torch.Tensor:
    """A meta tensor for a tensor parameter left out, described by its dims' names."""
    spec = p.tensor
    assert spec is not None
    missing = sorted({s for d in spec.all_dims for s in d.symbols if s not in dims})
    if missing:
        raise ArgumentTypeError(
            f"{name}: missing argument {p.name!r}: pass a tensor, T.Tensor(shape, dtype), or its dims by name "
            f"({', '.join(f'{m}=...' for m in missing)})"
        )
    if spec.dtype.fixed is not None:
        dtype = spec.dtype.fixed
    elif spec.dtype.source is not None:
        dtype = evaluate_dtype(spec.dtype.source, env, consts)
    else:
        raise ArgumentTypeError(f"{name}: missing argument {p.name!r}: its dtype {spec.dtype} is bound only by a tensor; pass one")
    shape = tuple(int(d.evaluate(dims)) for d in spec.dims)
    strides = None if spec.strides is None else tuple(int(d.evaluate(dims)) for d in spec.strides)
    return _meta(name, p, shape, dtype, strides)


def _meta(name: str, p: Param, shape: tuple[int, ...], dtype: type[DType], strides: tuple[int, ...] | None) -> torch.Tensor:
    """The meta tensor standing for parameter `p` in an inspection call. Its sizes come from the dims given by name
    or a `T.Tensor` description, which no tensor checked: a shape no tensor can have (a negative size from a
    derived dim, more elements than an int64 counts) is refused naming the parameter, not with torch's overflow
    error and its C++ stack."""
    if is_packed(dtype) and shape:  # the packed storage of the logical tensor (dtypes.PACKED_DTYPES)
        shape = storage_sizes(shape)
        if strides is not None:
            strides = (*(s // PACKING for s in strides[:-1]), 1)
    try:
        if strides is None:
            return torch.empty(shape, dtype=to_torch(dtype), device="meta")
        return torch.empty_strided(shape, strides, dtype=to_torch(dtype), device="meta")
    except (RuntimeError, TypeError, OverflowError):  # torch's text of either is its C++ stack
        negative = [axis for axis, size in enumerate(shape) if size < 0]
        reason = f"dim {negative[0]} is negative" if negative else "its size in bytes does not fit in an int64"
        raise ArgumentValueError(f"{name}: argument {p.name!r} would have shape {shape}, which no tensor can have: "
                                 f"{reason}") from None
