"""`tl.jit(pass_configs=..., compile_flags=...)`: what a jit function adds to how its kernels are built.

Kept apart from lowering (which imports TileLang) because the decorator and
the disk cache's keys need it in processes that never lower anything.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tltyped.errors import ArgumentTypeError
from tltyped.types.values import describe

ENVIRONMENT_PASS_CONFIGS: Mapping[str, str] = {"tl.layout_cost_model": "TILELANG_LAYOUT_COST_MODEL"}
"""The pass configs TileLang defaults from environment variables (`normalize_pass_configs` in
tilelang/transform/pass_config.py, which its own cache keys on): a variable set, stripped and not empty, is the
config's value where neither the body nor `tl.jit` sets it. Read here, without TileLang, since a warm process's
keys need it; tests/unit/test_tilelang_contract.py holds TileLang to the table."""


def environment_pass_configs() -> dict[str, str]:
    """The pass configs the environment sets now (`ENVIRONMENT_PASS_CONFIGS`), each variable read as TileLang reads
    it: a value forced from Python first, then the process environment."""
    found = {key: _read(variable) for key, variable in ENVIRONMENT_PASS_CONFIGS.items()}
    return {key: value for key, value in found.items() if value}


def _read(variable: str) -> str:
    """`variable` as TileLang reads it, stripped: any forced value (an empty one, `0` or `False` too: TileLang takes
    every one that is not None), else the environment's."""
    forced = _forced(variable)
    return str(os.environ.get(variable, "") if forced is None else forced).strip()


def _forced(variable: str) -> object | None:
    """The value `variable` is forced to from Python (`tilelang.env.env.TILELANG_LAYOUT_COST_MODEL = "..."`), which
    TileLang reads before the environment; None where none is, or `tilelang.env` is not imported (a process that
    never imports TileLang has none forced)."""
    environment = getattr(sys.modules.get("tilelang.env"), "Environment", None)
    for declared in vars(environment).values() if environment is not None else ():
        if getattr(declared, "key", None) == variable:
            return getattr(declared, "_forced_value", None)
    return None


@dataclass(frozen=True)
class BuildOptions:
    """TileLang's pass configuration and extra nvcc flags.

    They add to what the body states with `T.annotate_pass_configs` /
    `T.annotate_compile_flags`; where both set a pass config, the
    decorator's value wins (as in TileLang). Where neither sets one that
    TileLang takes from the environment (`ENVIRONMENT_PASS_CONFIGS`), the
    environment's value counts, read at each build.
    """

    pass_configs: Mapping[str, Any] = field(default_factory=dict)
    compile_flags: tuple[str, ...] = ()

    @classmethod
    def of(cls, pass_configs: Mapping[str, Any] | None, compile_flags: str | Sequence[str] | None) -> BuildOptions:
        """`tl.jit`'s two options, each checked to be of its type before it is read (a list of pass configs, or an
        int of flags, raised Python's own AttributeError or TypeError)."""
        if isinstance(compile_flags, str):
            flags = shlex.split(compile_flags)
        elif compile_flags is None or isinstance(compile_flags, Sequence):
            flags = list(compile_flags or ())
        else:
            flags = [compile_flags]  # refused below
        if not all(isinstance(f, str) for f in flags):
            raise ArgumentTypeError(f"compile_flags must be a string or a list of strings, got {describe(compile_flags)}")
        if pass_configs is not None and not isinstance(pass_configs, Mapping):
            raise ArgumentTypeError(f"pass_configs must be a dict of TileLang's pass configurations (PassConfigKey, or "
                                    f"its string) to their values, got {describe(pass_configs)}")
        configs = {str(getattr(key, "value", key)): value for key, value in (pass_configs or {}).items()}
        return cls(configs, tuple(flags))

    def describe(self) -> str:
        """A text of the options for cache keys, the environment's pass configs as they are now: the same in every
        process of the same environment."""
        configs = ", ".join(f"{key}={value!r}" for key, value in sorted(self.pass_configs.items()))
        environment = environment_pass_configs()
        from_environment = f" environment({sorted(environment.items())!r})" if environment else ""
        return f"pass_configs({configs}){from_environment} compile_flags{self.compile_flags!r}"
