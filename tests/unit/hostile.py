"""Badly-behaved objects that callers pass: each raises from one of the hooks the package may call on a value."""

from __future__ import annotations

from typing import Any

import torch


class RaisingHash:
    def __hash__(self) -> int:
        raise ValueError("__hash__ raised")


class RaisingRepr:
    def __repr__(self) -> str:
        raise ValueError("__repr__ raised")


class RaisingEq:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__ raised")

    __hash__ = object.__hash__


class RaisingBool:
    def __bool__(self) -> bool:
        raise RuntimeError("__bool__ raised")


class EqualsRaisingBool:
    """Compares to a RaisingBool, so `a == b` succeeds and `if a == b:` raises."""

    def __eq__(self, other: object) -> Any:
        return RaisingBool()

    __hash__ = object.__hash__


class RaisingClass:
    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: PLE0237 - isinstance() asks for it
        raise RuntimeError("__class__ raised")


class RaisingEverything(RaisingHash, RaisingRepr, RaisingEq):
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"{name} raised")


class Recorded(torch.Tensor):
    """A tensor that records every formatting of itself: a message must describe it, not format it
    (formatting a large CUDA tensor allocates GBs)."""

    formatted: list[str] = []

    def __repr__(self, *args: object, **kwargs: object) -> str:
        Recorded.formatted.append("repr")
        return "<tensor>"

    def __format__(self, spec: str) -> str:
        Recorded.formatted.append("format")
        return "<tensor>"


class StoragelessTensor(torch.Tensor):
    """A wrapper subclass (as tensor-subclass libraries make them): a CUDA tensor with shape and dtype, no memory."""

    @staticmethod
    def __new__(cls, *shape: int, dtype: torch.dtype = torch.float16) -> "StoragelessTensor":
        made: StoragelessTensor = torch.Tensor._make_wrapper_subclass(cls, shape, dtype=dtype, device="cuda")  # type: ignore[attr-defined]
        return made

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise NotImplementedError(f"{func} on a tensor without storage")
