"""The examples' kernels, run on the GPU and checked against torch."""

from __future__ import annotations

import pytest
import torch

import tltyped as tl
from examples.add import add, scale
from examples.flash_attention import attention
from examples.gemm import gemm
from examples.gemm_fp8 import scaled_mm
from examples.gemm_in_body import gemm as gemm_in_body
from examples.gemm_tuned import matmul as persistent_matmul
from examples.linear import linear
from examples.softmax import softmax, softmax_dyn
from examples.split_k import matmul
from examples.tuple_outputs import sum_and_difference
from tests.gpu.conftest import poison_allocator, rel_err


def test_gemm_signature_form_one_kernel_for_every_dyn_k() -> None:
    before = gemm.cache_info().compiles
    for k in (256, 512, 1024):
        a = torch.randn(512, k, dtype=torch.float16, device="cuda")
        b = torch.randn(k, 384, dtype=torch.float16, device="cuda")
        poison_allocator(((512, 384), torch.float32))
        c = gemm(a, b)
        assert c.shape == (512, 384) and c.dtype == torch.float32
        assert rel_err(c, a.double() @ b.double()) < 1e-3
    assert gemm.cache_info().compiles - before == 1


def test_gemm_in_body_form_writes_into_c() -> None:
    a = torch.randn(512, 256, dtype=torch.float16, device="cuda")
    b = torch.randn(256, 384, dtype=torch.float16, device="cuda")
    c = torch.full((512, 384), float("nan"), dtype=torch.float32, device="cuda")
    assert gemm_in_body(a, b, c) is None
    assert rel_err(c, a.double() @ b.double()) < 1e-3


def test_gemm_in_body_form_out_dtype_const() -> None:
    a = torch.randn(256, 128, dtype=torch.float16, device="cuda")
    b = torch.randn(128, 256, dtype=torch.float16, device="cuda")
    c = torch.full((256, 256), float("nan"), dtype=torch.float16, device="cuda")
    gemm_in_body(a, b, c, out_dtype=torch.float16)
    assert rel_err(c, a.double() @ b.double()) < 1e-2


@pytest.mark.parametrize("n", [1, 127, 1000, 4097, 65536])
def test_add_dyn_length(n: int) -> None:
    a = torch.randn(n, dtype=torch.float16, device="cuda")
    b = torch.randn(n, dtype=torch.float16, device="cuda")
    c = torch.full((n,), float("nan"), dtype=torch.float16, device="cuda")
    add(a, b, c)
    assert rel_err(c, a.double() + b.double()) < 1e-3


def test_add_dyn_length_compiles_once() -> None:
    n0 = 300
    a, b = torch.randn(n0, dtype=torch.float16, device="cuda"), torch.randn(n0, dtype=torch.float16, device="cuda")
    add(a, b, torch.empty_like(a), block=64)
    before = add.cache_info()
    for n in (5000, 77, 123_457):
        a, b = torch.randn(n, dtype=torch.float16, device="cuda"), torch.randn(n, dtype=torch.float16, device="cuda")
        c = torch.full_like(a, float("nan"))
        add(a, b, c, block=64)
        assert rel_err(c, a.double() + b.double()) < 1e-3
    after = add.cache_info()
    assert (after.compiles, after.misses, after.size) == (before.compiles, before.misses, before.size)
    assert after.hits - before.hits == 3


def test_scale_dyn_float() -> None:
    x = torch.randn(3000, device="cuda")
    poison_allocator(((3000,), torch.float32))
    y = scale(x, 0.37)
    assert rel_err(y, 0.37 * x.double()) < 1e-6
    assert rel_err(scale(x, -2), -2 * x.double()) < 1e-6


@pytest.mark.parametrize("m", [2, 37, 1000])
def test_row_softmax(m: int) -> None:
    x = torch.randn(m, 256, device="cuda") * 3
    poison_allocator(((m, 256), torch.float32))
    y = softmax(x)
    assert rel_err(y, torch.softmax(x.double(), dim=1)) < 1e-5


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 1e-5), (torch.float16, 2e-3)])
def test_row_softmax_dyn_width_one_kernel_for_every_width(dtype: torch.dtype, tolerance: float) -> None:
    """Rows that fit on chip (4096, ragged 1000, 8) and rows read in tiles (8216 > 4096, ragged), one compile."""
    compiles = None
    for m, n in ((3, 4096), (37, 1000), (5, 8216), (2, 8)):
        x = torch.randn(m, n, device="cuda", dtype=dtype) * 3
        poison_allocator(((m, n), dtype))
        y = softmax_dyn(x)
        assert y.shape == (m, n) and y.dtype == dtype
        assert rel_err(y, torch.softmax(x.double(), dim=1)) < tolerance
        compiles = softmax_dyn.cache_info().compiles if compiles is None else compiles
    assert softmax_dyn.cache_info().compiles == compiles


