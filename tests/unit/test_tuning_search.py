"""The tuner's search (autotuner/search.py): the fastest candidate wins, one that fails is recorded and skipped,
and the search shows its progress on a terminal."""

from __future__ import annotations

import io
from collections.abc import Hashable

import pytest
import torch

from tltyped.autotuner import candidates, memory_copy, search
from tltyped.types.params import Tune

TIMES = {16: 3.0, 32: 1.5, 64: None, 128: 2.0}  # ms; None: the candidate fails to build
CONFIGS: list[dict[str, Hashable]] = [{"block": b} for b in TIMES]


def measure(config: dict[str, Hashable]) -> float:
    ms = TIMES[config["block"]]  # type: ignore[index]
    if ms is None:
        raise RuntimeError("ptxas: too many resources requested\nmore detail")
    return ms


def test_candidates_are_every_combination_in_declaration_order() -> None:
    assert candidates({"a": Tune((1, 2)), "b": Tune(("x", "y"))}) == [
        {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]


def test_the_fastest_candidate_wins_and_a_failing_one_is_recorded() -> None:
    result = search("f", CONFIGS, measure)
    assert result.winner == 1
    assert result.times == [3.0, 1.5, None, 2.0]
    assert result.errors[2] == "RuntimeError: ptxas: too many resources requested"
    record = result.as_record(CONFIGS)
    assert record["winner"] == 1
    assert record["candidates"][2] == {"config": {"block": "64"}, "ms": None, "error": result.errors[2]}


def test_no_candidate_that_runs_is_an_error_naming_the_kernel_and_each_failure() -> None:
    with pytest.raises(RuntimeError, match=r"f: no tuning candidate could be built and run:\n  .*too many resources"):
        search("f", [CONFIGS[2], CONFIGS[2]], measure)


def test_a_single_candidate_is_not_timed() -> None:
    assert search("f", [CONFIGS[2]], measure).winner == 0  # `measure` would raise


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_search_shows_candidates_timed_and_the_best_so_far_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    search("gemm", CONFIGS, measure)
    shown = terminal.getvalue()
    assert "tuning gemm" in shown and "/4 [" in shown, shown  # the bar: candidates timed of 4
    assert "best {'block': 32} 1.500 ms" in shown, shown


def test_the_search_shows_nothing_when_the_output_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    piped = io.StringIO()
    monkeypatch.setattr("sys.stderr", piped)
    search("gemm", CONFIGS, measure)
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
