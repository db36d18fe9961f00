"""`Tensor[dtype, *dims]`: the annotation of a kernel's tensor parameters.

For a type checker a `Tensor[float16, M, K]` is a torch tensor whose element
type and dims are type arguments: dims are TypeVars (unified across the
arguments of one call) or `Literal[...]` sizes. At run time subscripting only
records its arguments; `tltyped.frontend` reads them back with
`typing.get_args`. The in-body form `T.Tensor[[M, K], T.float16]` (TileLang's
order: shape list first) is the same class, subscripted the other way round.
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

        def __init__(self) -> None:
            raise TypeError("tl.Tensor is an annotation; pass torch tensors to kernels")