def test_row_softmax_dyn_width_in_tiles_and_its_check() -> None:
    x = torch.randn(7, 3000, device="cuda") * 3  # three tiles of 1024, the last one ragged
    poison_allocator(((7, 3000), torch.float32))
    assert rel_err(softmax_dyn(x, 1024), torch.softmax(x.double(), dim=1)) < 1e-5
    with pytest.raises(tl.ArgumentValueError, match=r"X.shape\[1\] % 8 == 0"):
        softmax_dyn(torch.randn(4, 1001, device="cuda"))


@pytest.mark.parametrize("split_k", [False, True])
def test_const_branch_chooses_kernel(split_k: bool) -> None:
    a = torch.randn(256, 512, dtype=torch.float16, device="cuda")
    b = torch.randn(512, 192, dtype=torch.float16, device="cuda")
    poison_allocator(((256, 192), torch.float32))
    c = matmul(a, b, split_k)
    assert rel_err(c, a.double() @ b.double()) < 1e-3


@pytest.mark.parametrize(
    "m, ks, n, schedule",
    [
        (1000, (520, 1000), 776, (128, 16)),  # ragged in M, N and K; 32 tiles for 128 CTAs
        (2000, (1000, 64), 3000, (128, 16)),  # 192 tiles: a second round for half the CTAs; one k-block
        (2000, (3000,), 3000, (132, 8)),  # 132 CTAs over two groups of tile rows
    ],
)
def test_persistent_gemm_schedules(m: int, ks: tuple[int, ...], n: int, schedule: tuple[int, int]) -> None:
    """The tuned example at fixed schedules (no tuning here); K is dyn, so the second K reuses the kernel."""
    before = persistent_matmul.cache_info().compiles
    for k in ks:
        a = torch.randn(m, k, dtype=torch.float16, device="cuda")
        b = torch.randn(k, n, dtype=torch.float16, device="cuda")
        poison_allocator(((m, n), torch.float16))
        c = persistent_matmul(a, b, schedule)
        assert rel_err(c, a.double() @ b.double()) < 2e-3, k
    assert persistent_matmul.cache_info().compiles - before <= 1


def test_persistent_gemm_rejects_rows_tma_cannot_load() -> None:
    a = torch.randn(64, 100, dtype=torch.float16, device="cuda")
    b = torch.randn(100, 64, dtype=torch.float16, device="cuda")
    with pytest.raises(ValueError, match=r"shape check `A.shape\[1\] // 8 \* 8 == A.shape\[1\]` fails: A.shape\[1\] // 8 \* 8 is 96, not 100 \(K = 100 from A, axis 1\)"):
        persistent_matmul(a, b, (128, 16))


def test_persistent_gemm_names_the_tensor_tma_cannot_describe() -> None:
    """K = 0 leaves TMA nothing to load: the error names the argument and the rule, not TileLang's `A_desc`."""
    a = torch.randn(256, 0, dtype=torch.float16, device="cuda")
    b = torch.randn(0, 192, dtype=torch.float16, device="cuda")
    with pytest.raises(RuntimeError, match=r"TMA descriptor of argument 'A' \(sizes \(256, 0\)\): .*dim 1 is 0"):
        persistent_matmul(a, b, (128, 16))


def fp8(rows: int, cols: int) -> torch.Tensor:
    """Random e4m3 values spread over its exponents (normal, times 8: most of them well away from zero)."""
    return (torch.randn(rows, cols, device="cuda") * 8).to(torch.float8_e4m3fn)


@pytest.mark.parametrize(
    "m, ks, n, schedule",
    [
        (1000, (1040, 16), 1000, (132, 8, 256)),  # ragged in M, N and K; K = 16: one partial k-block
        (1000, (1040,), 1000, (128, 16, 128)),  # the 128x128 tile, five stages
        (256, (256,), 256, (132, 8, 256)),  # square, fewer tiles than CTAs
    ],
)
def test_fp8_scaled_mm_schedules(m: int, ks: tuple[int, ...], n: int, schedule: tuple[int, int, int]) -> None:
    """The fp8 example at fixed schedules against an fp64 reference; K is dyn, so the second K reuses the kernel."""
    before = scaled_mm.cache_info().compiles
    for k in ks:
        a, b = fp8(m, k), fp8(n, k)
        scale_a, scale_b = torch.rand(1, device="cuda") + 0.1, torch.rand(1, device="cuda") * 0.01 + 0.001
        poison_allocator(((m, n), torch.bfloat16))
        c = scaled_mm(a, b, scale_a, scale_b, schedule)
        assert c.shape == (m, n) and c.dtype == torch.bfloat16
        ref = (a.double() @ b.double().T) * scale_a.double() * scale_b.double()
        assert rel_err(c, ref) < 1e-2, k
    assert scaled_mm.cache_info().compiles - before <= 1


