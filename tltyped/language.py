"""TileLang's kernel language, plus tltyped's typed names; importing it imports neither TileLang nor TVM.

`import tltyped.language as T` gives everything `tilelang.language` has
(`T.Kernel`, `T.copy`, `T.gemm`, `T.Pipelined`, `T.const`, `T.dynamic`, ...)
with these differences:
- `T.Tensor` is `tl.Tensor`, subscriptable in both orders
  (`T.Tensor[[M, K], T.float16]` and `T.Tensor[T.float16, M, K]`) and
  callable as in TileLang (`T.Tensor((M, K), T.float16)` is the subscription);
- `T.empty` declares an output (allocated on the inputs' device at each
  call, returned to the caller) and `T.alloc_global` a global buffer
  allocated the same way: an output when the kernel returns it, scratch
  memory otherwise;
- `T.tune` is `tl.tune`;
- `T.prim_func` (a lazy-style factory's kernel) reads `T.Tensor(shape, dtype)`
  annotations as TileLang's buffers;
- `T.macro` makes TileLang's macro at its first call, so defining one
  imports nothing (unless Python evaluates a TileLang-only annotation of it,
  such as `T.SharedBuffer`, at definition);
- functions that take a dtype also take tltyped's dtype classes (`tl.float32`):
  in a kernel body every call into TileLang or TVM does (elaboration passes
  it through `types.dtypes.call_with_tilelang_dtypes`), elsewhere the
  `T.alloc_*` functions and `T.cast` do.

TileLang's names load on first use: TileLang and TVM take seconds to import,
and a process whose kernels are all in the disk cache never needs them. Until
then, a dtype such as `T.float16` (in an annotation, a default, a module
constant) is a `DTypeName`: a `str` equal to TileLang's dtype, which TileLang
accepts wherever it takes a dtype; elaboration hands TileLang its own dtype
objects in its place.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from tltyped import locks
from tltyped.errors import ArgumentTypeError, DefinitionError
from tltyped.types.dtypes import (
    BY_NAME, DTypeLike, DTypeName, argument_dtype, call_with_tilelang_dtypes, tilelang_value, to_tilelang,
)
from tltyped.types.params import tune as tune
from tltyped.types.source import annotated_parameter, function_ast
from tltyped.types.tensor import Tensor as Tensor
from tltyped.types.tensor import shape_and_dtype

_P = ParamSpec("_P")
_R = TypeVar("_R")
_TILELANG = "tilelang.language"


def _tilelang() -> Any:
    """TileLang's language. Its package first: importing that waits for another thread's import of TileLang,
    which importing `tilelang.language` alone would find half done (and fail in)."""
    importlib.import_module("tilelang")
    return importlib.import_module(_TILELANG)


def _accepts_dtype_classes(name: str) -> Callable[..., Any]:
    """TileLang's function `name`, taking tltyped's dtype classes as its dtypes too."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return call_with_tilelang_dtypes(getattr(_tilelang(), name), *args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = name
    return wrapper


alloc_shared = _accepts_dtype_classes("alloc_shared")
alloc_fragment = _accepts_dtype_classes("alloc_fragment")
alloc_local = _accepts_dtype_classes("alloc_local")
alloc_var = _accepts_dtype_classes("alloc_var")
cast = _accepts_dtype_classes("cast")


def _shape_and_dtype(shape: tuple[Any, ...], dtype: DTypeLike) -> tuple[list[Any], str]:
    """TileLang's spellings: `(shape)`, `(shape, dtype)` or `(*dims)`, each with `dtype=`."""
    if shape and isinstance(shape[0], (tuple, list)):
        if len(shape) > 2:
            raise ArgumentTypeError(f"expected a shape and a dtype, got {shape!r}")
        dims, dtype = list(shape[0]), shape[1] if len(shape) == 2 else dtype
    else:
        dims = list(shape)
    return dims, to_tilelang(argument_dtype(dtype))  # torch allocates it: an argument type


def empty(*shape: Any, dtype: DTypeLike = "float32") -> Any:
    """Declare an output tensor of the kernel (`T.empty((M, N), dtype)` or `T.empty(M, N, dtype=...)`); return it."""
    from tilelang.language.eager.builder import OutTensor

    return OutTensor(*_shape_and_dtype(shape, dtype))


@dataclass
class GlobalTensor:
    """What `T.alloc_global` declares: a kernel parameter the call allocates, returned only if the kernel returns it."""

    shape: list[Any]
    dtype: str


def alloc_global(*shape: Any, dtype: DTypeLike = "float32") -> Any:
    """A global buffer allocated by torch at each call: an output if the kernel returns it, else scratch memory.

    In a lazy-style kernel (a `T.prim_func` a factory returns), TileLang's own workspace, as TileLang builds it.
    """
    from tilelang.language.eager.builder import Builder

    dims, name = _shape_and_dtype(shape, dtype)
    builder = Builder.current()
    if builder is not None and not getattr(builder, "allocates_globals", False):  # TileLang's own prim_func
        return _tilelang().alloc_global(dims, tilelang_value(name))  # (not tltyped's elaboration, frontend/elaborate.py)
    return GlobalTensor(dims, name)


