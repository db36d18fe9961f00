"""On a GPU: dyn dims declared int64 reach the kernel in 64 bits, past int32's range too.

TileLang's own int64 test kernel (`fill_symbolic`, lazy style) at small sizes;
an in-body kernel with `T.dynamic("n", "int64")` against torch; and one tensor
of 2**31 + 1024 bf16 elements (4 GiB), written at every index with a value of
the index and checked at strided positions and at its tail, which an int32
index would never reach; an int32 dim refuses the same tensor, its fast path
included. tests/unit/test_int64_dims.py checks on CPU what is built.

No `from __future__ import annotations`, as in TileLang's examples.
"""

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.gpu.conftest import poison_allocator, rel_err
from tests.kernels.int64_dims import fill_symbolic, scaled_pairs, scaled_rows

BLOCK = 512
PAST_INT32 = 2**31 + 1024
PERIOD = 251  # index % PERIOD is exact in bf16 (at most 256)


@tl.jit
def scale(X, alpha):
    n = T.dynamic("n", "int64")
    X: T.Tensor[[n], T.float32]
    alpha: T.float32
    Y = T.empty((n,), T.float32)
    with T.Kernel(T.ceildiv(n, BLOCK), threads=128) as bx:
        for i in T.Parallel(BLOCK):
            if bx * BLOCK + i < n:
                Y[bx * BLOCK + i] = X[bx * BLOCK + i] * alpha
    return Y


@tl.jit
def index_pattern_wide(x):
    n = T.dynamic("n", "int64")
    x: T.Tensor[[n], T.bfloat16]
    with T.Kernel(T.ceildiv(n, BLOCK), threads=128) as bx:
        for i in T.Parallel(BLOCK):
            if bx * BLOCK + i < n:
                x[bx * BLOCK + i] = T.Cast("bfloat16", T.Cast("float32", (bx * BLOCK + i) % PERIOD))


@tl.jit
def index_pattern_narrow(x):
    n = T.dynamic("n")
    x: T.Tensor[[n], T.bfloat16]
    with T.Kernel(T.ceildiv(n, BLOCK), threads=128) as bx:
        for i in T.Parallel(BLOCK):
            if bx * BLOCK + i < n:
                x[bx * BLOCK + i] = T.Cast("bfloat16", T.Cast("float32", (bx * BLOCK + i) % PERIOD))


def test_tilelangs_fill_symbolic_at_small_sizes() -> None:
    kernel = fill_symbolic(1.0)
    for n in (1000, 4096, 1):
        x = torch.full((n,), float("nan"), dtype=torch.bfloat16, device="cuda")
        kernel(x)
        assert bool((x == 1.0).all())
    assert kernel.cache_info().size == 1  # one kernel for every n


def test_an_in_body_int64_dim_against_torch() -> None:
    for n in (777, 70_000):
        x = torch.randn(n, device="cuda")
        alpha = float(torch.rand(()).item()) + 0.5
        poison_allocator(((n,), torch.float32))
        y = scale(x, alpha)
        assert y.shape == (n,) and rel_err(y, x.double() * alpha) < 1e-6
    assert scale.cache_info().size == 1


def test_an_int64_scalar_that_sizes_a_tensor_against_torch() -> None:
    for m, n in ((1000, 8), (70_001, 3)):
        x = torch.randn(m, n, device="cuda")
        alpha = float(torch.rand(()).item()) + 0.5
        poison_allocator(((m, n), torch.float32))
        y = scaled_rows(x, m, n, alpha)
        assert y.shape == (m, n) and rel_err(y, x.double() * alpha) < 1e-6
    with pytest.raises(ValueError, match="M"):
        scaled_rows(x, m + 1, n, alpha)
    assert scaled_rows.cache_info().size == 1


def test_a_size_the_body_computes_from_a_scalar_against_torch() -> None:
    for m in (1000, 70_001):
        x = torch.randn(2 * m + 1, device="cuda")
        alpha = float(torch.rand(()).item()) + 0.5
        poison_allocator(((2 * m + 1,), torch.float32))
        y = scaled_pairs(x, m, alpha)
        assert y.shape == (2 * m + 1,) and rel_err(y, x.double() * alpha) < 1e-6
    with pytest.raises(ValueError, match="argument 'M' = 70000"):
        scaled_pairs(x, m - 1, alpha)
    assert scaled_pairs.cache_info().size == 1


def test_a_tensor_past_int32_is_written_at_every_index() -> None:
    free, _ = torch.cuda.mem_get_info()
    if free < 8 * 2**30:
        pytest.skip(f"needs 8 GiB of free GPU memory, {free / 2**30:.1f} GiB free")
    small = torch.zeros(4096, dtype=torch.bfloat16, device="cuda")
    index_pattern_narrow(small)  # the int32 kernel's fast path is warm: the large call reaches its launcher first
    x = torch.full((PAST_INT32,), float("nan"), dtype=torch.bfloat16, device="cuda")
    with pytest.raises(ValueError, match=r"dim n = 2147484672 \(from x, axis 0\) is too large for a dyn dim \(int32, "
                                         r"at most 2147483647\)"):
        index_pattern_narrow(x)
    assert bool(x[:4096].isnan().all())  # refused before any launch
    index_pattern_wide(x)
    torch.cuda.synchronize()
    positions = torch.cat([
        torch.arange(0, PAST_INT32, 9973, device="cuda"),  # strided over the whole tensor
        torch.arange(2**31 - 4096, PAST_INT32, device="cuda"),  # across 2**31, to the last element
    ])
    expected = (positions % PERIOD).to(torch.bfloat16)
    assert bool((x[positions] == expected).all())
    assert not bool(x.isnan().any())