def test_fp8_scaled_mm_rejects_rows_tma_cannot_load() -> None:
    a, b, scale = fp8(64, 1000), fp8(64, 1000), torch.ones(1, device="cuda")
    with pytest.raises(ValueError, match=r"shape check `A.shape\[1\] // 16 \* 16 == A.shape\[1\]` fails"):
        scaled_mm(a, b, scale, scale, (132, 8, 256))


@pytest.mark.parametrize("silu", [False, True])
def test_linear_fuses_bias_and_silu_and_trains(silu: bool) -> None:
    """nn.Linear on the persistent GEMM: ragged rows, N past the last full 256-wide tile (the bias read guarded),
    the epilogue against fp64, and the registered backward's gradients against torch's."""
    x = torch.randn(1000, 520, dtype=torch.float16, device="cuda", requires_grad=True)
    w = (torch.randn(776, 520, device="cuda") * 0.05).half().requires_grad_()
    b = torch.randn(776, dtype=torch.float16, device="cuda", requires_grad=True)
    poison_allocator(((1000, 776), torch.float16))
    y = linear(x, w, b, silu, (128, 16))
    x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, b))
    ref = torch.nn.functional.linear(x64, w64, b64)
    ref = torch.nn.functional.silu(ref) if silu else ref
    assert rel_err(y, ref) < 2e-3
    dy = torch.randn_like(y)
    grads = torch.autograd.grad(y, (x, w, b), dy)
    refs = torch.autograd.grad(ref, (x64, w64, b64), dy.double())
    for name, got, want in zip("xwb", grads, refs):
        assert rel_err(got, want) < 5e-3, name


def test_const_branch_bodies_differ() -> None:
    a = torch.empty(256, 512, dtype=torch.float16, device="cuda")
    b = torch.empty(512, 192, dtype=torch.float16, device="cuda")
    assert "atomic" in matmul.lower(a, b, True).cuda_source.lower()
    assert "atomic" not in matmul.lower(a, b, False).cuda_source.lower()


def test_tuple_outputs_in_return_order() -> None:
    a = torch.randn(999, device="cuda")
    b = torch.randn(999, device="cuda")
    poison_allocator(((999,), torch.float32), ((999,), torch.float32))
    s, d = sum_and_difference(a, b)
    assert rel_err(s, a.double() + b.double()) < 1e-6
    assert rel_err(d, a.double() - b.double()) < 1e-6


@pytest.mark.parametrize("n", [1, 64, 1000, 4099])
def test_derived_dim_interleave_both_forms(n: int) -> None:
    from examples.interleave import interleave, interleave_into

    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    expected = torch.empty(2 * n + 1, dtype=torch.float64, device="cuda")
    expected[0 : 2 * n : 2], expected[1 : 2 * n : 2], expected[2 * n] = a.double(), b.double(), -7.5
    for fn in (interleave, interleave_into):
        out = torch.full((2 * n + 1,), float("nan"), device="cuda")
        fn(a, b, out, -7.5)
        assert rel_err(out, expected) < 1e-7, fn.__name__


def test_derived_dim_mismatch_is_rejected_on_the_fast_path() -> None:
    from examples.interleave import interleave, interleave_into

    a, b = torch.randn(10, device="cuda"), torch.randn(10, device="cuda")
    for fn in (interleave, interleave_into):
        fn(a, b, torch.empty(21, device="cuda"), 1.0)  # compiled: the bad call below hits the key
    with pytest.raises(ValueError, match=r"argument 'Out': dim 0 is N \* 2 \+ 1 = 21 \(N = 10 from A, axis 0\), got 20"):
        interleave(a, b, torch.empty(20, device="cuda"), 1.0)
    with pytest.raises(ValueError, match=r"shape check `Out.shape\[0\] == 2 \* A.shape\[0\] \+ 1` fails"):
        interleave_into(a, b, torch.empty(20, device="cuda"), 1.0)


@pytest.mark.parametrize("config", [(128, False), (128, True), (176, True)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_len, dim", [(500, 128), (300, 64)])
def test_flash_attention_against_sdpa(causal: bool, config: tuple[int, bool], seq_len: int, dim: int) -> None:
    """The tuned example at fixed configurations (no tuning here), with a sequence ragged against its blocks."""
    batch, heads = 2, 3
    q, k, v = (torch.randn(batch, seq_len, heads, dim, dtype=torch.float16, device="cuda") for _ in range(3))
    poison_allocator(((batch, seq_len, heads, dim), torch.float16))
    out = attention(q, k, v, causal, config)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(t.double().transpose(1, 2) for t in (q, k, v)), is_causal=causal
    ).transpose(1, 2)
    assert out.shape == q.shape and rel_err(out, ref) < 1e-2
