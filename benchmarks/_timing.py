"""The timing harness shared by the benchmarks, and the check each result passes before it is timed.

A call is timed inside a loop generated for that one statement, with every
name it uses bound as a local: the harness then adds one `for` step per call
and nothing else (no lambda, no `*args` unpacking), so figures of a few
hundred nanoseconds still mean something, and every competitor pays the same.

Importing it also puts the checkout's root on sys.path, so that the scripts
benchmark this working tree's tltyped, installed or not.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

K = TypeVar("K")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(1, str(ROOT))  # after the script's own folder, before site-packages


def make_loop(stmt: str, names: dict[str, Any]) -> Callable[[int], None]:
    """A function running `stmt` n times, e.g. make_loop("f(A, B)", {"f": f, "A": a, "B": b})."""
    params = "".join(f", {name}" for name in names)
    source = f"def _loop(_n{params}):\n    for _ in range(_n):\n        {stmt}\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<loop: {stmt}>", "exec"), namespace)  # noqa: S102
    loop = namespace["_loop"]
    return lambda n: loop(n, **names)


def best_per_call(loop: Callable[[int], None], calls: int, loops: int, sync: Callable[[], None]) -> float:
    """Seconds per call: the best of `loops` runs of `calls` calls, each run ending in one `sync()`.

    The best run, not the mean: interference only ever adds time. GC is off
    while timing, as in `timeit`, so a collection does not land in one run.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        best = float("inf")
        for _ in range(loops):
            start = time.perf_counter()
            loop(calls)
            sync()
            best = min(best, time.perf_counter() - start)
    finally:
        if enabled:
            gc.enable()
    return best / calls


def cuda_batch(call: Callable[[], Any], per_batch: int) -> Callable[[], float]:
    """A timer of `per_batch` calls between two CUDA events: milliseconds per call, of the GPU's time.

    For kernels that run longer than a launch takes: the events see the
    device's time, queued back to back, not the host's.
    """
    import torch

    def timer() -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(per_batch):
            call()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / per_batch

    return timer


def interleaved(timers: Mapping[K, Callable[[], float]], rounds: int) -> dict[K, float | Exception]:
    """Each timer's median over `rounds` rounds, each round calling every timer once, in turn.

    A host that drifts during a run (clocks settling, a neighbour waking up)
    then weighs on every figure alike, where timing one after another would
    put the drift between them. A timer that raises is dropped from later
    rounds; its exception stands in for its figure.
    """
    samples: dict[K, list[float]] = {key: [] for key in timers}
    failed: dict[K, Exception] = {}
    for _ in range(rounds):
        for key, timer in timers.items():
            if key in failed:
                continue
            try:
                samples[key].append(timer())
            except Exception as exc:
                failed[key] = exc
    return {key: failed[key] if key in failed else statistics.median(samples[key]) for key in timers}


HBM_NOMINAL = {"H200": 4.8e12, "H100 NVL": 3.9e12, "H100 80GB HBM3": 3.35e12, "H100 PCIe": 2.0e12}
"""Datasheet HBM bandwidth (bytes/s) by a part of the device's name, first match wins."""


def hbm_bytes_per_s(device_name: str) -> float | None:
    """The HBM bandwidth the GPU's datasheet gives, in bytes/s; None for a GPU not in HBM_NOMINAL."""
    return next((rate for part, rate in HBM_NOMINAL.items() if part in device_name), None)


def relative_error(got: Any, want: Any) -> float:
    """||got - want|| / ||want|| (Frobenius) of two torch tensors, computed in float64."""
    return float((got.double() - want.double()).norm() / want.double().norm())


def short(exc: BaseException, limit: int = 90) -> str:
    """One line of an exception, for an `n/a (...)` cell."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = f"{type(exc).__name__}: {text}" if not isinstance(exc, NotLaunched) else text
    return text if len(text) <= limit else text[: limit - 3] + "..."


class NotLaunched(Exception):
    """Raised by a competitor that was built but cannot run here (no GPU, dry run)."""
