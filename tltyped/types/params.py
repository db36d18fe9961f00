"""Parameter kinds a kernel signature can state: dyn, ptr, const and tune.

`dyn[int]` means `int` to a type checker and `ptr` an int or a torch tensor
(they are `Annotated` aliases), so a dyn dim TypeVar bound to `dyn[int]`
still binds to sizes. The
runtime reads the marker out of the `Annotated` metadata. `dyn[int, "K"]`
(the JITv2 spelling of a named dyn dim, used directly as a dim of
`Tensor[...]`) carries its name as a `DimName` after the marker.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

from tltyped.errors import ArgumentTypeError, ArgumentValueError, DefinitionError
from tltyped.types.values import describe, typed_key

_T = TypeVar("_T")


class Marker:
    """Metadata tag inside `Annotated[...]` naming a parameter kind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"tltyped.{self.kind}"


@dataclass(frozen=True)
class DimName:
    """Metadata of `dyn[int, "K"]`: the name of the dyn dim it declares."""

    name: str


DYN = Marker("dyn")
PTR = Marker("ptr")
CONST = Marker("const")

if TYPE_CHECKING:
    dyn = Annotated[_T, DYN]
else:

    class _Dyn:
        """`dyn[int]` -> `Annotated[int, DYN]`; `dyn[int, "K"]` also names a dyn dim."""

        def __getitem__(self, args: Any) -> Any:
            if not isinstance(args, tuple):
                return Annotated[args, DYN]
            if len(args) == 2 and isinstance(args[1], str) and args[1].isidentifier():
                return Annotated[args[0], DYN, DimName(args[1])]
            raise DefinitionError(f"dyn takes a type and optionally a dim name: dyn[int] or dyn[int, 'K'], got dyn{list(args)}")

        def __repr__(self) -> str:
            return "tltyped.dyn"

    dyn = _Dyn()
"""A run-time scalar (`dyn[int]`, `dyn[float]`): passed to the kernel, never specialised on."""

if TYPE_CHECKING:
    import torch

    ptr = Annotated[int | torch.Tensor, PTR]
else:
    ptr = Annotated[int, PTR]  # the run-time marker; a tensor is accepted by the call (binding.py)
"""A raw device pointer, e.g. `t.data_ptr()`, or a CUDA tensor, whose data pointer is passed; a dyn scalar."""

const = Annotated[_T, CONST]
"""A compile-time value (the default kind): part of the cache key, must be hashable."""


@dataclass(frozen=True, eq=False)
class Tune:
    """The candidates of a tuned const parameter, searched on first use.

    Two spaces are the same only if their candidates are of the same types
    (`tune([2, 4])` is not `tune([2.0, 4.0])`): a space is part of a cache key.
    A space of a `group` (the names of parameters tuned jointly, `tl.autotune`'s
    configurations) gives its i-th candidate together with the other members'
    i-th: the search runs over the group's configurations (`rows`), not their
    product. Each member holds them all, so a call giving one member a value
    still searches only the configurations listed with it.
    """

    values: tuple[Hashable, ...]
    group: tuple[str, ...] = ()
    rows: tuple[tuple[Hashable, ...], ...] = ()  # a group's configurations: its members' values, in `group`'s order
    _key: Hashable = field(init=False, repr=False)  # the typed values and their hash, computed once: a
    _hash: int = field(init=False, repr=False)  # default space is hashed in every call's cache key

    def __post_init__(self) -> None:
        if not self.values:
            raise ArgumentValueError("tl.tune() needs at least one candidate value")
        for value in self.values:
            try:
                hash(value)
            except Exception as exc:  # noqa: BLE001 - whatever the candidate's own __hash__ raises is reported
                raised = "" if isinstance(exc, TypeError) else f" (its __hash__ raised {type(exc).__name__})"
                raise ArgumentTypeError(
                    f"tl.tune(): candidate {describe(value)} is unhashable{raised} (each candidate keys the kernel cache)"
                ) from None
        if self.group and (len(self.rows) != len(self.values) or {len(row) for row in self.rows} != {len(self.group)}):
            raise ArgumentValueError(f"a tuning space over the group {self.group} needs one configuration of the group "
                                     "per candidate")
        object.__setattr__(self, "_key", (typed_key(self.values), self.group, typed_key(self.rows)))
        object.__setattr__(self, "_hash", hash(self._key))

    def __eq__(self, other: object) -> bool:
        return type(other) is Tune and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        """As `tl.tune([64, 128])` spells it; a member of `tl.autotune`'s configurations as its candidates, and the
        parameters it is tuned jointly over."""
        candidates = f"tl.tune({list(self.values)!r})"
        return f"{candidates}, jointly over {', '.join(self.group)}" if self.group else candidates


TUNE_TAKES = "tl.tune() takes a list of candidate values"
"""What `tune` takes, in the runtime's message and the mypy plugin's."""


def tune(values: Sequence[_T]) -> _T:
    """Declare a tuning space: `block_M: int = tl.tune([64, 128])`.

    Typed as returning one candidate, so the default fits the parameter's
    annotation; the runtime object is a `Tune`.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):  # a set's order differs by process
        raise ArgumentTypeError(f"{TUNE_TAKES}, got {describe(values)}")
    return cast(_T, Tune(tuple(cast(Sequence[Any], values))))
