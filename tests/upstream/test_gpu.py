"""TileLang's kernels (kernels.py) run by tltyped on a GPU, each against torch with upstream's tolerances.

Inputs are fresh random tensors; caller-provided outputs are filled with NaN
(or garbage) first and returned outputs are poisoned through torch's caching
allocator, so a kernel that writes nothing fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from tests.gpu.conftest import poison_allocator
from tests.upstream.kernels import CASES, Case
from tests.upstream.source import load

on_gpu = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

F16, F32 = torch.float16, torch.float32
close = torch.testing.assert_close


def randn(*shape: int, dtype: torch.dtype = F32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, device="cuda")


def nan(*shape: int, dtype: torch.dtype = F32) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def poisoned(shape: tuple[int, ...], dtype: torch.dtype = F32) -> None:
    poison_allocator((shape, dtype))


RUNS: dict[str, Callable[[Any], None]] = {}


def run(case_id: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    def register(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        RUNS[case_id] = fn
        return fn

    return register


@run("eager_jit.gemm")
def _(m: Any) -> None:  # upstream: test_jit2_gemm
    a, b, c = randn(1024, 1024, dtype=F16), randn(1024, 1024, dtype=F16), nan(1024, 1024, dtype=F16)
    m.gemm(a, b, c)
    close(c, a @ b, atol=1e-2, rtol=1e-2)


@run("eager_jit.gemm_ptr")
def _(m: Any) -> None:  # upstream: test_jit2_gemm_ptr; tensors passed to T.ptr parameters
    a, b, c = randn(1024, 1024, dtype=F16), randn(1024, 1024, dtype=F16), nan(1024, 1024)
    m.gemm_ptr(a, b, c, 1024, 1024, 1024, F16, F32)
    close(c, (a @ b).float(), atol=1e-2, rtol=1e-2)
    c2 = nan(1024, 1024)
    m.gemm_ptr(a.data_ptr(), b.data_ptr(), c2.data_ptr(), 1024, 1024, 1024, F16, F32)  # raw addresses, as well
    close(c2, c)


@run("eager_jit.transpose")
def _(m: Any) -> None:
    x, y = randn(1024, 512), nan(512, 1024)
    m.transpose(x, y, 64, 64)
    assert torch.equal(y, x.T)


def _copy_into(m: Any, name: str) -> None:  # upstream: test_jit2_many_annot
    fn = getattr(m, name)
    if name in ("copy5", "copy6"):
        a, b = randn(128, 2, 128, 2), randn(128, 2, 128, 2)
        fn(a[:, 0, :, 0], b[:, 0, :, 0])
        assert torch.equal(a[:, 0, :, 0], b[:, 0, :, 0])
    else:
        a, b = randn(128, 128), nan(128, 128)
        fn(a, b)
        assert torch.equal(b, a)


def _copy_returned(m: Any, name: str) -> None:  # upstream: test_jit2_return
    fn = getattr(m, name)
    if name in ("copy5", "copy6"):
        a = randn(128, 2, 128, 2)
        poisoned((128, 128))
        assert torch.equal(fn(a[:, 0, :, 0]), a[:, 0, :, 0])
    else:
        a = randn(128, 128)
        poisoned((128, 128))
        assert torch.equal(fn(a), a)


for _i in range(1, 7):
    RUNS[f"eager_jit.many_annot.copy{_i}"] = lambda m, n=f"copy{_i}": _copy_into(m, n)
    RUNS[f"eager_jit.return.copy{_i}"] = lambda m, n=f"copy{_i}": _copy_returned(m, n)


def _check_gemm(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, relu: bool = False) -> None:
    ref = a.float() @ b.float()
    close(out.float(), ref.relu() if relu else ref, atol=1e-2, rtol=1e-2)


@run("notebook.gemm")
def _(m: Any) -> None:
    a, b = randn(1024, 512, dtype=F16), randn(512, 256, dtype=F16)
    poisoned((1024, 256))
    _check_gemm(m.gemm(a, b), a, b)
    b2 = randn(512, 1024, dtype=F16)
    _check_gemm(m.gemm(a, b2, block_M=64, block_N=64), a, b2)


@run("notebook.gemm_dyn_K")
def _(m: Any) -> None:
    for mm, k, n in ((1024, 512, 256), (384, 256, 640)):
        a, b = randn(mm, k, dtype=F16), randn(k, n, dtype=F16)
        poisoned((mm, n))
        _check_gemm(m.gemm_dyn_K(a, b), a, b)


@run("notebook.as_contingious")
def _(m: Any) -> None:
    for shape in ((1024, 1024), (512, 768)):
        a = randn(*shape)
        poisoned(shape[::-1])
        close(m.as_contingious(a.T), a.T.contiguous())


@run("notebook.gemm_ptr")
def _(m: Any) -> None:  # params used as dims
    a, b = randn(1024, 512, dtype=F16), randn(512, 256, dtype=F16)
    _check_gemm(m.gemm_ptr(a, b, 1024, 256, 512), a, b)


@run("notebook.gemm_ptr_dyn")
def _(m: Any) -> None:  # T.int32 parameters used as dims
    for mm, k, n in ((1024, 512, 256), (256, 128, 512)):
        a, b = randn(mm, k, dtype=F16), randn(k, n, dtype=F16)
        _check_gemm(m.gemm_ptr_dyn(a, b, mm, n, k), a, b)
    with pytest.raises(ValueError, match="argument 'M' = 100"):
        m.gemm_ptr_dyn(a, b, 100, n, k)


@run("notebook.add_one")
def _(m: Any) -> None:
    x = randn(1024, 1024)
    close(m.add_one(x), x + 1)
    close(m.add_one(x, 2.5), x + 2.5)


@run("notebook.element_wise")
def _(m: Any) -> None:
    for n in (1024, 4096):
        a = randn(n)
        close(m.element_wise(a, m.add_one), a + 1)


@run("notebook.foo")
def _(m: Any) -> None:
    def n31(x: int, var: int) -> int:
        while x != 1:
            var, x = (var // 2, x // 2) if x % 2 == 0 else (var * 3 + 1, x * 3 + 1)
        return var

    for n in (5, 6):
        a = torch.tensor([100], dtype=torch.int32, device="cuda")
        m.foo(a, n)
        assert a.item() == n31(n, 100)


def _blocked(fn: Callable[..., Any], *blocks: Any, relu: bool = False) -> None:
    for mm, k, n in ((1024, 1024, 1024), (512, 768, 256)):
        a, b = randn(mm, k, dtype=F16), randn(k, n, dtype=F16)
        poisoned((mm, n), F16)
        _check_gemm(fn(a, b, *blocks), a, b, relu=relu)


RUNS["gemm.matmul"] = lambda m: _blocked(m.matmul, 128, 128, 32)
RUNS["quickstart.matmul"] = lambda m: _blocked(m.matmul, 128, 128, 32, relu=True)  # upstream's GEMM ends in a ReLU
RUNS["persistent.matmul_non_persistent"] = lambda m: _blocked(m.matmul_non_persistent, 128, 256, 64, 256, 3)
RUNS["warp_specialize.copy_0_gemm_1"] = lambda m: _blocked(m.matmul_warp_specialize_copy_0_gemm_1, 128, 128, 64)


@run("dynamic_shape.matmul_dynamic_mnk")
def _(m: Any) -> None:
    for trans_a, trans_b in ((False, False), (True, False), (False, True), (True, True)):
        for mm, n, k in ((1024, 768, 512), (256, 384, 640)):
            a = torch.rand(*((k, mm) if trans_a else (mm, k)), dtype=F16, device="cuda")
            b = torch.rand(*((n, k) if trans_b else (k, n)), dtype=F16, device="cuda")
            poisoned((mm, n), F16)
            c = m.matmul_dynamic_mnk(a, b, 128, 128, 32, trans_a, trans_b, "float16", "float16", "float32", 3, 128)
            ref = ((a.T if trans_a else a).float() @ (b.T if trans_b else b).float()).to(F16)
            close(c, ref, rtol=1e-2, atol=1e-2)


def _splitk(fn: Callable[..., Any]) -> None:
    for mm, n, k, split in ((1024, 1024, 1024, 4), (512, 256, 2048, 8)):
        a, b = randn(mm, k, dtype=F16), randn(k, n, dtype=F16)
        c = torch.zeros(mm, n, device="cuda")
        fn(a, b, c, 128 if mm == 1024 else 64, 128 if mm == 1024 else 64, 32, split)
        close(c, (a @ b).to(c.dtype), rtol=1e-2, atol=1e-2)


RUNS["gemm_splitk.matmul"] = lambda m: _splitk(m.matmul)
RUNS["gemm_splitk.vectorize_atomicadd"] = lambda m: _splitk(m.matmul)


def _gemv(fn: Callable[..., Any], *blocks: Any) -> None:
    for n, k in ((1024, 1024), (256, 2048)):
        a, b = randn(k, dtype=F16), randn(n, k, dtype=F16)
        poisoned((n,), F16)
        close(fn(a, b, *blocks), b @ a, atol=1e-2, rtol=1e-2)


RUNS["gemv.naive_gemv"] = lambda m: _gemv(m.naive_gemv, 128, 128)
RUNS["gemv.naive_splitk_gemv"] = lambda m: _gemv(m.naive_splitk_gemv, 32, 32)
RUNS["gemv.splitk_gemv"] = lambda m: _gemv(m.splitk_gemv, 32, 32, 32)
RUNS["gemv.splitk_gemv_vectorized"] = lambda m: _gemv(m.splitk_gemv_vectorized, 2, 32)
RUNS["gemv.splitk_gemv_vectorized_tvm"] = lambda m: _gemv(m.splitk_gemv_vectorized_tvm, 2, 32)


def _rms_ref(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-12)


@run("norm.rms_norm")
def _(m: Any) -> None:
    for shape, blk in (((1024, 1024), 1), ((256, 512), 2)):
        x = randn(*shape)
        poisoned(shape)
        close(m.rms_norm(x, blk), _rms_ref(x), rtol=0.01, atol=0.01)


@run("norm.rms_norm_splitk")
def _(m: Any) -> None:
    for shape, blk_k in (((1024, 1024), 512), ((256, 2048), 256)):
        x = randn(*shape)
        poisoned(shape)
        close(m.rms_norm_splitk(x, 1, blk_k), _rms_ref(x), rtol=0.01, atol=0.01)


@run("online_softmax.softmax_kernel")
def _(m: Any) -> None:
    x = randn(m.M, m.N, dtype=F16)
    poisoned((m.M, m.N), F16)
    close(m.softmax_kernel(x), x.softmax(dim=1), rtol=1e-2, atol=1e-2)


def _nsa_ref(q: Any, k: Any, v: Any, indices: Any, block_size: int, scale: float) -> torch.Tensor:
    """Attention of each query over the keys of its selected blocks, causally masked, in float32."""
    batch, seq, heads, dim = q.shape
    groups = heads // k.shape[2]
    out = torch.zeros(batch, seq, heads, dim, dtype=F32, device=q.device)
    for b in range(batch):
        for t in range(seq):
            for h in range(k.shape[2]):
                keys = [i * block_size + j for i in indices[b, t, h].tolist() for j in range(block_size)
                        if 0 <= i * block_size <= t and i * block_size + j <= t]
                idx = torch.tensor(keys, device=q.device)
                qs = q[b, t, h * groups : (h + 1) * groups].float()
                ks, vs = k[b, idx, h].float(), v[b, idx, h].float()
                p = torch.softmax(qs @ ks.T * scale, dim=-1)
                out[b, t, h * groups : (h + 1) * groups] = p @ vs
    return out


@run("deepseek_nsa.native_sparse_attention")
def _(m: Any) -> None:  # upstream's main(): B, SEQ_LEN, H, HQ, D, S, block_size = 2, 64, 1, 16, 32, 1, 32; scale 0.1
    B, T_, H, HQ, D, S, BS, scale = 2, 64, 1, 16, 32, 1, 32, 0.1
    q, k, v = randn(B, T_, HQ, D, dtype=F16), randn(B, T_, H, D, dtype=F16), randn(B, T_, H, D, dtype=F16)
    indices = torch.full((B, T_, H, S), T_, dtype=torch.long, device="cuda")
    for b in range(B):
        for t in range(T_):
            for h in range(H):
                chosen = torch.randperm(max(1, t // BS))[:S]
                indices[b, t, h, : len(chosen)] = chosen
    indices = indices.sort(-1)[0]
    poisoned((B, T_, HQ, D), F16)
    out = m.native_sparse_attention(
        q, k, v, indices.to(torch.int32), dim=D, is_causal=True, block_size=BS, groups=HQ // H, selected_blocks=S, scale=scale
    )
    close(out.float(), _nsa_ref(q, k, v, indices, BS, scale), atol=1e-2, rtol=1e-2)


@run("elementwise.elementwise_add")
def _(m: Any) -> None:
    a, b = randn(1024, 1024), randn(1024, 1024)
    poisoned((1024, 1024))
    close(m.elementwise_add(a, b, block_M=32, block_N=32, threads=128, in_dtype=F32, out_dtype=F32), a + b)


@run("language_alloc.alloc_global_eagerjit")
def _(m: Any) -> None:  # T.alloc_global as scratch memory, T.empty returned
    a = randn(1024, dtype=F16)
    poisoned((1024,), F16)
    close(m.alloc_global_eagerjit(a, 128, "float16"), a, rtol=1e-2, atol=1e-2)


@run("issue_1690.test")
def _(m: Any) -> None:
    m.test(randn(16))
    torch.cuda.synchronize()


@run("issue_1719.layout_3")
def _(m: Any) -> None:
    a = randn(2, 128)
    poisoned((2,))
    close(m._buggy_kernel(a), a.sum(dim=1), atol=1e-2, rtol=1e-2)


@run("issue_1719.layout_5")
def _(m: Any) -> None:
    m.buggy_kernel(randn(1, 128))
    torch.cuda.synchronize()


@run("issue_1846.fill_scalar")
def _(m: Any) -> None:
    poisoned((32,))
    out = m._issue1846_fill_scalar(fill=1.0, M=32)
    assert isinstance(out, torch.Tensor) and out.shape == (32,)
    assert torch.all(out == 1.0)


@run("jit_argument_binding.copy_kernel")
def _(m: Any) -> None:
    """`T.copy(A[i, j], B[i, j])` of two element loads copies one element: each block's first (upstream only binds it)."""
    a, b = randn(256, 256), nan(256, 256)
    m._copy_kernel(a, b)
    origins = torch.zeros(256, 256, dtype=torch.bool, device="cuda")
    origins[::64, ::64] = True
    assert torch.equal(b[origins], a[origins])
    assert torch.isnan(b[~origins]).all()


def test_every_case_has_a_gpu_run() -> None:
    assert {c.id for c in CASES} == set(RUNS)


@on_gpu[0]
@on_gpu[1]
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_torch(case: Case) -> None:
    torch.manual_seed(0)
    RUNS[case.id](load(case.source))


@on_gpu[0]
@on_gpu[1]
def test_attention_reference_is_attention() -> None:
    """The sparse-attention reference, with every block selected, is causal attention (torch's)."""
    q, k, v = randn(1, 64, 4, 32), randn(1, 64, 1, 32), randn(1, 64, 1, 32)
    indices = torch.arange(2, device="cuda").expand(1, 64, 1, 2)
    ref = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.expand(-1, -1, 4, -1).transpose(1, 2), v.expand(-1, -1, 4, -1).transpose(1, 2),
        is_causal=True, scale=0.1,
    ).transpose(1, 2)
    close(_nsa_ref(q, k, v, indices, 32, 0.1), ref, atol=1e-4, rtol=1e-4)
