"""KernelSignature: what a jit function takes, whichever form declared it.

Both declaration forms (annotations in the signature, annotations in the
body) are analysed into this one description; everything downstream (the call
binder, the fast-path generator, elaboration, stubs) reads only this.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tltyped.frontend.dims import Dim
from tltyped.types.dtypes import DType
from tltyped.types.values import describe


class Kind(enum.Enum):
    """How a parameter reaches the kernel."""

    TENSOR = "tensor"  # data pointer at run time; dtype, rank, const dims, strides static
    DYN = "dyn"  # a scalar passed at run time
    PTR = "ptr"  # a raw device pointer passed at run time
    CONST = "const"  # a Python value the kernel is specialised on


class DefinitionError(TypeError):
    """A kernel definition the package cannot accept, reported at decoration."""


@dataclass(frozen=True)
class DTypeSpec:
    """A tensor's element type: fixed, computed from const parameters, or a dtype variable."""

    fixed: type[DType] | None = None
    source: str | None = None  # an expression over const parameters, e.g. `out_dtype`
    var: str | None = None  # a TypeVar shared between tensors, bound by the call

    def __str__(self) -> str:
        if self.fixed is not None:
            return self.fixed.name
        return self.source or self.var or "?"


@dataclass(frozen=True)
class TensorSpec:
    dtype: DTypeSpec
    dims: tuple[Dim, ...]

    def __str__(self) -> str:
        return f"Tensor[{self.dtype}, {', '.join(map(str, self.dims))}]" if self.dims else f"Tensor[{self.dtype}]"


@dataclass(frozen=True)
class Param:
    name: str
    kind: Kind
    default: Any = inspect.Parameter.empty
    tensor: TensorSpec | None = None
    scalar: str | None = None  # TileLang dtype of a dyn scalar: "int32", "float32", "handle"
    annotation: Any = inspect.Parameter.empty  # a const's annotation, which its values are checked against

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty

    @property
    def is_runtime(self) -> bool:
        """Passed to the compiled kernel at every call (rather than specialised on)."""
        return self.kind is not Kind.CONST


@dataclass(frozen=True)
class ShapeCheck:
    """A relation between dims every call must satisfy (from a shape `assert`)."""

    left: Dim
    right: Dim
    source: str  # the assert's condition as written, for messages

    def is_dyn(self, dims: Mapping[str, bool]) -> bool:
        return any(dims[s] for s in (*self.left.symbols, *self.right.symbols))


@dataclass(frozen=True)
class KernelSignature:
    name: str
    params: tuple[Param, ...]
    dims: Mapping[str, bool]  # each declared dim symbol -> is it dyn
    in_body: frozenset[str] = field(default_factory=frozenset)  # params annotated in the body
    checks: tuple[ShapeCheck, ...] = ()

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

    def dim_sources(self) -> dict[str, tuple[str, int]]:
        """For each dim symbol, the first (tensor, axis) that binds it."""
        sources: dict[str, tuple[str, int]] = {}
        for p in self.tensors:
            assert p.tensor is not None
            for axis, dim in enumerate(p.tensor.dims):
                if dim.is_symbol:
                    sources.setdefault(dim.text, (p.name, axis))
        return sources

    def __str__(self) -> str:
        parts = []
        for p in self.params:
            text = f"{p.name}: {p.tensor}" if p.tensor else f"{p.name}: {p.kind.value}"
            if p.kind is Kind.DYN:
                text = f"{p.name}: dyn[{p.scalar}]"
            if p.has_default:
                text += f" = {describe(p.default)}"
            parts.append(text)
        dims = ", ".join(f"{n}{'(dyn)' if d else ''}" for n, d in self.dims.items())
        return f"{self.name}({', '.join(parts)})" + (f"  [dims: {dims}]" if dims else "")
