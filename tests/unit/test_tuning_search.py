"""The tuner's search (autotuner/search.py): the fastest candidate wins, timed in rounds so that a GPU slowing as it
heats favours none; one that fails is recorded and skipped; the search shows its progress on a terminal."""

from __future__ import annotations

import io
from collections.abc import Callable, Hashable

import pytest
import torch

from tltyped.autotuner import candidates, memory_copy, search
from tltyped.types.params import Tune

TIMES = {16: 3.0, 32: 1.5, 64: None, 128: 2.0}  # ms; None: the candidate fails to build
CONFIGS: list[dict[str, Hashable]] = [{"block": b} for b in TIMES]


def prepare(config: dict[str, Hashable]) -> Callable[[], float]:
    ms = TIMES[config["block"]]  # type: ignore[index]
    if ms is None:
        raise RuntimeError("ptxas: too many resources requested\nmore detail")
    return lambda: ms


def test_candidates_are_every_combination_in_declaration_order() -> None:
    assert candidates({"a": Tune((1, 2)), "b": Tune(("x", "y"))}) == [
        {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]


def test_the_fastest_candidate_wins_and_a_failing_one_is_recorded() -> None:
    result = search("f", CONFIGS, prepare)
    assert result.winner == 1
    assert result.times == [3.0, 1.5, None, 2.0]
    assert result.errors[2] == "RuntimeError: ptxas: too many resources requested"
    record = result.as_record(CONFIGS)
    assert record["winner"] == 1
    assert record["candidates"][2] == {"config": {"block": "64"}, "ms": None, "error": result.errors[2]}


def test_no_candidate_that_runs_is_an_error_naming_the_kernel_and_each_failure() -> None:
    with pytest.raises(RuntimeError, match=r"f: no tuning candidate could be built and run:\n  .*too many resources"):
        search("f", [CONFIGS[2], CONFIGS[2]], prepare)


def test_a_single_candidate_is_not_timed() -> None:
    assert search("f", [CONFIGS[2]], prepare).winner == 0  # `prepare` would raise


class HeatingGPU:
    """Kernels whose times grow by up to 10% over the first runs of a search, as a GPU's clocks fall while it heats
    up to its power cap, then hold: a candidate timed only while the GPU is cool looks faster than it is."""

    def __init__(self, times: list[float]) -> None:
        self.times, self.runs = times, 0

    def prepare(self, config: dict[str, Hashable]) -> Callable[[], float]:
        def one_round() -> float:
            self.runs += 1
            return self.times[config["index"]] * (1 + 0.1 * min(self.runs, 8) / 8)  # type: ignore[index]
        return one_round


def test_a_candidate_timed_while_the_gpu_is_cool_does_not_win_for_it() -> None:
    configs: list[dict[str, Hashable]] = [{"index": i} for i in range(3)]
    result = search("gemm", configs, HeatingGPU([1.00, 0.97, 1.02]).prepare)
    assert result.winner == 1, result.times
    assert result.times[1] < result.times[0] < result.times[2]  # type: ignore[operator]


def test_rounds_alternate_the_order_so_steady_drift_favours_no_position() -> None:
    order: list[int] = []

    def prepare(config: dict[str, Hashable]) -> Callable[[], float]:
        return lambda: order.append(config["index"]) or 1.0  # type: ignore[func-returns-value, arg-type]

    search("f", [{"index": i} for i in range(3)], prepare, rounds=3)
    assert order == [0, 1, 2, 2, 1, 0, 0, 1, 2]


def test_a_candidate_failing_in_a_later_round_is_recorded_and_loses() -> None:
    runs = {0: 0}

    def prepare(config: dict[str, Hashable]) -> Callable[[], float]:
        def one_round() -> float:
            if config["index"] == 0:
                runs[0] += 1
                if runs[0] == 3:
                    raise RuntimeError("CUDA error: an illegal memory access was encountered")
                return 0.5
            return 1.0
        return one_round

    result = search("f", [{"index": 0}, {"index": 1}], prepare)
    assert result.winner == 1 and result.times == [None, 1.0]
    assert result.errors[0] == "RuntimeError: CUDA error: an illegal memory access was encountered"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_search_shows_candidates_timed_and_the_best_so_far_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    search("gemm", CONFIGS, prepare)
    shown = terminal.getvalue()
    assert "tuning gemm" in shown and "/15 [" in shown, shown  # the bar: rounds run of 3 candidates x 5 rounds
    assert "best {'block': 32} 1.500 ms" in shown, shown


def test_the_search_shows_nothing_when_the_output_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    piped = io.StringIO()
    monkeypatch.setattr("sys.stderr", piped)
    search("gemm", CONFIGS, prepare)
    assert piped.getvalue() == ""


@pytest.mark.parametrize(
    "view",
    [lambda t: t, lambda t: t[1:, ::3], lambda t: t.t(), lambda t: t[2].expand(4, 12), lambda t: t[:0]],
    ids=["contiguous", "gapped, offset", "transposed", "overlapping", "empty"],
)
def test_a_timed_run_writes_a_copy_laid_out_as_the_call_s_tensor(view) -> None:
    """What the search launches in place of a tensor the kernel writes: the same sizes, strides and values (the
    kernel is built for the layout), in memory of its own."""
    t = view(torch.randn(6, 12, dtype=torch.float64))
    before = t.clone()
    copy = memory_copy(t)
    assert (copy.shape, copy.stride(), copy.dtype) == (t.shape, t.stride(), t.dtype)
    assert torch.equal(copy, t)
    if t.numel():
        assert copy.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
        copy.as_strided((copy.untyped_storage().nbytes() // 8,), (1,), 0).fill_(0)  # every element it spans
        assert torch.equal(t, before)
