"""`@tl.autotune(configs=[...])`: TileLang's autotuning decorator, above `@tl.jit`, as tuned consts.

TileLang's `@autotune` compiles and times each configuration when the
function is called; tltyped has `tl.tune` defaults for that, searched at the
first call on the call's own tensors and saved on disk (autotuner/). So
`autotune` remakes the kernel (`@tl.jit`'s Decoration, kept on it) from a
copy of the function whose configured parameters default to tuning spaces:
a TileLang file keeps its decorators, and everything after the decoration
is tl.tune's.
"""

from __future__ import annotations

import functools
import inspect
import math
import types
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar, cast

from tltyped.errors import ArgumentTypeError, DefinitionError
from tltyped.jit_function import Decoration
from tltyped.log import warn
from tltyped.types.params import Tune
from tltyped.types.values import describe


J = TypeVar("J")

TILELANG_TUNING_OPTIONS = frozenset({
    "warmup", "rep", "timeout", "supply_type", "supply_prog", "cache_input_tensors", "do_not_specialize",
    "early_stop", "early_stop_factor", "skip_check", "rtol", "atol", "max_mismatched_ratio", "ref_prog",
    "manual_check_prog",
})
"""TileLang's `@autotune` keywords besides `configs`, taken and not used: tltyped times each candidate with
do_bench on the first call's own tensors (so nothing supplies inputs), and checks none against a reference."""


def autotune(
    fn: Any = None, /, *, configs: Sequence[Mapping[str, Hashable]], **tilelang_options: Any,
) -> Callable[[J], J]:
    """TileLang's `@autotune(configs=[{"block_M": 64, ...}, ...])` above `@tl.jit`: the parameters the
    configurations set become tuned consts, searched among the configurations at the kernel's first call (a
    factory's: its kernel object's) and saved on disk, as `tl.tune` defaults are (tuning_spaces says how). A value
    given at the call is not tuned. Inspection (`lower`, `compile`) shows the first configuration's kernel."""
    if fn is not None:
        raise DefinitionError("autotune takes its configurations: @tl.autotune(configs=[...]) above @tl.jit")
    unknown = set(tilelang_options) - TILELANG_TUNING_OPTIONS
    if unknown:
        raise ArgumentTypeError(f"autotune: unexpected keyword {', '.join(sorted(unknown))}")
    if isinstance(configs, Mapping) or not isinstance(configs, Sequence) or not configs or not all(
            isinstance(config, Mapping) for config in configs):
        raise ArgumentTypeError(f"autotune: configs must be a non-empty list of dicts, got {describe(configs)}")
    if any("pass_configs" in config for config in configs):
        warn("autotune: the configurations' pass_configs are not tuned (a kernel builds with its "
             "@tl.jit(pass_configs=...)); configurations that differ only in them are one candidate", UserWarning)
        configs = [{k: v for k, v in config.items() if k != "pass_configs"} for config in configs]
    spaces = tuning_spaces(configs)
    unchecked = [name for name in ("ref_prog", "manual_check_prog") if tilelang_options.get(name) is not None]
    if unchecked:
        warn(f"autotune: {' and '.join(unchecked)} is not run; tltyped checks no candidate against a "
             "reference (check the tuned kernel's result yourself)", UserWarning)

    def remake(kernel: J) -> J:
        decoration = getattr(kernel, "_decoration", None)
        if not isinstance(decoration, Decoration):
            raise DefinitionError(f"autotune: put it above @tl.jit (it got {describe(kernel)})")
        return cast(J, decoration(with_defaults(cast(Any, kernel).__wrapped__, spaces)))

    return remake


def tuning_spaces(configs: Sequence[Mapping[str, Hashable]]) -> dict[str, Tune]:
    """Each configured parameter's tuning space: its own candidates where the configurations are every combination
    of their values (the search is the same, and a value given at the call leaves the others' searched), else one
    group whose i-th configuration is each member's i-th candidate."""
    names = tuple(dict.fromkeys(name for config in configs for name in config))
    partial = next((config for config in configs if set(config) != set(names)), None)
    if partial is not None:
        raise DefinitionError(f"autotune: every configuration sets the same parameters; {dict(partial)} sets no "
                              f"{min(set(names) - set(partial))!r}")
    for config in configs:
        for name, value in config.items():
            try:
                hash(value)
            except Exception as exc:  # noqa: BLE001 - whatever the value's own __hash__ raises is reported
                raised = "" if isinstance(exc, TypeError) else f" (its __hash__ raised {type(exc).__name__})"
                raise ArgumentTypeError(f"autotune: a configuration's {name}={describe(value)} is unhashable{raised} "
                                        "(each candidate keys the kernel cache)") from None
    values = {name: tuple(dict.fromkeys(config[name] for config in configs)) for name in names}
    given = {tuple(config[name] for name in names) for config in configs}
    if len(given) == math.prod(len(candidates) for candidates in values.values()):  # every combination
        return {name: Tune(candidates) for name, candidates in values.items()}
    rows = tuple(tuple(config[name] for name in names) for config in configs)
    return {name: Tune(tuple(config[name] for config in configs), names, rows) for name in names}


def with_defaults(fn: Callable[..., Any], defaults: Mapping[str, Any]) -> Callable[..., Any]:
    """A copy of `fn` (its code, globals and closure) whose named parameters default to `defaults`' values."""
    signature = inspect.signature(fn)
    settable = {p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if set(defaults) - settable:
        raise DefinitionError(f"autotune: {fn.__name__} has no parameter {min(set(defaults) - settable)!r} that a "
                              "configuration can set")
    params = [p.replace(default=defaults[p.name]) if p.name in defaults else p for p in signature.parameters.values()]
    try:
        inspect.Signature(params)
    except ValueError as exc:  # a parameter without a default after a tuned one
        raise DefinitionError(f"autotune: {fn.__name__}: {exc} (give it a default, or make it keyword-only)") from None
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, None, fn.__closure__)
    functools.update_wrapper(copy, fn)
    delattr(copy, "__wrapped__")  # the copy's signature is its own
    given = [p for p in params if p.default is not p.empty]
    copy.__defaults__ = tuple(p.default for p in given if p.kind is not p.KEYWORD_ONLY) or None
    copy.__kwdefaults__ = {p.name: p.default for p in given if p.kind is p.KEYWORD_ONLY} or None
    return copy
