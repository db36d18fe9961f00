"""Pick the fastest configuration of a tuned kernel by running each on the call's inputs.

Every combination of the tuned parameters' candidates is compiled and timed
with CUDA events on the arguments of the first call that needs it; the
fastest wins and is what that call (and every later call with the same
static signature) runs. Kernels that accumulate into their inputs see them
run several times during the search, as with any benchmark-based tuner.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import torch

from tltyped.types.params import Tune


def candidates(space: Mapping[str, Tune]) -> list[dict[str, Hashable]]:
    """Every combination of the candidates, in declaration order."""
    names = list(space)
    return [dict(zip(names, values)) for values in itertools.product(*(space[n].values for n in names))]


def time_call(run: Callable[[], Any], device: torch.device, *, warmup: int = 3, repeat: int = 10) -> float:
    """Median milliseconds of `run()` on `device`'s current stream."""
    with torch.cuda.device(device):
        for _ in range(warmup):
            run()
        times = []
        for _ in range(repeat):
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(float(start.elapsed_time(end)))
    times.sort()
    return times[len(times) // 2]


def search(configs: list[dict[str, Hashable]], measure: Callable[[dict[str, Hashable]], float]) -> dict[str, Hashable]:
    """The configuration with the smallest measured time; failures are skipped."""
    if len(configs) == 1:
        return configs[0]
    best: tuple[float, dict[str, Hashable]] | None = None
    errors: list[str] = []
    for config in configs:
        try:
            elapsed = measure(config)
        except Exception as exc:  # a configuration TileLang cannot build or run is not a candidate
            errors.append(f"{config}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            continue
        if best is None or elapsed < best[0]:
            best = (elapsed, config)
    if best is None:
        raise RuntimeError("no tuning candidate could be built and run:\n  " + "\n  ".join(errors))
    return best[1]
