"""KernelSignature: what a jit function takes, whichever form declared it.

Both declaration forms (annotations in the signature, annotations in the
body) are analysed into this one description; everything downstream (the call
binder, the fast-path generator, elaboration, stubs) reads only this.

An in-body annotation that Python code in the body computes from const
parameters (`A_shape = (K, M) if trans_A else (M, K)`, then
`A: T.Tensor(A_shape, dtype)`) cannot be read at decoration: its parameter
is a tensor whose `TensorSpec` is None until the signature is resolved for
the values of the consts it `depends_on` (see frontend/analyze.py).
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tltyped.errors import DefinitionError
from tltyped.frontend.dims import Dim
from tltyped.types import in_body_grammar as grammar
from tltyped.types.dtypes import DType, as_dtype, is_dtype_like
from tltyped.types.values import shown


class Kind(enum.Enum):
    """How a parameter reaches the kernel."""

    TENSOR = "tensor"  # data pointer at run time; dtype, rank, const dims, strides static
    DYN = "dyn"  # a scalar passed at run time
    PTR = "ptr"  # a raw device pointer passed at run time
    CONST = "const"  # a Python value the kernel is specialised on


@dataclass(frozen=True)
class DTypeSpec:
    """A tensor's element type: fixed, computed from const parameters, or a dtype variable."""

    fixed: type[DType] | None = None
    source: str | None = None  # an expression over const parameters, e.g. `out_dtype`
    var: str | None = None  # a TypeVar shared between tensors, bound by the call
    var_dtypes: tuple[type[DType], ...] = ()  # the dtypes `var` may be (its TypeVar's constraints or bound); none: any

    def __str__(self) -> str:
        if self.fixed is not None:
            return self.fixed.name
        return self.source or self.var or "?"


@dataclass(frozen=True)
class TensorSpec:
    dtype: DTypeSpec
    dims: tuple[Dim, ...]
    strides: tuple[Dim, ...] | None = None  # `T.StridedTensor`: a dim per stride, bound from the tensor's strides

    def __str__(self) -> str:
        if self.strides is not None:
            return f"StridedTensor[[{', '.join(map(str, self.dims))}], [{', '.join(map(str, self.strides))}], {self.dtype}]"
        return f"Tensor[{self.dtype}, {', '.join(map(str, self.dims))}]" if self.dims else f"Tensor[{self.dtype}]"

    @property
    def all_dims(self) -> tuple[Dim, ...]:
        """The shape's dims, then the strides' (a StridedTensor's)."""
        return self.dims + (self.strides or ())


@dataclass(frozen=True)
class Param:
    name: str
    kind: Kind
    default: Any = inspect.Parameter.empty
    tensor: TensorSpec | None = None
    scalar: str | None = None  # TileLang dtype of a dyn scalar: "int32", "float32", "handle"
    annotation: Any = inspect.Parameter.empty  # a const's annotation, which its values are checked against
    keyword_only: bool = False  # after the `*`: a call names it

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty

    @property
    def is_runtime(self) -> bool:
        """Passed to the compiled kernel at every call (rather than specialised on)."""
        return self.kind is not Kind.CONST

    @property
    def scalar_type(self) -> type[int] | type[float] | type[bool]:
        """The Python type a dyn scalar takes: bool, float (its dtype a float or bfloat one), or int."""
        scalar = self.scalar or ""
        return bool if scalar == "bool" else float if scalar.startswith(("float", "bfloat")) else int

    @property
    def is_deferred(self) -> bool:
        """A tensor whose annotation is computed from const values: known only once they are."""
        return self.kind is Kind.TENSOR and self.tensor is None


@dataclass(frozen=True)
class ShapeCheck:
    """A relation between dims every call must satisfy (from a shape `assert`)."""

    left: Dim
    right: Dim
    source: str  # the assert's condition as written, for messages
    line: int  # the assert's line in the kernel's file: the call checks it, so the body's elaboration skips it
    sides: tuple[str, str] = ("", "")  # each side as written (`X.shape[0] % 64`, `0`)
    message: str | None = None  # the assert's own message

    def is_dyn(self, dims: Mapping[str, bool]) -> bool:
        return any(dims[s] for s in (*self.left.symbols, *self.right.symbols))


