"""Building several kernels at once: the tuner's candidates, and TileLang's `par_compile`.

Each build runs in a thread of its own: elaboration and lowering hold the
GIL for a fraction of a build, nvcc (a subprocess) none of it, so the builds'
nvcc runs overlap.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from tltyped.errors import ArgumentTypeError, ArgumentValueError, DefinitionError, DimSyntaxError, ElaborationError
from tltyped.types.values import describe

logger = logging.getLogger(__name__)

Built = TypeVar("Built")

NEVER_IGNORED = (ArgumentTypeError, ArgumentValueError, DefinitionError, DimSyntaxError, ElaborationError)
"""What TileLang's `par_compile` raises whatever `ignore_error` says, from elaborating each configuration before
any build starts: a bad argument, a definition it cannot take, a body that fails."""


def build_in_parallel(name: str, builds: Sequence[Callable[[], Built]], workers: int | None = None) -> list[Built | Exception]:
    """Run every build at once (nvcc runs outside the GIL), showing progress: each one's result, or what it raised,
    in order.

    Interrupted (Ctrl-C while the caller waits; the wait wakes every tenth of
    a second to take it, since the signal may reach a build's thread), the
    builds not started are cancelled: leaving the pool waits for the builds
    running then (each releases its locks and leaves the cache as a finished
    or failed build does), not for every build queued behind them, minutes
    of nvcc for a large tuning space on few cores.
    """
    from tqdm import tqdm

    if not builds:
        return []
    with ThreadPoolExecutor(max_workers=min(len(builds), workers or os.cpu_count() or 1)) as pool, \
            tqdm(total=len(builds), desc=f"building {name}", unit="config", disable=None, leave=False) as bar:
        futures = [pool.submit(_outcome, build) for build in builds]
        pending = set(futures)
        try:
            while pending:  # woken often: a signal that another thread received does not end a wait
                done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                bar.update(len(done))
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return [future.result() for future in futures]


def _outcome(build: Callable[[], Built]) -> Built | Exception:
    try:
        return build()
    except Exception as exc:  # noqa: BLE001 - the caller decides what a failed build means
        return exc


def par_compile(
    name: str, compile: Callable[..., Built], configs: Iterable[Mapping[str, Any] | tuple[Any, ...]],
    num_workers: int | None = None, ignore_error: bool = False,
) -> list[Built | None]:
    """TileLang's `fn.par_compile(configs)`: `fn.compile` of each configuration (a dict of keyword arguments, or a
    tuple of positional ones), built in parallel, in order. A configuration that fails raises its error, or with
    `ignore_error` one that elaborates but fails to build (lowering, nvcc, resources) gives None and a warning
    naming it. `configs` and `num_workers` are checked before anything is built, so that neither raises Python's or
    the thread pool's own error (`'NoneType' object is not iterable`, `max_workers must be greater than 0`)."""
    if isinstance(configs, (str, bytes, Mapping)) or not isinstance(configs, Iterable):
        raise ArgumentTypeError(f"{name}: par_compile takes a list of configurations, got {describe(configs)}")
    if num_workers is not None and (type(num_workers) is not int or num_workers < 0):
        error = ArgumentTypeError if type(num_workers) is not int else ArgumentValueError
        raise error(f"{name}: par_compile's num_workers is the number of builds run at once, an int (0 or None: one "
                    f"per CPU), got {describe(num_workers)}")
    configs = list(configs)
    builds: list[Callable[[], Built]] = []
    for config in configs:
        if isinstance(config, Mapping):
            builds.append(functools.partial(compile, **config))
        elif isinstance(config, tuple):
            builds.append(functools.partial(compile, *config))
        else:
            raise ArgumentTypeError(
                f"{name}: par_compile takes each configuration as a dict of keyword arguments or a tuple of "
                f"positional ones, got {describe(config)}"
            )
    compiled: list[Built | None] = []
    for config, result in zip(configs, build_in_parallel(name, builds, num_workers)):
        if not isinstance(result, Exception):
            compiled.append(result)
        elif ignore_error and not isinstance(result, NEVER_IGNORED):
            logger.warning("%s: configuration %s failed to build: %s", name, describe(config), result)
            compiled.append(None)
        else:
            raise result
    return compiled
