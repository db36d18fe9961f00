"""Pick the fastest configuration of a tuned kernel by running each on the call's inputs.

Every configuration of the tuned parameters (the combinations of their
candidates; a group's, from `tl.autotune`, as listed) is compiled (in
parallel, see the Dispatcher) and timed with TileLang's `do_bench` (L2 flushed
between runs, repeats chosen by time) on the arguments of the first call
that needs it; the fastest wins. The candidates are timed in rounds, each
once a round, in turn (forwards, then backwards), and a candidate's time is
the median of its rounds: a GPU's clocks fall as it heats up to its power cap
(a large GEMM gets there within one candidate's tenth of a second), which
would favour whichever candidates were timed first, all of a candidate's runs
at once. The result (every candidate's time or error, the winner, the GPU)
is saved in the disk cache, so a later process reuses it without building or
timing anything. A progress bar shows the search when the output is a
terminal. The timed runs write copies of the tensors the kernel writes
(`memory_copy`), so an in-place or accumulating kernel's tensors see one run,
the winner's, as an untuned call's do.
"""

from __future__ import annotations

import itertools
import logging
import statistics
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tltyped.errors import TuningError
from tltyped.types.params import Tune
from tltyped.types.values import typed_key

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


def tuned(consts: Mapping[str, Any]) -> dict[str, Tune]:
    """The tuning spaces among a kernel's consts (an eager kernel's `tl.tune` defaults, a factory's arguments)."""
    return {name: value for name, value in consts.items() if type(value) is Tune}


def candidates(consts: Mapping[str, Any]) -> list[dict[str, Hashable]]:
    """Every combination of the candidates of the tuning spaces among `consts`, in declaration order: of each
    space's own, and of each group's configurations. A member of a group given a value is no longer in the space:
    the group's configurations are then those listed with that value (all of them, where none is)."""
    space = tuned(consts)
    units: dict[tuple[str, ...], list[tuple[Hashable, ...]]] = {}  # names -> their joint candidates
    for name, tune in space.items():
        # a member the call gave a value, or a space of its own (`tl.tune` at the call), is no longer the group's
        names = tuple(n for n in tune.group if n in space and space[n].group == tune.group) if tune.group else (name,)
        if names not in units:
            units[names] = _group_candidates(tune, names, consts) if tune.group else [(v,) for v in dict.fromkeys(tune.values)]
    return [
        {name: value for names, values in zip(units, combination) for name, value in zip(names, values)}
        for combination in itertools.product(*units.values())
    ]


def _group_candidates(tune: Tune, searched: tuple[str, ...], consts: Mapping[str, Any]) -> list[tuple[Hashable, ...]]:
    """A group's configurations, each once, over the members still `searched`: those that agree with the values
    the other members were given (equal to them), or every one where none does."""
    given = {i: consts[n] for i, n in enumerate(tune.group) if n not in searched and type(consts.get(n)) is not Tune}
    agreeing = [row for row in tune.rows if all(_equal(row[i], value) for i, value in given.items())]
    columns = [tune.group.index(n) for n in searched]
    found: dict[Hashable, tuple[Hashable, ...]] = {}  # typed, as a cache key is: (1, 2) is not (1.0, 2)
    for values in (tuple(row[c] for c in columns) for row in agreeing or tune.rows):
        found.setdefault(typed_key(values), values)
    return list(found.values())


def _equal(listed: Hashable, given: Any) -> bool:
    try:
        return bool(listed == given)
    except Exception:  # noqa: BLE001 - a value whose comparison raises agrees with nothing
        return False


def first_candidates(consts: Mapping[str, Any]) -> dict[str, Any]:
    """The consts with the tuning spaces at their first candidate (for a group, its first configuration that agrees
    with its members given a value): what inspection (`lower`, `compile`) and a factory's signature stand on, for
    every candidate alike (a tuned value chooses a schedule, not a signature)."""
    return {**consts, **candidates(consts)[0]}


ROUNDS = 5  # rounds of timing: each candidate runs for about 5 x (5 + 20) ms in all
ROUND_WARMUP_MS, ROUND_MS = 5, 20


def time_call(run: Callable[[], Any], device: int) -> float:
    """Median milliseconds of `run()` on `device`'s current stream over one round's runs, L2 flushed before each."""
    from tilelang.profiler import do_bench

    return float(do_bench(run, warmup=ROUND_WARMUP_MS, rep=ROUND_MS, device=device, return_mode="median"))


def memory_copy(t: torch.Tensor) -> torch.Tensor:
    """A copy of the memory `t` spans, viewed with `t`'s sizes and strides: a kernel built for `t`'s layout addresses
    it as it would `t` (a gapped or overlapping view too, which `clone` would make dense), and writes only it."""
    if t.numel() == 0:
        return t.clone()
    span = 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    return t.as_strided((span,), (1,)).clone().as_strided(t.shape, t.stride())


@dataclass
class SearchResult:
    """What a search measured: each candidate's milliseconds or error, and the winner's index."""

    times: list[float | None] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    winner: int = 0

    def as_record(self, configs: list[dict[str, Hashable]]) -> dict[str, Any]:
        return {
            "candidates": [
                {"config": {k: repr(v) for k, v in c.items()}, "ms": t, "error": e}
                for c, t, e in zip(configs, self.times, self.errors)
            ],
            "winner": self.winner,
        }


def search(
    name: str, configs: list[dict[str, Hashable]], prepare: Callable[[dict[str, Hashable]], Callable[[], float]],
    rounds: int = ROUNDS,
) -> SearchResult:
    """Time every configuration in `rounds` rounds; the smallest median wins. `prepare(config)` gives the function
    timing one round of it (milliseconds). Candidates that fail to prepare or to run are recorded and skipped."""
    from tqdm import tqdm

    if len(configs) == 1:
        return SearchResult([None], [None], 0)
    errors: list[str | None] = [None] * len(configs)
    timers: dict[int, Callable[[], float]] = {}
    for index, config in enumerate(configs):
        try:
            timers[index] = prepare(config)
        except Exception as exc:  # a configuration TileLang cannot build is not a candidate
            errors[index] = _error(exc)
    rounds_ms: dict[int, list[float]] = {index: [] for index in timers}
    medians: dict[int, float] = {}  # of the candidates still running, after the last round
    with tqdm(total=rounds * len(timers), desc=f"tuning {name}", unit="run", disable=None, leave=False) as bar:
        for round_ in range(rounds):
            for index in list(timers) if round_ % 2 == 0 else list(timers)[::-1]:
                try:
                    rounds_ms[index].append(timers[index]())
                except Exception as exc:  # nor is one that cannot run
                    errors[index] = _error(exc)
                    del timers[index]
                    bar.total = (bar.total or 0) - (rounds - round_ - 1)
                bar.update()
            medians = {index: statistics.median(rounds_ms[index]) for index in timers}
            if medians:
                best = min(medians, key=medians.__getitem__)
                bar.set_postfix_str(f"best {configs[best]} {medians[best]:.3f} ms")
    if not medians:
        raise TuningError(f"{name}: no tuning candidate could be built and run:\n  " + "\n  ".join(
            f"{c}: {e}" for c, e in zip(configs, errors)))
    winner = min(medians, key=medians.__getitem__)
    logger.info("%s: tuned over %d configurations in %d rounds: %s (%.4f ms)", name, len(configs), rounds,
                configs[winner], medians[winner])
    return SearchResult([medians.get(i) for i in range(len(configs))], errors, winner)


def _error(exc: Exception) -> str:
    """A failure as a search records it: the exception's type and first line."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
