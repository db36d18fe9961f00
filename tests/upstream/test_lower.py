"""Each of TileLang's kernels (kernels.py), ported by only its decorator and imports, lowers for sm_90a at two shapes."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tests.conftest import target_env
from tests.upstream.kernels import CASES, Case
from tests.upstream.source import load


def _given_tensors(kernel: Any, call_args: tuple[Any, ...], call_kwargs: dict[str, Any]) -> dict[str, torch.Tensor]:
    names = list(kernel.__wrapped__.__code__.co_varnames[: kernel.__wrapped__.__code__.co_argcount])
    given = {**dict(zip(names, call_args)), **call_kwargs}
    return {name: t for name, t in given.items() if isinstance(t, torch.Tensor)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_lowers_at_two_shapes(case: Case) -> None:
    module = load(case.source)
    kernel = getattr(module, case.kernel)
    with target_env("sm_90a"):
        for call in case.shapes(module):
            lowered = kernel.lower(*call.args, **call.kwargs)
            assert lowered.target["arch"] == "sm_90a"
            assert "__global__" in lowered.cuda_source
            buffers = {var.name.removesuffix("_handle"): buf for var, buf in lowered.prim_func.buffer_map.items()}
            given = _given_tensors(kernel, call.args, call.kwargs)
            assert set(given) <= set(buffers), (set(given), set(buffers))
            for name, tensor in given.items():  # the kernel's buffers have the sizes passed (dyn dims: variables)
                shape = buffers[name].shape
                assert len(shape) == tensor.dim(), (name, shape, tensor.shape)
                for dim, size in zip(shape, tensor.shape):
                    if hasattr(dim, "value"):
                        assert int(dim) == size, (name, shape, tensor.shape)


def test_scalar_parameters_that_size_buffers_build() -> None:
    """`gemm_ptr_dyn(A, B, M: T.int32, N, K)`: M, N, K are parameters and buffer sizes; TileLang's host code takes
    each once, and so must the launcher's call of it (built with nvcc: this is where a mismatch shows)."""
    case = next(c for c in CASES if c.id == "notebook.gemm_ptr_dyn")
    kernel = getattr(load(case.source), case.kernel)
    first = case.shapes(None)[0]
    with target_env("sm_90a"):
        compiled = kernel.compile(*first.args, **first.kwargs)
    assert [o.label for o in compiled.outputs] == ["output 'C'"]
    with pytest.raises(TypeError, match="launch takes 10 arguments"):  # A, B, M, N, K, the dyn dims M, N, K, stream, device
        compiled.launch()
