"""On a GPU: equal consts of other types run their own kernels, cached calls refuse what the binder refuses,
and a kernel of hard names (crafted `__name__`, parameters named `stream`, `new`, `this`, `int`) computes right."""

from __future__ import annotations

import pytest
import torch

from tests.gpu import kernels
from tests.gpu.conftest import rel_err
from tests.kernels import consts, names
from tests.unit.hostile import StoragelessTensor


def test_int_and_float_factors_run_their_own_kernels() -> None:
    """`factor=3` multiplies in int32 then converts; `factor=3.0` converts then multiplies in float32.

    For ints above 2**24 the two round differently, and each must match its own reference exactly, whichever
    of the two kernels was built first.
    """
    a = torch.randint(2**24, 2**28, (4096,), dtype=torch.int32, device="cuda")
    int_ref, float_ref = (a * 3).float(), a.float() * 3.0
    assert not torch.equal(int_ref, float_ref)  # the inputs tell the kernels apart
    for factor, expected in ((3.0, float_ref), (3, int_ref), (3.0, float_ref)):
        out = torch.full((4096,), float("nan"), device="cuda")
        consts.scale(a, out, factor)
        assert torch.equal(out, expected), factor
    assert consts.scale.cache_info().size == 2


def test_a_kernel_of_hard_names_computes_right() -> None:
    x = torch.randn(1000, device="cuda")
    out = torch.full_like(x, float("nan"))
    names.keywords(x, out, 3, 0.5, 0, True, _tl_stream=4, _tl_p0=5)
    assert rel_err(out, x.double() * 0.5 + 3 + 4 + 5) < 1e-6
    hits = names.keywords.cache_info().hits
    out2 = torch.full_like(x, float("nan"))
    names.keywords(x, out2, 1, 2.0, out2.data_ptr(), True, _tl_stream=4, _tl_p0=5)  # other dyn values: cached
    assert names.keywords.cache_info().hits == hits + 1
    assert rel_err(out2, x.double() * 2.0 + 1 + 4 + 5) < 1e-6


@pytest.mark.parametrize(
    ("change", "message"),
    names.REFUSED,
)
def test_a_cached_call_refuses_what_the_binder_refuses(change: dict[str, object], message: str) -> None:
    x = torch.randn(1000, device="cuda")
    out = torch.full_like(x, float("nan"))
    names.keywords(x, out, 3, 0.5, 0, True)  # compiled and cached
    values = {**dict(new=3, this=0.5, int=0, flag=True), **change}
    hits = names.keywords.cache_info().hits
    out.fill_(-1.0)
    with pytest.raises(TypeError) as info:
        names.keywords(x, out, *values.values())
    assert str(info.value) == f"{names.CRAFTED}: {message}"
    assert names.keywords.cache_info().hits == hits
    torch.cuda.synchronize()
    assert bool((out == -1.0).all())  # nothing was launched


def test_a_tensor_subclass_without_storage_is_refused_where_a_cached_call_would_launch() -> None:
    x, y = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    kernels.axpy(x, y)  # compiled and cached: a storageless tensor has the same dtype, shape and device
    with pytest.raises(ValueError, match="argument 'X' is a StoragelessTensor with no memory of its own"):
        kernels.axpy(StoragelessTensor(1000, dtype=torch.float32), y)
    torch.cuda.synchronize()  # nothing was launched with a null pointer