@dataclass(frozen=True)
class KernelSignature:
    name: str
    params: tuple[Param, ...]
    dims: Mapping[str, bool]  # each declared dim symbol -> is it dyn
    checks: tuple[ShapeCheck, ...] = ()
    outputs: tuple[Param, ...] = ()  # `jit(out_idx=...)` tensors: not passed, allocated and returned, in that order
    depends_on: tuple[str, ...] = ()  # const parameters the deferred annotations are computed from
    dim_vars: Mapping[str, str] = field(default_factory=dict)  # body variable -> the dim it declares (`M = T.dynamic("m")`)
    scalar_dims: tuple[str, ...] = ()  # int scalar parameters a tensor's dims name: dyn dims each call must agree
    # with, or, where no input's size gives the dim (it sizes outputs alone), each call's value of it
    returns: tuple[TensorSpec, ...] | None = None  # what the return annotation states; None: unstated (unchecked)
    dim_dtypes: Mapping[str, str] = field(default_factory=dict)  # each dyn dim declared of another dtype than
    # grammar.DIM_DTYPE (`T.dynamic("n", "int64")`) -> that dtype: the kernel takes it, and the call's size must fit it

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def tensors(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind is Kind.TENSOR)

    @property
    def dyn_dims(self) -> tuple[str, ...]:
        return tuple(name for name, is_dyn in self.dims.items() if is_dyn)

    def dim_dtype(self, dim: str) -> str:
        """The dtype dyn dim `dim` reaches the kernel as."""
        return self.dim_dtypes.get(dim, grammar.DIM_DTYPE)

    @property
    def is_resolved(self) -> bool:
        """Every tensor's annotation is known (no annotation waits for const values)."""
        return not any(p.is_deferred for p in (*self.params, *self.outputs))

    def plain_dims(self) -> set[str]:
        """The dim symbols some input tensor has as a plain dim or stride: a call reads them off it."""
        return {d.text for p in self.tensors if p.tensor is not None for d in p.tensor.all_dims if d.is_symbol}

    def bound_dims(self) -> set[str]:
        """The dim symbols a call determines: the plain ones, those an input's size is an affine expression of
        (`n * 4`), which the size solves for, and the int scalar parameters that size tensors, which the call
        passes (`X: T.Tensor[[N, N + m], ...]`: the binder's and the fast paths' `scalar_sized`)."""
        solved = {a[0] for p in self.tensors if p.tensor is not None for d in p.tensor.dims if (a := d.affine) is not None}
        return self.plain_dims() | solved | set(self.scalar_dims)

    def __str__(self) -> str:
        parts = []
        for p in (*self.params, *self.outputs):
            text = f"{p.name}: {p.tensor}" if p.tensor else f"{p.name}: {p.kind.value}"
            if p in self.outputs:
                text += " (output)"
            if p.kind is Kind.DYN:
                text = f"{p.name}: dyn[{p.scalar}]"
            if p.has_default:
                dtype = type(p.default) is not str and is_dtype_like(p.default)  # a plain string is shown as one
                text += f" = {as_dtype(p.default).name if dtype else shown(p.default)}"
            parts.append(text)
        dims = ", ".join(f"{n}{f'(dyn {self.dim_dtypes[n]})' if n in self.dim_dtypes else '(dyn)' if d else ''}"
                         for n, d in self.dims.items())
        return f"{self.name}({', '.join(parts)})" + (f"  [dims: {dims}]" if dims else "")


@dataclass(frozen=True)
class Specialization:
    """Everything one compiled kernel is specialised on (the meaning of a cache key)."""

    consts: Mapping[str, Any]  # const parameter -> value (tuning already resolved)
    dims: Mapping[str, int]  # const dim -> size
    dtypes: Mapping[str, type[DType]]  # tensor parameter -> element type
    strides: Mapping[str, tuple[int, ...] | None]  # tensor parameter -> strides when not contiguous (and not a StridedTensor)

    def differences(self, call: Specialization, origin: Mapping[str, str]) -> list[Difference]:
        """What a call's specialisation changes from this one, a compiled kernel's: each const dim, each dtype of
        the call's tensors, each layout; the call's dims with where they came from (`origin`: Bound.dim_origin)."""
        found = [Difference(f"dim {d}", f"= {call.dims[d]}" + (f" (from {origin[d]})" if d in origin else ""), str(size))
                 for d, size in self.dims.items() if call.dims[d] != size]
        found += [Difference(f"{name} dtype", call.dtypes[name].name, dtype.name)
                  for name, dtype in self.dtypes.items() if name in call.dtypes and call.dtypes[name] is not dtype]
        found += [Difference(f"{name} layout", _layout(call.strides[name]), _layout(strides))
                  for name, strides in self.strides.items() if call.strides[name] != strides]
        return found


class Difference(NamedTuple):
    """One way a call differs from the specialisation a compiled kernel was built for."""

    subject: str  # `dim M`, `A dtype`, `A layout`, `target`
    called: str  # what the call has
    built: str  # what the kernel was built for


def _layout(strides: tuple[int, ...] | None) -> str:
    return "contiguous" if strides is None else f"strides {strides}"
