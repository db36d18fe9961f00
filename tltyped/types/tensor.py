"""`Tensor[dtype, *dims]`: the annotation of a kernel's tensor parameters.

At run time subscripting only records its arguments; `tltyped.frontend`
reads them back with `typing.get_args`. The in-body form `T.Tensor[[M, K],
T.float16]` (TileLang's order: shape list first) is the same class,
subscripted the other way round, and TileLang's call form
`T.Tensor((M, K), T.float16)` returns exactly that subscription.

For a type checker a `Tensor[float16, M, K]` has to be three things at once,
with no plugin (pyright and mypy alike):
- a torch tensor: a kernel's result is used and passed on like any tensor;
- a type that every plain torch tensor fits, since users call kernels with
  torch tensors, whose dtype and shape no type checker knows;
- a type that a tensor typed `Tensor[float32, ...]` does NOT fit, nor one of
  another rank or with other literal dims (dims are TypeVars, unified across
  the arguments of one call, or `Literal[...]` sizes).
Nominally that cannot be had: the second and third contradict each other
through the first. So `Tensor[DT, *Dims]` is an alias of
`TypedTensor[DTypeDims[DT, *Dims]]`, where:
- `TypedTensor` is a Protocol that also derives from `torch.Tensor` (both
  checkers report that base, here only, and then honour it): a value typed
  `Tensor[...]` is a torch tensor (its MRO); another `Tensor[...]` is
  compared by its type argument (same class: nominal, invariant); a plain
  torch tensor, which does not derive from it, is matched structurally
  against the one member declared here, torch's own `_grad_fn`, typed `Any`
  in torch's stubs: matched against `Any`, the dtype and dims of a plain
  torch tensor are `Any`, so it fits every `Tensor[...]`, and a result's dims
  stay unknown rather than wrong. Nothing without `_grad_fn` (a float, a
  NumPy array) fits.
- `DTypeDims` carries the dtype and dims as one type argument: pyright
  widens a protocol's own type arguments when it matches a class against it
  (`Literal[128]` becomes `int`, and then no longer fits `Literal[128]`), but
  not the arguments nested inside one.
Both checkers show the alias's expansion in `reveal_type` (pyright's hover
shows `Tensor[float16, M, K]`). mypy keeps a protocol's literal type arguments,
so with the plugin a `Tensor[...]` annotation is read as one variadic protocol
class, `MypyPlugin.Tensor[float16, M, K]`, and mypy's messages name it as
users write it. It is only the plugin's: a class of that name must not be
the alias, and pyright must not read annotations as it.
Indexing gives `Any`: inside a kernel `X[i]` is one element (a TIR scalar),
so `T.exp(X[i])` and `T.max(X[i], 0.0)` type-check as the scalar code they are.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, ForwardRef, Generic, Protocol, TypeVar, get_args, get_origin

from typing_extensions import TypeVarTuple, Unpack

from tltyped.errors import ArgumentTypeError
from tltyped.types.dtypes import UNSTATED_TENSOR_DTYPE, is_dtype_like

DT = TypeVar("DT")
Dims = TypeVarTuple("Dims")

if TYPE_CHECKING:
    import torch
    from typing_extensions import TypeAlias

    Spec = TypeVar("Spec")

    class DTypeDims(Generic[DT, Unpack[Dims]]):
        """The element type and dims of a `Tensor`, as one type argument (see the module docstring)."""

    class TypedTensor(torch.Tensor, Protocol[Spec]):  # type: ignore[misc]  # see the module docstring
        """A torch tensor with a static element type and dims: `TypedTensor[DTypeDims[float16, M, K]]`."""

        _grad_fn: Spec

        def __getitem__(self, index: Any, /) -> Any: ...

    Tensor: TypeAlias = TypedTensor[DTypeDims[DT, Unpack[Dims]]]

    class MypyPlugin:
        """Where the mypy plugin's tensor class lives (see the module docstring)."""

        class Tensor(torch.Tensor, Protocol[DT, Unpack[Dims]]):  # type: ignore[misc]  # see the module docstring
            """`Tensor[float16, M, K]` as the mypy plugin reads it: `TypedTensor`, with the dtype and dims its own."""

            _grad_fn: tuple[DT, Unpack[Dims]]

            def __getitem__(self, index: Any, /) -> Any: ...

else:

    class Tensor(Generic[DT, Unpack[Dims]]):
        """A torch tensor with a static element type and dims."""

        def __new__(cls, shape: object = None, dtype: object = UNSTATED_TENSOR_DTYPE.name, *view: object, **options: object) -> object:
            """`Tensor((M, K), dtype)` is `Tensor[[M, K], dtype]` (TileLang's call form; dtype defaults to float32).

            With more (`T.Tensor(shape, dtype, A.data)` in a kernel body: a view of another buffer's data), it is
            TileLang's buffer.
            """
            if view or options:
                from tltyped.types.dtypes import tilelang_value

                return importlib.import_module("tilelang.language").Tensor(shape, tilelang_value(dtype), *view, **options)
            if shape is None:
                raise ArgumentTypeError("tl.Tensor is an annotation; pass torch tensors to kernels")
            dims = list(shape) if isinstance(shape, (list, tuple)) else [shape]
            return cls[dims, dtype]


def shape_and_dtype(annotation: object) -> tuple[list[Any], Any] | None:
    """The dims and dtype a `Tensor[...]` annotation states, in either order; None for any other annotation.

    TileLang's order takes a shape of one dim unbracketed (`Tensor[n, T.float16]`), and no dtype at all
    (`Tensor[(n,)]`, `Tensor[M, N]`: none of the parts names one) is float32, as TileLang reads those spellings.
    """
    if get_origin(annotation) is not Tensor:
        return None
    args = [arg.__forward_arg__ if isinstance(arg, ForwardRef) else arg for arg in get_args(annotation)]
    if isinstance(args[0], (list, tuple)):
        return list(args[0]), args[1] if len(args) > 1 else UNSTATED_TENSOR_DTYPE.name
    if is_dtype_like(args[0]):
        return args[1:], args[0]
    if len(args) == 2 and is_dtype_like(args[1]):
        return [args[0]], args[1]
    return args, UNSTATED_TENSOR_DTYPE.name
