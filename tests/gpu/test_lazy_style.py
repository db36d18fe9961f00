"""On a GPU: lazy-style kernel objects compute what torch computes, take and return what their PrimFunc says, profile
with TileLang's Profiler, and start warm in a second process without running the factory or importing TileLang."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.gpu.conftest import poison_allocator, rel_err
from tests.kernels import lazy_style as ks

ROOT = Path(__file__).resolve().parents[2]


def test_a_gemm_with_a_dyn_m_returns_its_out_idx_tensor() -> None:
    kernel = ks.matmul(T.dynamic("m"), 256, 128, 64, 64, 32)
    for m in (192, 77):
        a = torch.randn(m, 128, dtype=torch.float16, device="cuda")
        b = torch.randn(128, 256, dtype=torch.float16, device="cuda")
        poison_allocator(((m, 256), torch.float16))
        c = kernel(a, b)
        assert c.shape == (m, 256) and c.dtype == torch.float16
        assert rel_err(c, a.double() @ b.double()) < 2e-3
    assert kernel.cache_info().compiles == 1


def test_out_parameters_a_dyn_scalar_and_outputs_before_the_input() -> None:
    x = torch.randn(33, 96, device="cuda")
    y = torch.full_like(x, float("nan"))
    assert ks.scale_rows(96)(x, y, 2.5) is None
    assert rel_err(y, x.double() * 2.5) < 1e-6
    n = 1000
    src = torch.randn(2 * n, device="cuda")
    lo, hi = ks.split_pad(n)(src)
    assert rel_err(lo, src[:n].double()) == 0
    expected_hi = src.double()[torch.clamp(torch.arange(n + 1, device="cuda") + n, max=2 * n - 1)]
    assert hi.dtype == torch.float16 and rel_err(hi, expected_hi) < 1e-3


def test_an_in_kernel_workspace_carries_results_from_one_launch_to_the_next() -> None:
    x = torch.randn(4096, device="cuda")
    poison_allocator(((4096,), torch.float32), ((4096,), torch.float32))
    y = ks.with_workspace(4096)(x)
    assert rel_err(y, x.double() * 2) == 0


def test_wrong_calls_are_clear_errors() -> None:
    kernel = ks.matmul(256, 256, 128, 64, 64, 32)
    a = torch.randn(256, 128, dtype=torch.float16, device="cuda")
    with pytest.raises(TypeError, match="'B'"):  # the call takes A and B; C is returned
        kernel(a)
    with pytest.raises(tl.ArgumentValueError, match="'B'"):
        kernel(a, torch.randn(129, 256, dtype=torch.float16, device="cuda"))
    with pytest.raises(tl.ArgumentValueError, match="must be contiguous"):
        kernel(a, torch.randn(256, 128, dtype=torch.float16, device="cuda").t())


def test_the_profiler_checks_against_a_reference_and_times() -> None:
    kernel = ks.matmul(512, 512, 256, 128, 128, 32)
    profiler = kernel.get_profiler()
    profiler.assert_allclose(lambda a, b: (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)
    with pytest.raises(AssertionError):
        profiler.assert_allclose(lambda a, b: (a.float() @ b.float() + 1).half(), rtol=1e-2, atol=1e-2)
    assert 0 < profiler.do_bench() < 100
    assert "__global__" in kernel.get_kernel_source()


PROBE = """
import json, sys, torch
from tests.kernels import lazy_style as ks
kernel = ks.matmul(256, 256, 128, 64, 64, 32)
a = torch.randn(256, 128, dtype=torch.float16, device="cuda")
b = torch.randn(128, 256, dtype=torch.float16, device="cuda")
c = kernel(a, b)
ref = a.double() @ b.double()
print(json.dumps({"err": float((c.double() - ref).norm() / ref.norm()), "tilelang": "tilelang" in sys.modules,
                  **kernel.cache_info()._asdict()}))
"""


def test_a_second_process_starts_warm(tmp_path: Path) -> None:
    env = {**os.environ, "TLTYPED_CACHE_DIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def run() -> dict:
        done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    assert first["compiles"] == 1 and first["tilelang"] is True  # control
    assert second["err"] < 2e-3 and second["compiles"] == 0 and second["disk_hits"] == 1
    assert second["tilelang"] is False


def test_an_eager_kernel_from_compile_runs_and_profiles_as_tilelang_s() -> None:
    """`kernel = fn.compile(dims and consts by name)`, then `kernel(A)` with its consts bound, as upstream examples do."""
    from tests.kernels import eager_style

    kernel = eager_style.scratch_and_outputs.compile(M=4096, block=256)
    a = torch.randn(4096, device="cuda")
    poison_allocator(((4096,), torch.float32), ((4096,), torch.float32))
    kept, out = kernel(a)
    assert rel_err(kept, 2 * a.double() + 1) < 1e-6 and rel_err(out, 2 * a.double()) < 1e-6
    poison_allocator(((4096,), torch.float32), ((4096,), torch.float32))
    kept, out = kernel(A=a)  # by name, as the kernel's own call takes it
    assert rel_err(kept, 2 * a.double() + 1) < 1e-6 and rel_err(out, 2 * a.double()) < 1e-6
    kernel.get_profiler().assert_allclose(lambda x: (2 * x + 1, 2 * x))
    with pytest.raises(AssertionError):
        kernel.get_profiler().assert_allclose(lambda x: (2 * x, 2 * x))
    compiles = eager_style.scratch_and_outputs.cache_info().compiles
    with pytest.raises(tl.ArgumentValueError, match=r"dim M = 2048 \(from A, axis 0\), built for 4096$"):
        kernel(torch.randn(2048, device="cuda"))  # another kernel's size: refused, as TileLang's kernel refuses it
    with pytest.raises(tl.ArgumentValueError, match=r"A layout strides \(2,\), built for contiguous$"):
        kernel(torch.randn(8192, device="cuda")[::2])
    assert eager_style.scratch_and_outputs.cache_info().compiles == compiles  # nothing else was built


def test_a_dim_only_in_an_affine_size_is_solved_from_the_tensor() -> None:
    """TileLang's test_tilelang_language_annot, in both styles: n from `n * 4` and from `n + 1`; the sizes past
    what the body writes keep their values."""
    from tests.kernels import eager_style

    a = torch.randint(1, 100, (16,), dtype=torch.int32, device="cuda")
    eager_style.zero_quads(a)
    assert torch.equal(a, torch.zeros_like(a))
    a = torch.randint(1, 100, (17,), dtype=torch.int32, device="cuda")
    b = torch.randint(1, 100, (33,), dtype=torch.int32, device="cuda")
    a_before, b_before = a.clone(), b.clone()
    ks.zero_all_but_last()(a, b)  # n = 16
    assert torch.equal(a[:16], torch.zeros(16, dtype=torch.int32, device="cuda")) and a[16] == a_before[16]
    assert torch.equal(b[:16], torch.zeros(16, dtype=torch.int32, device="cuda")) and torch.equal(b[16:], b_before[16:])
