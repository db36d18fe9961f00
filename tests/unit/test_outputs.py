"""Point 5: `T.empty` and `T.alloc_global` are the kernel's outputs, returned in return order.

Checked at three levels: the lowered PrimFunc (`tilelang_out_idx`), the compiled
kernel (`outputs`, `returns`, built by nvcc once per session), and the generated
call that allocates the outputs around a launch (run on CPU with the C launch
replaced by a recorder: that function, not the launch, is what is under test;
the compiled kernel it wraps is the real lowering and ABI description, minus nvcc).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from tests.conftest import meta
from tests.kernels import outputs as kernels
from tltyped.backend.launcher import CompiledKernel, describe_abi
from tltyped.callpath.fastpath import build_kernel_call

pytestmark = pytest.mark.usefixtures("sm90")


class Recorder:
    """Stands in for a compiled kernel's C `launch`: records each call's arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> None:
        self.calls.append(args)


@pytest.fixture
def compile_without_nvcc() -> Callable[..., tuple[CompiledKernel, Recorder]]:
    """What `fn.compile(...)` returns, minus the build: lowered, ABI described, launched by a Recorder."""

    def compile_(fn: Any, *args: Any, **kwargs: Any) -> tuple[CompiledKernel, Recorder]:
        recorder = Recorder()
        lowered = fn.lower(*args, **kwargs)
        _, _, outputs, returns = describe_abi(lowered, fn.signature)
        return CompiledKernel(lowered=lowered, launch=recorder, outputs=outputs, returns=returns, compiled=False), recorder

    return compile_


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


# -- compiled (nvcc) -----------------------------------------------------------------


def test_compiled_outputs_and_returns(compiled_outputs) -> None:
    outputs, returns = compiled_outputs.outputs, compiled_outputs.returns
    assert [o.dtype for o in outputs] == [torch.float16, torch.float32]  # Half, First: parameter order
    assert [outputs[i].dtype for i in returns] == [torch.float32, torch.float16]  # First, Half: return order
    assert sorted(returns) == list(range(len(outputs)))
    half, first = outputs
    assert half.shape[0] == first.shape[0] == "256"  # the const dim M, folded
    assert len(half.shape) == 2 and half.shape[1] != "96"  # K is dyn: computed per call, not folded


def test_compiled_seed_gemm_has_one_output(compiled_seed_gemm) -> None:
    assert [o.dtype for o in compiled_seed_gemm.outputs] == [torch.float32]
    assert compiled_seed_gemm.returns == (0,)
    assert compiled_seed_gemm.outputs[0].shape == ("1024", "256")


# -- the generated call allocating the outputs ----------------------------------------


def test_kernel_call_allocates_and_returns_outputs_in_return_order(compile_without_nvcc) -> None:
    compiled, recorder = compile_without_nvcc(kernels.two_outputs, meta(256, 96, dtype=torch.float32))
    call = build_kernel_call(kernels.two_outputs.signature, compiled, torch.device("cpu"))
    k = 40  # a different K than the one lowered: K is dyn
    result = call(0x1000, k, 0, -1)
    assert isinstance(result, tuple) and len(result) == 2
    first, half = result
    assert (first.shape, first.dtype) == ((256,), torch.float32)
    assert (half.shape, half.dtype) == ((256, k), torch.float16)
    ((*args, stream, device),) = recorder.calls
    # input pointer, outputs in parameter order (Half, First), the dyn dim, then stream and device
    assert args == [0x1000, half.data_ptr(), first.data_ptr(), k]
    assert (stream, device) == (0, -1)


def test_kernel_call_with_one_output_returns_the_tensor(compile_without_nvcc, seed_gemm) -> None:
    compiled, recorder = compile_without_nvcc(seed_gemm.gemm, meta(1024, 512), meta(512, 256))
    call = build_kernel_call(seed_gemm.gemm.signature, compiled, torch.device("cpu"))
    out = call(0x1000, 0x2000, 512, 0, -1)
    assert isinstance(out, torch.Tensor)
    assert (out.shape, out.dtype) == ((1024, 256), torch.float32)
    assert recorder.calls == [(0x1000, 0x2000, out.data_ptr(), 512, 0, -1)]


def test_each_call_allocates_fresh_outputs(compile_without_nvcc) -> None:
    compiled, _ = compile_without_nvcc(kernels.two_outputs, meta(256, 96, dtype=torch.float32))
    call = build_kernel_call(kernels.two_outputs.signature, compiled, torch.device("cpu"))
    one, two = call(0, 8, 0, -1), call(0, 8, 0, -1)
    assert one[0].data_ptr() != two[0].data_ptr()


def test_output_shape_with_floor_division_of_a_dyn_dim(compile_without_nvcc) -> None:
    compiled, _ = compile_without_nvcc(kernels.even_elements, meta(100, dtype=torch.float32))
    call = build_kernel_call(kernels.even_elements.signature, compiled, torch.device("cpu"))
    for k in (100, 101, 7):
        assert call(0, k, 0, -1).shape == (k // 2,)
