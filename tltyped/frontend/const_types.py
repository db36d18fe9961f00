"""What a const parameter admits (a hashable value of its annotation's type), and how it enters a cache key.

A const reaches the kernel body as a Python value, and TileLang's builder
turns what it meets into TIR: a `None` where a number belongs crashes the
process inside TVM, a float where an extent belongs fails deep in lowering.
So each const is checked against its annotation first, as a type checker
reads it, with one exception: a `bool` is not an `int` (nor a `float`) here,
because `True` is never meant as a block size and the two compile
differently. An `int` is a `float`; `tuple[...]` is checked element by
element; unions, `Optional`, `Literal`, `tl.const[X]`, dtypes (any spelling
tltyped accepts: `T.dtype`, `torch.dtype`, `tl.DType`) and plain classes
(`isinstance`) are understood, other generics by their class alone. An
annotation it cannot read (a protocol, a TypeVar) admits anything, as does
no annotation.

Equal values of different types (`2`, `2.0`, `True`) compile differently,
so the fast path's key carries a const's type wherever the admitted values
(or an equal value the binder would refuse) could collide: `key_form`.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import sys
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from tltyped.errors import ArgumentTypeError, ArgumentValueError
from tltyped.types.dtypes import DType, DTypeName, is_dtype_like
from tltyped.types.values import describe

_NUMBERS: dict[object, tuple[type, ...]] = {int: (int,), float: (int, float), complex: (int, float, complex)}
_KEY = "(it is part of the kernel's cache key)"


def const_problem(annotation: object, value: object) -> tuple[type[Exception], str] | None:
    """Why `value` cannot be a const of this annotation (the error's type and its text), or None.

    A const must be a value, not a tensor (hashed by identity, its contents
    may change under one key), hashable and equal to itself, or it cannot key
    a cache (a nan never finds its kernel again), of its annotation's type,
    and compared by value (a plain object keys its kernel by its identity
    while its attributes change). The value's own `__hash__`, `__eq__`, `__bool__`
    or `isinstance` hook may raise: that is reported, never propagated.
    """
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(type(value), torch.Tensor):
        return ArgumentTypeError, (
            f"must be a value, not a tensor {_KEY}; got {describe(value)}, hashed by identity, so a change to its "
            "contents would not reach a kernel already built for it: pass its `.item()` or `.tolist()`, or declare "
            "the parameter a tensor"
        )
    try:
        hash(value)
    except Exception as exc:  # noqa: BLE001 - whatever the value's __hash__ raises
        raised = "" if isinstance(exc, TypeError) else f" (its __hash__ raised {type(exc).__name__})"
        return ArgumentTypeError, f"must be hashable {_KEY}; got {describe(value)}{raised}"
    try:
        reflexive = bool(value == value)
    except Exception as exc:  # noqa: BLE001 - whatever the value's __eq__ or __bool__ raises
        raised = type(exc).__name__
        return ArgumentTypeError, f"must compare equal to itself {_KEY}; got {describe(value)}, whose comparison raised {raised}"
    if not reflexive:
        return ArgumentValueError, f"must compare equal to itself {_KEY}; got {describe(value)}"
    try:
        fits = admits(annotation, value)
    except Exception as exc:  # noqa: BLE001 - an isinstance or == that the value makes raise
        raised = type(exc).__name__
        return ArgumentTypeError, f"expects {spelling(annotation)}; checking {describe(value)} against it raised {raised}"
    if not fits:
        return ArgumentTypeError, f"expects {spelling(annotation)}, got {describe(value)}"
    if _compared_by_identity(value):
        return ArgumentTypeError, (
            f"must be compared by value {_KEY}; got {describe(value)}, compared by identity, so a change to its "
            "attributes would not reach a kernel already built for it: pass a frozen dataclass, a NamedTuple or a "
            "tuple of the values the kernel reads"
        )
    return None


def _compared_by_identity(value: object) -> bool:
    """An object with attributes of its own (a `__dict__`), hashed and compared as `object` is: its attributes
    may change under one key. Functions, classes and other callables are compared by identity too, but stand for
    their code; a dtype, `None` or a bare `object()` has no attributes to change. (Read off its type alone: a
    value's `__class__` may raise.)"""
    kind = type(value)
    return (kind.__eq__ is object.__eq__ and kind.__hash__ is object.__hash__ and hasattr(value, "__dict__")
            and not callable(value) and not issubclass(kind, (type, types.ModuleType)))


def admits(annotation: object, value: object) -> bool:
    """Whether `value` fits `annotation` (may raise what the value's own methods raise)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation in (inspect.Parameter.empty, Any, object):
        return True
    if origin is Annotated:
        return admits(args[0], value)
    if annotation is None or annotation is type(None):
        return value is None
    if origin in (Union, types.UnionType):
        return any(admits(arm, value) for arm in args)
    if origin is Literal:
        return any(type(value) is type(option) and value == option for option in args)
    if annotation in _NUMBERS:
        return isinstance(value, _NUMBERS[annotation]) and not isinstance(value, bool)
    if _is_dtype(annotation):
        return is_dtype_like(value)
    if annotation is tuple or origin is tuple:
        return isinstance(value, tuple) and _admits_items(args, value)
    if isinstance(origin, type):
        return isinstance(value, origin)  # frozenset[int], type[X]: the container's class only
    if isinstance(annotation, type):
        try:
            return isinstance(value, annotation)
        except TypeError:  # a protocol that is not runtime-checkable
            return True
    return True


def key_form(annotation: object) -> str:
    """How a const of this annotation enters a cache key so that values of other types never share it.

    "deep": its values may be tuples, frozensets or dataclasses (or anything,
    unannotated), whose items are typed one by one, or floats, whose zeros differ in sign
    but compare equal (`typed_key` tells them apart). "typed": the value and its type, for
    numbers (`2`, `2.0` and `True` are equal) and for classes whose equality
    is the class's own. "value": the value alone, where whatever equals an
    admitted value compiles the same: strings (a TileLang dtype is a `str`
    that equals its name), dtypes, plain enums (equal only to themselves).
    """
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation in (inspect.Parameter.empty, Any, object):
        return "deep"
    if origin is Annotated:
        return key_form(args[0])
    forms = [key_form(arm) for arm in args] if origin in (Union, types.UnionType) else []
    if origin is Literal:
        forms = ["value" if type(option) in (str, bytes) or option is None else key_form(type(option)) for option in args]
    if forms:
        return "deep" if "deep" in forms else "typed" if "typed" in forms else "value"
    if annotation in (str, bytes, None, type(None)) or _is_dtype(annotation):
        return "value"
    if annotation in (float, complex):
        return "deep"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum) and not issubclass(annotation, (int, float, str)):
        return "value"
    if isinstance(origin, type):
        return "deep" if issubclass(origin, (tuple, frozenset)) else "typed"
    if isinstance(annotation, type):
        return "deep" if issubclass(annotation, (tuple, frozenset)) or dataclasses.is_dataclass(annotation) else "typed"
    return "deep"  # one this module cannot read: a TypeVar, a string


def _admits_items(args: tuple[Any, ...], value: tuple[Any, ...]) -> bool:
    if not args:
        return True  # a bare `tuple`
    if len(args) == 2 and args[1] is Ellipsis:
        return all(admits(args[0], item) for item in value)
    if args == ((),):
        return value == ()  # tuple[()]
    return len(args) == len(value) and all(admits(a, item) for a, item in zip(args, value))


def _is_dtype(annotation: object) -> bool:
    import torch

    language = sys.modules.get("tilelang.language")  # its dtype class is an annotation only once it is imported
    if annotation in (DTypeName, torch.dtype) or (language is not None and annotation is language.dtype):
        return True
    if get_origin(annotation) is type:
        (annotation,) = get_args(annotation) or (None,)
    return isinstance(annotation, type) and issubclass(annotation, DType)


def spelling(annotation: object) -> str:
    """The annotation as a message names it: `int`, `tuple[int, int]`, `Optional[int]`."""
    if get_origin(annotation) is Annotated:
        return spelling(get_args(annotation)[0])
    if _is_dtype(annotation):  # `T.dtype`, `torch.dtype`, `type[tl.DType]`: whatever class spells it here
        return "a dtype (tl.float16, T.float16, torch.float16 or 'float16')"
    if isinstance(annotation, type) and get_origin(annotation) is None:
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")

