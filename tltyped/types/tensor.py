"""`Tensor[dtype, *dims]`: the annotation of a kernel's tensor parameters.

For a type checker a `Tensor[float16, M, K]` is a torch tensor whose element
type and dims are type arguments: dims are TypeVars (unified across the
arguments of one call) or `Literal[...]` sizes. At run time subscripting only
records its arguments; `tltyped.frontend` reads them back with
`typing.get_args`. The in-body form `T.Tensor[[M, K], T.float16]` (TileLang's
order: shape list first) is the same class, subscripted the other way round,
and TileLang's call form `T.Tensor((M, K), T.float16)` returns exactly that
subscription.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

from typing_extensions import TypeVarTuple, Unpack

DT = TypeVar("DT")
Dims = TypeVarTuple("Dims")

if TYPE_CHECKING:
    import torch

    class Tensor(torch.Tensor, Generic[DT, Unpack[Dims]]):
        """A torch tensor with a static element type and dims."""

else:

    class Tensor(Generic[DT, Unpack[Dims]]):
        """A torch tensor with a static element type and dims."""

        def __new__(cls, shape: object = None, dtype: object = "float32") -> object:
            """`Tensor((M, K), dtype)` is `Tensor[[M, K], dtype]` (TileLang's call form; dtype defaults to float32)."""
            if shape is None:
                raise TypeError("tl.Tensor is an annotation; pass torch tensors to kernels")
            dims = list(shape) if isinstance(shape, (list, tuple)) else [shape]
            return cls[dims, dtype]
