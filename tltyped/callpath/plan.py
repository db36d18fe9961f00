"""CallPlan: how a call of one signature is read, keyed and passed, whichever path makes it.

Three pieces of code make a cached call, and they must agree to the bit: the
generated Python fast path (templates/fast_path.py.j2), its `key` twin that
the slow path stores launches under, and the C cached call
(callpath/csrc/cached_call.c) that serves most calls. Each is generated from
one plan, computed once per signature, so a rule of the key is stated here
and nowhere else:

    the key of a call =
        for each tensor, in parameter order: its signature (device, dtype, layout; tensors.py),
            then the size of each axis that is static (no dyn dim in it)
        then for each const, in parameter order: its value in its key form
            ("value": as is; "typed": its type, then it; "deep": `typed_key(value)`)

The launch takes the data pointers and dyn scalars in parameter order, then
the dyn dims (tltyped/abi.py). A dyn dim is read from the first axis that
names it, or where no axis names it plainly, solved from the first axis that
is an affine expression of it (`n * 4`: the size minus 0, over 4); every
later axis naming it, a derived dim (`2*N + 1`, the solved axis too), a shape
assert over dyn dims, or a scalar that sizes a tensor is a check each call
makes before it launches. A dyn dim that no input's axis names (one that
sizes only outputs) is the value of the int scalar parameter of its name.
The C cached call serves signatures whose only checks are dyn dims agreeing,
every dyn dim read from an axis, with no ptr or strided parameters.

A tensor of a sub-byte dtype (types/dtypes.py's PACKED_DTYPES, `Tensor[float4_e2m1fn, M, K]`) is read as torch
holds it, packed two values a byte: its key holds the storage's signature, sizes and strides, and where an axis
gives a dyn dim (or is checked against one) its logical value is used: the innermost size times 2, a
StridedTensor's strides times 2 but the innermost, whose storage stride must be 1. The C cached call takes each
dyn axis's scale in its table (`c_table`: a packed innermost dyn size is `(k, 2)`), so it serves packed tensors
as it serves others (a StridedTensor is the generated path's, packed or not). A tensor whose dtype is computed
from consts (`T.Tensor[[M, K], dtype]`) is planned as unpacked: a call that makes it a sub-byte one with its
innermost size (or a stride) not static takes the slow path (`serves`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tltyped.frontend.const_types import key_form
from tltyped.frontend.dims import Dim
from tltyped.frontend.signature import KernelSignature, Kind, Param
from tltyped.types.dtypes import PACKING, is_packed

STATIC = -1  # an axis whose size is in the key
DERIVED = -2  # an axis whose size is checked against an expression of dyn dims

KEY_FORMS = ("value", "typed", "deep")  # a const's key form; its index is its code in the C table


@dataclass(frozen=True)
class Axis:
    """A size (or a StridedTensor's stride) the call reads from a tensor, and what it does with it."""

    dim: Dim
    code: int  # STATIC, DERIVED, or the index of the dyn dim it holds or solves for (read here if `first`, else checked)
    first: bool = False  # the first axis naming this dyn dim: where its value is read
    scale: int = 1  # a packed tensor's axis: its logical value is the storage's times this (0: the storage's must be 1)

    @property
    def solved(self) -> bool:
        """An affine expression of the dyn dim it gives (`n * 4`), its size then checked against it."""
        return self.code >= 0 and not self.dim.is_symbol


@dataclass(frozen=True)
class TensorRead:
    name: str
    axes: tuple[Axis, ...]  # sizes, then a StridedTensor's strides
    rank: int
    strided: bool
    packed: bool = False  # a sub-byte dtype held two values a byte (the module's docstring)

    @property
    def packing_free(self) -> bool:
        """Whether packing changes no axis a call reads or checks: every axis but the outer sizes is static (in the
        key, as stored)."""
        return all(axis.code == STATIC for axis in self.axes[max(self.rank - 1, 0):])


@dataclass(frozen=True)
class Check:
    """A shape assert over dyn dims (`assert Out.shape[0] == 2 * A.shape[0] + 1`): each call checks it."""

    left: Dim
    right: Dim


@dataclass(frozen=True)
class CallPlan:
    """What every path of a cached call does, for one signature."""

    name: str
    params: tuple[Param, ...]
    tensors: tuple[TensorRead, ...]
    key_forms: tuple[tuple[str, str], ...]  # (const parameter, its key form), in parameter order
    dyn_dims: tuple[str, ...]
    shape_checks: tuple[Check, ...]
    scalar_dims: tuple[str, ...]  # int scalar parameters that size an input: each must equal its dyn dim
    scalar_sized: tuple[str, ...]  # dyn dims no input's axis names: each is the int scalar parameter of its name
    pointers: tuple[str, ...]  # ptr parameters (an int, or a CUDA tensor standing for its data pointer)

    @property
    def has_checks(self) -> bool:
        """Whether calls check more than dyn dims agreeing: derived axes, shape asserts, scalars sizing tensors."""
        derived = any(axis.code == DERIVED or axis.solved for t in self.tensors for axis in t.axes)
        return derived or bool(self.shape_checks) or bool(self.scalar_dims)

    @property
    def in_c(self) -> bool:
        """Whether the C cached call serves this signature: its only checks are dyn dims agreeing, and it reads
        every dyn dim from a tensor's axis."""
        return (not self.has_checks and not self.scalar_sized and not self.pointers and bool(self.tensors)
                and not any(t.strided for t in self.tensors))

    def serves(self, packed: frozenset[str]) -> bool:
        """Whether the fast paths read right a call whose packed tensors are `packed` (by name): a tensor planned
        unpacked (its dtype computed from consts) but packed in this call must read every axis as stored."""
        return all(t.packed or t.packing_free for t in self.tensors if t.name in packed)

    def c_table(self) -> tuple[Any, ...]:
        """The parameters as the C cached call reads them (`CachedCall(..., params, ...)`).

        A tensor is its axes' codes (STATIC or a dyn dim's index; `(index,
        scale)` for a packed tensor's innermost dyn size), a const its key
        form's index in KEY_FORMS, a dyn scalar None.
        """
        assert self.in_c, f"{self.name}: the C cached call does not serve this signature"
        tensors = {t.name: t for t in self.tensors}
        forms = dict(self.key_forms)
        table: list[Any] = []
        for p in self.params:
            if p.kind is Kind.TENSOR:
                table.append(tuple(axis.code if axis.code < 0 or axis.scale == 1 else (axis.code, axis.scale)
                                   for axis in tensors[p.name].axes))
            elif p.kind is Kind.CONST:
                table.append(KEY_FORMS.index(forms[p.name]))
            else:
                table.append(None)
        return tuple(table)


def plan_call(signature: KernelSignature) -> CallPlan:
    """The plan of a resolved signature's calls."""
    dyn = signature.dyn_dims
    plain = signature.plain_dims()
    read: set[str] = set()
    tensors: list[TensorRead] = []
    for p in signature.tensors:
        assert p.tensor is not None
        axes = []
        rank = len(p.tensor.dims)
        fixed = p.tensor.dtype.fixed
        packed = fixed is not None and is_packed(fixed)
        for axis, dim in enumerate(p.tensor.all_dims):
            affine = dim.affine if axis < rank else None  # a size, not a stride
            if not packed:
                scale = 1
            elif axis < rank:  # a size: the innermost holds PACKING values a byte
                scale = PACKING if axis == rank - 1 else 1
            else:  # a stride, in bytes: the innermost's must be 1
                scale = 0 if axis == 2 * rank - 1 else PACKING
            if not any(signature.dims[s] for s in dim.symbols):
                axes.append(Axis(dim, STATIC))  # a different size is a different kernel (or a slow-path error)
            elif dim.is_symbol:
                axes.append(Axis(dim, dyn.index(dim.text), first=dim.text not in read, scale=scale))
                read.add(dim.text)
            elif affine is not None and affine[0] not in plain and affine[0] not in read:
                axes.append(Axis(dim, dyn.index(affine[0]), first=True, scale=scale))
                read.add(affine[0])
            else:
                axes.append(Axis(dim, DERIVED, scale=scale))
        tensors.append(TensorRead(p.name, tuple(axes), rank, p.tensor.strides is not None, packed))
    return CallPlan(
        name=signature.name,
        params=signature.params,
        tensors=tuple(tensors),
        key_forms=tuple((p.name, key_form(p.annotation)) for p in signature.params if p.kind is Kind.CONST),
        dyn_dims=dyn,
        shape_checks=tuple(Check(c.left, c.right) for c in signature.checks if c.is_dyn(signature.dims)),
        scalar_dims=tuple(name for name in signature.scalar_dims if name in read),
        scalar_sized=tuple(name for name in signature.scalar_dims if name not in read),
        pointers=tuple(p.name for p in signature.params if p.kind is Kind.PTR),
    )
