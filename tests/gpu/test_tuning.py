"""Tuning results on disk: the first process that calls a tuned kernel searches and saves; the next one neither
builds nor times a candidate (it does not even import TileLang, whose `do_bench` times them). For an eager kernel's
`tl.tune` default, and for a lazy-style factory's argument left at one; and `@tl.autotune`'s configurations, searched
the same way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys, torch
from tests.gpu.kernels import row_sum
x = torch.randn(256, 64, device="cuda")
ref = x.double().sum(dim=1)
out = row_sum(x)
info = row_sum.cache_info()
tilelang = "tilelang" in sys.modules
(launch,) = row_sum._dispatcher.launches.values()  # what the call launched, against each candidate's kernel
launched = [block for block in (32, 64) if row_sum.compile(x, block=block).launch is launch]
print(json.dumps({"err": float((out.double() - ref).norm() / ref.norm()), "info": dict(zip(info._fields, info)),
                  "tilelang": tilelang, "launched": launched}))
"""

FACTORY_PROBE = """
import json, sys, torch
from tests.kernels.lazy_style import row_sum
x = torch.randn(256, 64, device="cuda")
ref = x.double().sum(dim=1)
kernel = row_sum(256, 64)
out = kernel(x)
info = kernel.cache_info()
print(json.dumps({"err": float((out.double() - ref).norm() / ref.norm()), "info": dict(zip(info._fields, info)),
                  "tilelang": "tilelang" in sys.modules}))
"""

AUTOTUNE_PROBE = """
import json, torch
from tests.kernels.eager_style import gemv
a = torch.randn(1024, dtype=torch.float16, device="cuda")
b = torch.randn(512, 1024, dtype=torch.float16, device="cuda")
ref = b.double() @ a.double()
out = gemv(a, b)
info = gemv.cache_info()
print(json.dumps({"err": float((out.double() - ref).norm() / ref.norm()), "info": dict(zip(info._fields, info))}))
"""

IN_PLACE_PROBE = """
import json, torch
import tltyped as tl
from tests.gpu.kernels import axpy
x = torch.randn(100_000, device="cuda")
y = torch.randn(100_000, device="cuda")
want = y.double() + 2.0 * x.double()
axpy(x, y, 2.0, block=tl.tune([128, 256]))  # Y += alpha * X, tuned over the block size on this call's tensors
print(json.dumps({"err": float((y.double() - want).norm() / want.norm())}))
"""


def run_process(cache: Path, probe: str) -> tuple[dict[str, Any], str]:
    """A fresh process calling a tuned `row_sum` once: what it printed, and its log."""
    env = {**os.environ, "TLTYPED_CACHE_DIR": str(cache), "TLTYPED_LOG": "info",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1]), run.stderr


def saved_record(cache: Path) -> dict[str, Any]:
    """The one tuning record on disk, checked: both candidates timed, the fastest the winner."""
    saved = [r for r in (json.loads(p.read_text()) for p in cache.glob("**/*.json")) if "winner" in r]
    assert len(saved) == 1, saved
    record = saved[0]
    assert record["gpu"] == torch.cuda.get_device_name(0)
    assert [c["config"] for c in record["candidates"]] == [{"block": "32"}, {"block": "64"}]
    assert all(isinstance(c["ms"], float) and c["ms"] > 0 and c["error"] is None for c in record["candidates"])
    times = [c["ms"] for c in record["candidates"]]
    assert record["winner"] == times.index(min(times))
    return record


def test_a_tuning_result_is_saved_and_reused_by_the_next_process(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, log = run_process(cache, PROBE)
    assert first["err"] < 1e-5
    assert first["info"]["compiles"] == 2, first  # both candidates of `tl.tune([32, 64])` built
    assert "row_sum: tuned over 2 configurations" in log, log

    record = saved_record(cache)
    assert first["launched"] == [[32, 64][record["winner"]]], first  # the call ran the winner, no other candidate

    second, log = run_process(cache, PROBE)
    assert second["err"] < 1e-5
    assert second["info"]["compiles"] == 0 and second["info"]["disk_hits"] == 1, second
    assert "row_sum: tuning result from the disk cache" in log and "tuned over" not in log, log
    assert not second["tilelang"], "the second process imported TileLang"
    assert second["launched"] == first["launched"], second


def test_a_factory_s_tuned_argument_is_searched_once_and_reused_by_the_next_process(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, log = run_process(cache, FACTORY_PROBE)
    assert first["err"] < 1e-5
    assert first["info"]["compiles"] == 2, first  # the factory's kernel for each candidate of `tl.tune([32, 64])`
    assert "row_sum: tuned over 2 configurations" in log, log
    saved_record(cache)

    second, log = run_process(cache, FACTORY_PROBE)
    assert second["err"] < 1e-5
    assert second["info"]["compiles"] == 0 and second["info"]["disk_hits"] == 1, second
    assert "row_sum: tuning result from the disk cache" in log and "tuned over" not in log, log
    assert not second["tilelang"], "the second process imported TileLang (ran the factory, or built or timed)"


def test_autotune_s_configurations_are_searched_as_tl_tune_s_candidates(tmp_path: Path) -> None:
    result, log = run_process(tmp_path / "cache", AUTOTUNE_PROBE)
    assert result["err"] < 1e-2, result  # fp16 output of a 1024-long dot product
    assert result["info"]["compiles"] == 4, result  # block_N in (2, 4) times reduce_threads in (4, 8)
    assert "gemv: tuned over 4 configurations" in log, log


def test_timing_an_in_place_kernel_leaves_its_tensors_as_one_call_does(tmp_path: Path) -> None:
    """The search runs each candidate many times; the tensors it writes are copies, so Y gets one `+= alpha * X`."""
    result, log = run_process(tmp_path / "cache", IN_PLACE_PROBE)
    assert "axpy: tuned over 2 configurations" in log, log
    assert result["err"] < 1e-6, result


def test_a_tuned_kernel_s_backward_sees_the_value_its_tuning_chose() -> None:
    """A recorded call's `ctx.consts` hold what the call ran: a tuned const's chosen value, not its space."""
    import tltyped as tl
    from tests.gpu.kernels import tuned_double

    seen: list[Any] = []

    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        seen.append(ctx.consts["block"])
        return grad * 2

    tuned_double.register_autograd(backward)
    x = torch.randn(1000, device="cuda", requires_grad=True)
    out = tuned_double(x)
    out.backward(torch.ones_like(out))
    assert x.grad is not None and torch.equal(x.grad, torch.full_like(x, 2.0))
    assert len(seen) == 1 and type(seen[0]) is int and seen[0] in (64, 128), seen
    assert tl.Tune((64, 128)) not in seen
    grad = torch.func.grad(lambda a: tuned_double(a).sum())(x.detach())  # wrapped tensors: the same choice
    assert torch.equal(grad, torch.full_like(x, 2.0)) and seen[1:] == seen[:1], seen