def macro(func: Callable[_P, _R] | None = None) -> Any:
    """TileLang's `T.macro` (`@T.macro` or `@T.macro()`), made at its first call, in an elaboration.

    TileLang's decorator imports TileLang and TVM (seconds) where the macro is
    defined: a module of kernels and their macros could then never start warm
    from the disk cache. The function returned keeps `__wrapped__`, so the
    disk cache's fingerprint covers the macro's module.

    It calls the function its `__wrapped__` names, with the code that
    function has then: IPython's `%autoreload` gives the old wrapper the new
    one's `__dict__` (so its `__wrapped__` is the function defined anew), and
    a hot patcher may give the function other code in place. TileLang's macro
    parses the function's source where its code says it is, so it is made
    again for another function or code, as the kernels calling it are built
    again (frontend/fingerprint.py watches both).
    """
    if func is None:
        return macro
    made = functools.lru_cache(maxsize=1)(lambda body, code: _tilelang().macro(body))

    @functools.wraps(func)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        body = call.__wrapped__  # type: ignore[attr-defined]
        result: _R = made(body, body.__code__)(*args, **kwargs)
        return result

    return call


def prim_func(func: Callable[_P, _R] | None = None, **options: Any) -> Any:
    """TileLang's `T.prim_func` (lazy style), reading tltyped's `T.Tensor` annotations as TileLang's buffers of
    that shape and dtype.

    TileLang takes a buffer from a parameter's annotation in the signature
    (a string too, under `from __future__ import annotations`) or, for a
    parameter the signature leaves bare, at the top of the body (`A:
    T.Tensor[[M, K], T.float16]`, which Python never evaluates). Each is
    evaluated here as Python evaluates a signature's annotations at the
    definition, in the scope that defines the function (a factory's
    arguments, even those the body never reads, which TileLang's own reading
    misses), and handed to TileLang as its buffer in the signature. An
    in-body annotation TileLang also reads again inside the body, so it may
    name only what the body can see there (`_check_body_names`).
    """
    if func is None:
        return functools.partial(prim_func, **options)
    for name, annotation in _parameter_annotations(func, _defining_scope(func)).items():
        stated = shape_and_dtype(annotation)
        if stated is not None:
            func.__annotations__[name] = _tilelang().Tensor(stated[0], tilelang_value(stated[1]))
    return _tilelang().prim_func(func, **options)


def _defining_scope(func: Callable[..., Any]) -> dict[str, Any]:
    """The names `func`'s annotations may use: its module's, then those of the frame whose code defines it (found by
    its code object, however `T.prim_func` was reached: a decorator, a helper, a wrapper), then its closure's (an
    empty cell, bound after the definition, is left out)."""
    env = dict(func.__globals__)
    frame = sys._getframe(1)
    while frame is not None and func.__code__ not in frame.f_code.co_consts:
        frame = frame.f_back
    if frame is not None:
        env.update(frame.f_locals)
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            env[name] = cell.cell_contents
        except ValueError:  # empty
            pass
    return env


def _parameter_annotations(func: Callable[..., Any], env: dict[str, Any]) -> dict[str, object]:
    """Each parameter's annotation, evaluated in `env`: the signature's, else the first at the top of the body."""
    stated = {name: _evaluated(a, env) for name, a in func.__annotations__.items() if name != "return"}
    bare = [name for name in inspect.signature(func).parameters if name not in stated]
    if bare:
        node, filename = function_ast(func)
        for stmt in node.body:
            annotated = annotated_parameter(stmt, bare)
            if annotated is not None and annotated[0] not in stated:
                name, annotation = annotated
                _check_body_names(func, name, annotation, f"{filename}:{stmt.lineno}")
                stated[name] = eval(compile(ast.Expression(annotation), filename, "eval"), env)
    return stated


def _check_body_names(func: Callable[..., Any], name: str, annotation: ast.expr, where: str) -> None:
    """TileLang evaluates an in-body annotation again inside the body, which sees the module's names and those the
    body's code refers to: a name bound by the body itself, or one that postponed annotations leave unreferenced
    (`from __future__ import annotations`), would fail there."""
    visible = set(func.__globals__) | set(func.__code__.co_freevars) | set(dir(builtins))
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id not in visible:
            raise DefinitionError(
                f"{where}: the annotation of parameter {name!r} in the prim_func's body names {node.id!r}, which "
                "the body cannot see where TileLang reads it (a name the body binds, or one only annotations use "
                "under `from __future__ import annotations`): annotate the parameter in the signature"
            )


def _evaluated(annotation: object, env: dict[str, Any]) -> object:
    """A string annotation's value, or the string where it names nothing here (TileLang reads some, such as
    `"float32"`, itself)."""
    if not isinstance(annotation, str) or isinstance(annotation, DTypeName):  # a dtype (`alpha: T.float32`)
        return annotation
    try:
        return eval(annotation, env)
    except Exception:  # noqa: BLE001 - an annotation may raise anything; TileLang reports it as it reads it
        return annotation


_DTYPE_NAMES = {name: DTypeName(name) for name in BY_NAME}
_OWN = frozenset(globals())  # tltyped's names: TileLang's never replace them
_load_lock = locks.Lock()


@functools.cache
def _load() -> None:
    """Import TileLang's language and make its names this module's (once)."""
    with _load_lock:
        language = _tilelang()
        names = globals()
        for name in language.__all__:
            if name not in _OWN:
                names[name] = getattr(language, name)


def __getattr__(name: str) -> Any:
    """TileLang's name `name`; a dtype name before TileLang is imported is a `DTypeName`."""
    if name == "__all__":  # `from tltyped.language import *`: TileLang's names and tltyped's
        _load()
        return sorted(n for n in globals() if not n.startswith("_"))
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _DTYPE_NAMES and _TILELANG not in sys.modules:
        return _DTYPE_NAMES[name]
    if name == "dtype" and _TILELANG not in sys.modules:
        return DTypeName  # as an annotation (`out_dtype: T.dtype`): the class of dtype names
    _load()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} (TileLang's language) has no attribute {name!r}") from None


def __dir__() -> list[str]:
    _load()
    return sorted(globals())
