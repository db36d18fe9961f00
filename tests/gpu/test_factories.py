"""On a GPU: kernels made by one factory, and kernels reading module globals, each compute with their own values,
in one process and in a second process sharing the disk cache (tests/unit/test_fingerprint.py checks the keys)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.gpu.conftest import rel_err
from tests.kernels import factories
from tests.kernels.swapped_code import SOURCE

ROOT = Path(__file__).resolve().parents[2]
N = 1000


def run_map(kernel, a):
    out = torch.full_like(a, float("nan"))
    kernel(a, out)
    return out


def test_factory_kernels_compute_with_their_own_values() -> None:
    a = torch.randn(N, device="cuda")
    cases = [(lambda x, s: x + s, 1.0, a.double() + 1.0), (lambda x, s: x * s, 3.0, a.double() * 3.0),
             (lambda x, s: x + s, 2.0, a.double() + 2.0)]
    for op, scale, expected in cases:
        assert rel_err(run_map(factories.make_map(op, scale), a), expected) < 1e-6, (scale, expected[:4])
    assert rel_err(run_map(factories.make_map(lambda x, s: x + s, 1.0, 256), a), a.double() + 1.0) < 1e-6
    half = a.half()
    assert rel_err(run_map(factories.make_map(lambda x, s: x * s, 3.0, dtype=torch.float16), half), half.double() * 3) < 1e-3
    assert rel_err(run_map(factories.make_shifted(5.0), a), a.double() + 5.0) < 1e-6


def test_a_sum_and_a_product_from_one_factory() -> None:
    a = torch.rand(64, device="cuda") + 0.5
    assert rel_err(factories.SUM(a), a.double().sum().reshape(1)) < 1e-5
    assert rel_err(factories.PRODUCT(a), a.double().prod().reshape(1)) < 1e-4


def test_a_rebound_global_is_read_by_the_next_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call already served from memory is not served again once a global the body reads is rebound: it runs the
    kernel built from the new value; rebound back, the first kernel is taken from memory, not built again."""
    a, b = torch.randn(N, device="cuda"), torch.randn(2 * N, device="cuda")
    kernel = factories.add_offset
    assert rel_err(run_map(kernel, a), a.double() + 1.0) < 1e-6
    assert rel_err(run_map(kernel, b), b.double() + 1.0) < 1e-6
    monkeypatch.setattr(factories, "OFFSET", 2.0)
    assert rel_err(run_map(kernel, a), a.double() + 2.0) < 1e-6
    assert rel_err(run_map(kernel, b), b.double() + 2.0) < 1e-6
    compiles = kernel.cache_info().compiles
    monkeypatch.setattr(factories, "OFFSET", 1.0)
    assert rel_err(run_map(kernel, a), a.double() + 1.0) < 1e-6
    assert kernel.cache_info().compiles == compiles


def test_a_rebound_closure_variable_is_read_by_the_next_call() -> None:
    a = torch.randn(N, device="cuda")
    kernel, rebind = factories.make_rebindable(2.0)
    assert rel_err(run_map(kernel, a), a.double() * 2.0) < 1e-6
    rebind(3.0)
    assert rel_err(run_map(kernel, a), a.double() * 3.0) < 1e-6
    assert rel_err(run_map(kernel, a), a.double() * 3.0) < 1e-6


def test_an_attribute_of_a_users_object_set_after_a_call_is_read_by_the_next_call() -> None:
    a = torch.randn(N, device="cuda")
    config = factories.Opaque(2.0)
    kernel = factories.make_opaque(config)
    assert rel_err(run_map(kernel, a), a.double() * 2.0) < 1e-6
    config.factor = 3.0
    assert rel_err(run_map(kernel, a), a.double() * 3.0) < 1e-6
    assert rel_err(run_map(kernel, a), a.double() * 3.0) < 1e-6


PROBE = """
import json, sys, torch
from tests.kernels import factories as f
a = torch.randn(1000, device="cuda")
results = {}
for name, op, scale in (("add1", lambda x, s: x + s, 1.0), ("mul3", lambda x, s: x * s, 3.0), ("add2", lambda x, s: x + s, 2.0)):
    if name not in sys.argv[1:]:
        continue
    kernel = f.make_map(op, scale)
    out = torch.full_like(a, float("nan"))
    kernel(a, out)
    expected = a.double() + scale if name.startswith("add") else a.double() * scale
    results[name] = [float((out.double() - expected).norm() / expected.norm()), kernel.cache_info()._asdict()]
out = torch.full_like(a, float("nan"))
f.add_block(a, out)
expected = a.double() + f.BLOCK
results["block"] = float((out.double() - expected).norm() / expected.norm())
print(json.dumps(results))
"""


def test_factory_kernels_and_an_environment_constant_across_processes(tmp_path: Path) -> None:
    def run(*names: str, block: str) -> dict:
        env = {**os.environ, "TLTYPED_CACHE_DIR": str(tmp_path), "TLTYPED_TEST_BLOCK": block,
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        done = subprocess.run([sys.executable, "-c", PROBE, *names], capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run("add1", block="32")
    second = run("mul3", "add2", "add1", block="64")
    for name in ("mul3", "add2", "add1"):
        assert second[name][0] < 1e-6, (name, second[name])
    assert second["mul3"][1]["compiles"] == 1 and second["add1"][1]["disk_hits"] == 1
    assert first["block"] < 1e-6 and second["block"] < 1e-6  # each process's own BLOCK


def test_code_swapped_in_place_is_run_by_the_next_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """IPython's `%autoreload` gives the old function object the new `__code__`: a call served from memory before
    runs the kernel of the new code after (a helper's, a `T.macro`'s function's, the jit function's own), and the
    first code given back is served its first kernel again, from memory."""
    (tmp_path / "swapped_on_gpu.py").write_text(SOURCE)  # a user's module: no `from __future__ import annotations`
    monkeypatch.syspath_prepend(str(tmp_path))
    import swapped_on_gpu as users  # type: ignore[import-not-found]

    a = torch.randn(N, device="cuda")
    cases = [
        (users.with_helper, users.offset, users.offset_edited, lambda x: 2.0 * x + 1.0, lambda x: 2.0 * x + 4.0),
        (users.with_macro, users.add_one.__wrapped__, users.add_one_edited, lambda x: x + 1.0, lambda x: x + 5.0),
        (users.plain, users.plain.__wrapped__, users.plain_edited, lambda x: x * 3.0, lambda x: x * 7.0),
    ]
    for kernel, swapped, edited, before, after in cases:
        for _ in range(2):  # the second call is served from memory
            assert rel_err(run_map(kernel, a), before(a.double())) < 1e-6, kernel.__name__
        first, new = swapped.__code__, edited.__code__
        swapped.__code__ = new
        for _ in range(2):
            assert rel_err(run_map(kernel, a), after(a.double())) < 1e-6, kernel.__name__
        compiles = kernel.cache_info().compiles
        swapped.__code__ = first
        assert rel_err(run_map(kernel, a), before(a.double())) < 1e-6, kernel.__name__
        assert kernel.cache_info().compiles == compiles, kernel.__name__
