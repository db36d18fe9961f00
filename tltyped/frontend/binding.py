"""The slow path's view of a call: validate every argument and bind the dims.

The fast path checks nothing static: a call whose dtypes, ranks, const dims,
layouts, devices or const values differ from a compiled kernel's misses the
cache and lands here, where each mismatch becomes an error that names the
parameter, what was expected and what came.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from tltyped.abi import ALIGNMENT
from tltyped.frontend.const_types import const_problem
from tltyped.frontend.signature import KernelSignature, Kind, Param
from tltyped.types.dtypes import DType, as_dtype, to_torch
from tltyped.types.params import Tune
from tltyped.types.values import describe

_DYN_DIM_MAX = 2**31 - 1  # dyn dims reach the kernel as int32


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

    @property
    def tuned(self) -> dict[str, Tune]:
        return {k: v for k, v in self.values.items() if type(v) is Tune}


class Binder:
    def __init__(self, signature: KernelSignature, env: Mapping[str, Any]) -> None:
        self.signature = signature
        self.env = env

    def _fail(self, kind: type[Exception], message: str) -> Exception:
        return kind(f"{self.signature.name}: {message}")

    def bind(self, args: Sequence[Any], *, allow_meta: bool = False) -> Bound:
        params = self.signature.params
        if len(args) != len(params):  # the generated fast path always passes every parameter
            raise self._fail(TypeError, f"expected {len(params)} arguments, got {len(args)}")
        bound = Bound(dict(zip((p.name for p in params), args)))
        for p in params:
            if p.kind is Kind.CONST:
                self._check_const(p, bound.values[p.name])
            elif p.kind in (Kind.DYN, Kind.PTR):
                self._check_scalar(p, bound.values[p.name])
        for p in self.signature.tensors:
            self._bind_tensor(p, bound.values[p.name], bound, allow_meta)
        for p in self.signature.tensors:
            self._check_derived_dims(p, bound.values[p.name], bound)
        for dim in self.signature.dyn_dims:
            if bound.dims[dim] > _DYN_DIM_MAX:
                raise self._fail(
                    ValueError, f"dim {dim} = {bound.dims[dim]} (from {bound.dim_origin[dim]}) is too large for a dyn dim "
                    f"(int32, at most {_DYN_DIM_MAX}); declare it const to specialise on it",
                )
        for check in self.signature.checks:
            left, right = check.left.evaluate(bound.dims), check.right.evaluate(bound.dims)
            if left != right:
                raise self._fail(
                    ValueError, f"shape check `{check.source}` fails: {check.left} = {left}, {check.right} = {right}"
                )
        return bound

    def _check_const(self, p: Param, value: Any) -> None:
        """A const (each candidate of a tuning space) must be a cache key and of its annotation's type."""
        for candidate in value.values if type(value) is Tune else (value,):
            problem = const_problem(p.annotation, candidate)
            if problem is not None:
                raise self._fail(problem[0], f"const parameter {p.name!r} {problem[1]}")

    def _check_scalar(self, p: Param, value: Any) -> None:
        """The values the launcher converts: exact ints (no bools), ints or floats, bools, non-negative addresses."""
        scalar = p.scalar or ""
        if p.kind is Kind.PTR:
            if type(value) is not int or value < 0:
                raise self._fail(
                    TypeError, f"ptr parameter {p.name!r} expects a device address (an int >= 0), got {describe(value)}"
                )
        elif scalar == "bool":
            if type(value) is not bool:
                raise self._fail(TypeError, f"dyn parameter {p.name!r} expects a bool, got {describe(value)}")
        elif scalar.startswith(("float", "bfloat")):
            if type(value) not in (int, float):
                raise self._fail(TypeError, f"dyn parameter {p.name!r} expects a float, got {describe(value)}")
            if abs(value) > torch.finfo(to_torch(scalar)).max and not (type(value) is float and math.isinf(value)):
                raise self._fail(ValueError, f"dyn parameter {p.name!r} = {describe(value)} does not fit in {scalar}")
        elif type(value) is not int:
            raise self._fail(TypeError, f"dyn parameter {p.name!r} expects an int, got {describe(value)}")
        else:
            low, high = as_dtype(scalar).value_range()
            if not low <= value <= high:
                raise self._fail(ValueError, f"dyn parameter {p.name!r} = {describe(value)} does not fit in {scalar}")

    def _bind_tensor(self, p: Param, t: Any, bound: Bound, allow_meta: bool) -> None:
        spec = p.tensor
        assert spec is not None
        if not issubclass(type(t), torch.Tensor):  # never `t.__class__`, which a value may fake
            raise self._fail(TypeError, f"argument {p.name!r} expects a torch tensor {spec}, got {describe(t)}")
        self._check_device(p, t, bound, allow_meta)
        dtype = self._check_dtype(p, t, bound)
        if t.dim() != len(spec.dims):
            raise self._fail(
                ValueError, f"argument {p.name!r} expects rank {len(spec.dims)} ({spec}), got rank {t.dim()} with shape {tuple(t.shape)}"
            )
        for axis, (dim, size) in enumerate(zip(spec.dims, t.shape)):
            if dim.is_literal and dim.value != size:
                raise self._fail(ValueError, f"argument {p.name!r}: dim {axis} must be {dim.value}, got {size}")
            if dim.is_symbol:
                seen = bound.dims.setdefault(dim.text, size)
                origin = bound.dim_origin.setdefault(dim.text, f"{p.name}, axis {axis}")
                if seen != size:
                    raise self._fail(ValueError, f"dim {dim.text}: {seen} (from {origin}) vs {size} (from {p.name}, axis {axis})")
        bound.dtypes[p.name] = dtype
        bound.strides[p.name] = None if t.is_contiguous() else tuple(t.stride())
        has_dyn = any(self.signature.dims.get(s, False) for d in spec.dims for s in d.symbols)
        if has_dyn and bound.strides[p.name] is not None:
            raise self._fail(
                ValueError,
                f"argument {p.name!r} has dyn dims, so it must be contiguous; got strides {tuple(t.stride())} "
                f"for shape {tuple(t.shape)} (pass {p.name}.contiguous())",
            )
        if t.device.type != "meta" and t.data_ptr() % ALIGNMENT:
            raise self._fail(
                ValueError,
                f"argument {p.name!r}: data pointer is not {ALIGNMENT}-byte aligned "
                f"(a view at storage offset {t.storage_offset()}); pass a copy ({p.name}.clone())",
            )

    def _check_device(self, p: Param, t: torch.Tensor, bound: Bound, allow_meta: bool) -> None:
        kinds = ("cuda", "meta") if allow_meta else ("cuda",)
        if t.device.type not in kinds:
            where = "CUDA or meta" if allow_meta else "CUDA"
            raise self._fail(ValueError, f"argument {p.name!r} is on {t.device}; kernels take {where} tensors")
        if bound.device is None:
            bound.device = t.device
        elif t.device != bound.device:
            first = next(q.name for q in self.signature.tensors)
            raise self._fail(ValueError, f"argument {p.name!r} is on {t.device} but {first!r} is on {bound.device}")

    def _check_dtype(self, p: Param, t: torch.Tensor, bound: Bound) -> type[DType]:
        spec = p.tensor
        assert spec is not None
        try:
            actual = as_dtype(t.dtype)
        except ValueError:
            raise self._fail(TypeError, f"argument {p.name!r} has unsupported dtype {t.dtype}") from None
        expected: type[DType] | None = spec.dtype.fixed
        if spec.dtype.source is not None:
            expected = self._evaluate_dtype(p, spec.dtype.source, bound)
        if spec.dtype.var is not None:
            expected = bound.dtype_vars.setdefault(spec.dtype.var, actual)
        if expected is not None and expected is not actual:
            raise self._fail(TypeError, f"argument {p.name!r} expects dtype {expected.name}, got {actual.name}")
        return actual

    def _evaluate_dtype(self, p: Param, source: str, bound: Bound) -> type[DType]:
        consts = {q.name: bound.values[q.name] for q in self.signature.params if q.kind is Kind.CONST}
        try:
            return as_dtype(eval(source, dict(self.env), consts))  # noqa: S307
        except Exception as exc:
            raise self._fail(TypeError, f"argument {p.name!r}: dtype `{source}` did not evaluate to a dtype: {exc}") from None

    def _check_derived_dims(self, p: Param, t: torch.Tensor, bound: Bound) -> None:
        assert p.tensor is not None
        for axis, dim in enumerate(p.tensor.dims):
            if dim.is_derived:
                expected = dim.evaluate(bound.dims)
                if expected != t.shape[axis]:
                    where = ", ".join(f"{s} = {bound.dims[s]} from {bound.dim_origin[s]}" for s in dim.symbols)
                    raise self._fail(
                        ValueError,
                        f"argument {p.name!r}: dim {axis} is {dim.text} = {expected} ({where}), got {t.shape[axis]}",
                    )
