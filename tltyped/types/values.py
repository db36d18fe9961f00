"""Values a caller passes, handled without trusting them: in messages and in cache keys.

`describe(value)` is how every error message shows a user's value: short,
never raising (a `__repr__` that raises is reported as such), and for a
tensor or array its type, dtype and shape only, since formatting the
elements of a large tensor allocates (for float8, gigabytes) and floods the
message.

`shown_size(size)` is how a message shows a size: a tracer's symbolic size
as its symbol and the size it stands for in the call being traced.

`typed_key(value)` is the value as a cache key that equal values of other
types do not share: `2`, `2.0` and `True` compare (and hash) equal, but a
kernel built for one is not the kernel of another. Containers are tagged
element by element, so `(2, 2)` and `(2.0, 2)` differ too; and `0.0` and
`-0.0`, equal as well, compile to different constants, so a float (or
complex) is keyed by its exact text; a dataclass by its fields, so typed.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Hashable
from typing import Any

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlevel = 3


def describe(value: object) -> str:
    """`value` for an error message: its type and a bounded repr, or for an array its dtype and shape."""
    try:
        kind = f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")
    except Exception:  # noqa: BLE001 - a broken metaclass: still say something
        kind = "object"
    try:  # torch.Tensor, numpy.ndarray and their kin
        array = f"{kind} of dtype {value.dtype} and shape {tuple(value.shape)}"  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - not an array (or a broken one): describe it like any object
        pass
    else:
        device = getattr(value, "device", None)
        return array if device is None or callable(device) else f"{array} on {device}"
    return f"{kind} {shown(value)}"


def shown(value: object) -> str:
    """`value`'s bounded repr, never raising: how a signature shows a default, and `describe` after the type."""
    try:
        return _REPR.repr(value)
    except Exception as exc:  # noqa: BLE001 - reprlib calls the value's own __repr__
        return f"(its __repr__ raised {type(exc).__name__})"


def shown_size(size: object) -> str:
    """A size (or stride) for an error message: an int as it is, a tracer's symbolic one (torch's `SymInt`, printed
    `s52`) as `s52 = 512`, the size it has in the call being traced (none for a size with no such value)."""
    hint = None if type(size) is int else getattr(getattr(size, "node", None), "hint", None)
    return str(size) if hint is None else f"{size} = {hint}"


def typed_key(value: Hashable) -> Hashable:
    """`value` tagged with its type, recursively through tuples (named ones too), frozensets and dataclasses
    (whose equality compares fields as `==` does: `Cfg(0.0) == Cfg(-0.0)`)."""
    kind = type(value)  # never `value.__class__`, which a value may fake
    if issubclass(kind, tuple):
        return (kind, *map(typed_key, value))  # type: ignore[call-overload]
    if issubclass(kind, frozenset):
        return (kind, frozenset(map(typed_key, value)))  # type: ignore[call-overload]
    if dataclasses.is_dataclass(kind):
        return (kind, *(typed_key(getattr(value, field.name)) for field in dataclasses.fields(kind)))
    if kind is float or kind is complex:
        return (kind, repr(value))
    return (kind, value)
