"""`T.empty` and `T.alloc_global` are the kernel's outputs, returned in return order.

Checked at three levels: the lowered PrimFunc (`tilelang_out_idx`), the compiled
kernel (`outputs`, `returns`, built by nvcc once per session), and the compiled
launcher's own allocation of the outputs (its C code, run on the CPU).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.conftest import has_nvcc, meta
from tests.kernels import outputs as kernels
from tltyped.backend import build, cache
from tltyped.callpath import torch_direct
from tltyped.callpath.torch_direct import torch_empty

pytestmark = pytest.mark.usefixtures("sm90")


def output_buffer_names(prim_func: Any) -> list[str]:
    """The names of the buffers `tilelang_out_idx` designates, in return order."""
    params = list(prim_func.params)
    return [prim_func.buffer_map[params[int(i)]].name for i in prim_func.attrs["tilelang_out_idx"]]


# -- lowered ------------------------------------------------------------------------


def test_outputs_are_trailing_parameters_in_return_order() -> None:
    lowered = kernels.two_outputs.lower(meta(256, 96, dtype=torch.float32))
    params = [lowered.prim_func.buffer_map[p].name for p in lowered.prim_func.params]
    assert params == ["A", "Half", "First"]  # inputs, then outputs in declaration order
    assert output_buffer_names(lowered.prim_func) == ["First", "Half"]  # `return First, Half`


def test_seed_gemm_returns_its_empty(seed_gemm) -> None:
    lowered = seed_gemm.gemm.lower(meta(1024, 512), meta(512, 256))
    assert output_buffer_names(lowered.prim_func) == ["C"]


def test_in_body_kernel_without_outputs_has_none(seed_gemm_in_body) -> None:
    lowered = seed_gemm_in_body.gemm.lower(meta(256, 64), meta(64, 128), meta(256, 128, dtype=torch.float32))
    attrs = lowered.prim_func.attrs
    assert attrs is None or "tilelang_out_idx" not in attrs


def test_a_tuned_const_deciding_the_outputs_is_refused() -> None:
    """The fake outputs stand for whichever candidate the tuner picks, and a result must not depend on timing:
    candidates that return differently are refused, naming them; a space that does not (block) is taken."""
    import tltyped as tl

    with pytest.raises(tl.DefinitionError, match=r"tuned_rows: the tuned consts decide what the kernel returns "
                                                 r"\(\{'rows': 1, 'block': 64\}: \(1, 300\) float32; "
                                                 r"\{'rows': 2, 'block': 64\}: \(2, 300\) float32\)"):
        kernels.tuned_rows(meta(300, dtype=torch.float32))
    assert tuple(kernels.tuned_rows(meta(300, dtype=torch.float32), rows=2).shape) == (2, 300)


# -- compiled (nvcc) -----------------------------------------------------------------


def test_compiled_outputs_and_returns(compiled_outputs) -> None:
    outputs, returns = compiled_outputs.outputs, compiled_outputs.returns
    assert [o.dtype for o in outputs] == ["float16", "float32"]  # Half, First: parameter order
    assert [outputs[i].dtype for i in returns] == ["float32", "float16"]  # First, Half: return order
    assert sorted(returns) == list(range(len(outputs)))
    half, first = outputs
    assert half.shape[0] == first.shape[0] == "256"  # the const dim M, folded
    assert len(half.shape) == 2 and half.shape[1] != "96"  # K is dyn: computed per call, not folded


def test_compiled_seed_gemm_has_one_output(compiled_seed_gemm) -> None:
    assert [o.dtype for o in compiled_seed_gemm.outputs] == ["float32"]
    assert compiled_seed_gemm.returns == (0,)
    assert compiled_seed_gemm.outputs[0].shape == ("1024", "256")


# -- the launcher allocating the outputs (the real C code, on the CPU) -------------------
#
# `empty_outputs(*launch arguments)` runs the allocation `launch` runs and stops
# before the kernel: on a machine without a GPU it allocates on the CPU (device
# -1). Launchers allocate through tltyped's helper on torch's C++ allocator
# (backend/torch_direct.py) and fall back to torch's DLPack exchange API where the
# helper cannot be built; both ways are run.


def test_the_torch_allocator_helper_builds_here() -> None:
    assert torch_empty() is not None  # else every allocating call here takes the slower fallback


def test_where_the_helper_cannot_be_built_launchers_fall_back_after_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(tmp_path / "cache"))
    no_compiler = str(tmp_path / "no-such-c++")
    monkeypatch.setattr(build, "cxx_torch_command", lambda: [no_compiler, "-shared"])
    monkeypatch.setattr(torch_direct, "_loaded", [])  # as in a process without a C++ compiler, which tries anew
    with caplog.at_level(logging.WARNING, logger="tltyped"):
        assert torch_direct.helper() is None
    assert "allocated and tensors read through torch's DLPack exchange API" in caplog.text and "no-such-c++" in caplog.text


@pytest.fixture(params=["torch allocator", "DLPack exchange API"])
def allocating(request: pytest.FixtureRequest, compiled_outputs: Any) -> Iterator[Any]:
    """compiled_outputs, allocating one way or the other (put back afterwards)."""
    compiled_outputs.module.set_allocator(torch_empty() if request.param == "torch allocator" else None)
    yield compiled_outputs
    compiled_outputs.module.set_allocator(torch_empty())


def test_launcher_allocates_outputs_in_parameter_order(allocating) -> None:
    k = 40  # a different K than the one compiled for: K is dyn
    half, first = allocating.empty_outputs(0x1000, k)
    assert (first.shape, first.dtype, first.device) == ((256,), torch.float32, torch.device("cpu"))
    assert (half.shape, half.dtype, half.is_contiguous()) == ((256, k), torch.float16, True)
    half.fill_(1.5)  # ordinary, writable tensors
    assert half.sum().item() == 1.5 * 256 * k


def test_each_launch_allocates_fresh_outputs(allocating) -> None:
    one, two = allocating.empty_outputs(0, 8), allocating.empty_outputs(0, 8)
    assert one[0].data_ptr() != two[0].data_ptr()


def test_a_failed_allocation_names_the_kernel_and_the_output(allocating) -> None:
    if Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "1":
        pytest.skip("this kernel overcommits memory: a 1 TiB allocation succeeds")
    with pytest.raises(RuntimeError, match=r"two_outputs: allocating output 'Half' \(shape 256, d0\) failed: .*memory"):
        allocating.empty_outputs(0, 2**31 - 1)  # 256 x (2**31 - 1) halves: 1 TiB
    assert allocating.empty_outputs(0, 8)[0].shape == (256, 8)  # and the next allocation is fine


@pytest.fixture(scope="module")
def compiled_even_elements() -> Any:
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    return kernels.even_elements.compile(meta(100, dtype=torch.float32))


def test_output_shape_with_floor_division_of_a_dyn_dim(compiled_even_elements) -> None:
    for k in (100, 101, 7, 0):
        (even,) = compiled_even_elements.empty_outputs(0, k)
        assert even.shape == (k // 2,)


@pytest.fixture(scope="module")
def compiled_head_plus_one() -> Any:
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    return kernels.head_plus_one.compile(meta(64, dtype=torch.float32), 5)


def test_output_shape_over_a_dyn_scalar(compiled_head_plus_one) -> None:
    assert [o.shape for o in compiled_head_plus_one.outputs] == [("a1 + 1",)]  # `m` is launch argument a1
    for m in (0, 5, 1000):
        (head,) = compiled_head_plus_one.empty_outputs(0, m, 64)
        assert head.shape == (m + 1,)


def test_a_call_without_data_sizes_an_output_over_a_dyn_scalar_as_the_launcher_does() -> None:
    """A meta call, and a traced one (the op's fake implementation), return the output the launcher would allocate:
    its size computed from the dyn scalar's value, a negative one refused naming the output."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    for m in (0, 5, 1000):
        assert kernels.head_plus_one(meta(2000, dtype=torch.float32), m).shape == (m + 1,)
    with FakeTensorMode() as fake:
        a = fake.from_tensor(torch.empty(2000, device="meta"))
        assert kernels.head_plus_one(a, 7).shape == (8,)
    with pytest.raises(ValueError, match=r"head_plus_one: output 'B' would have size -2 in dim 0"):
        kernels.head_plus_one(meta(64, dtype=torch.float32), -3)


def test_a_negative_output_size_is_an_error_naming_the_output(compiled_head_plus_one) -> None:
    with pytest.raises(ValueError, match=r"head_plus_one: output 'B' would have size -2 in dim 0 \(its shape is a1 \+ 1\)"):
        compiled_head_plus_one.empty_outputs(0, -3, 64)


def test_launch_arguments_are_checked_before_anything_is_allocated(compiled_head_plus_one) -> None:
    with pytest.raises(TypeError, match=r"head_plus_one: argument 'm' expects an int, got str"):
        compiled_head_plus_one.empty_outputs(0, "5", 64)


def test_a_kernel_loaded_again_in_one_process_is_still_itself(compiled_even_elements, compiled_head_plus_one) -> None:
    """Every launcher is an extension module named `tltyped_kernel`; loading one from disk a second time, after
    another was loaded, must give back that kernel and leave the other alone."""
    again = kernels.even_elements.compile(meta(100, dtype=torch.float32))  # the disk cache's build, loaded again
    assert again.folder == compiled_even_elements.folder and again.outputs == compiled_even_elements.outputs
    assert [t.shape for t in again.empty_outputs(0, 10)] == [(5,)]
    assert [t.shape for t in compiled_head_plus_one.empty_outputs(0, 5, 64)] == [(6,)]
    assert kernels.head_plus_one.compile(meta(64, dtype=torch.float32), 5).outputs == compiled_head_plus_one.outputs
