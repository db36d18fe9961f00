"""Flash attention backward, and trainable flash attention: `flash_attention(q, k, v, causal)`.

With P = softmax(Q K^T / sqrt(d)) and O = P V, the gradients are

    dV = P^T dO,   dP = dO V^T,   dS = P * (dP - Delta) / sqrt(d),   dQ = dS K,   dK = dS^T Q,

where Delta = rowsum(dO * O) (= rowsum(P * dP)). As in FlashAttention-2
(and TileLang's example, examples/flash_attention/example_gqa_bwd.py
upstream), P is never stored: the forward returns each row's log-sum-exp,
base 2, LSE = log2(sum_j exp2(s_j)) of the scores s = Q K^T log2(e) /
sqrt(d) (examples/flash_attention.py's `attention_lse`), and the backward
recomputes a block of P as exp2(s - LSE), exactly normalised.

`attention_backward` is one call of three kernels, in order on the stream:
- Delta = rowsum(dO * O) per row (fp32), and dQ's fp32 accumulator zeroed;
- the main kernel: one block of `block_M` keys per CTA, its K and V in
  shared memory and its dK, dV in registers, looping over blocks of
  `block_N` queries (their Q, dO, LSE, Delta loads pipelined over
  `num_stages` with T.Pipelined): five GEMMs per step (S^T = K Q^T, dP^T =
  V dO^T, dV += P^T dO, dK += dS^T Q, dQ_k = dS K). dK and dV are stored
  once at the end; dQ_k is added into the accumulator with TMA's reduce-add
  (FlashAttention-3's scheme: one bulk fp32 add per block, no per-element
  atomics);
- dQ cast to fp16.
Zeroing the accumulator inside the call keeps the call self-contained, so
the tuner may time it repeatedly on the same inputs. Causal key blocks skip
the query blocks above the diagonal; blocks come in order of decreasing
work (key block 0 sees every query). Rows past the sequence's end load as
zeros, which contribute nothing (their dO is zero), and are not stored.

Autograd: `attention_lse` and `causal_attention_lse` have `backward`
registered, so `flash_attention` (which calls one and drops the LSE) is
trainable, under torch.compile too.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

import torch

import tltyped as tl
import tltyped.language as T
from examples.flash_attention import attention_lse, causal_attention_lse

Bt = TypeVar("Bt")
S = TypeVar("S")
H = TypeVar("H")
D = TypeVar("D")

ROWS = 64  # rows per block of the Delta and dQ-cast kernels
CONFIGS = [(128, 64, 2), (128, 32, 2), (128, 64, 1), (128, 32, 3)]  # block_M (keys), block_N (queries), num_stages


@tl.jit(op="tltyped_examples::attention_backward", pass_configs={"tl.enable_fast_math": True})
def attention_backward(
    Q: tl.Tensor[tl.float16, Bt, S, H, D],
    K: tl.Tensor[tl.float16, Bt, S, H, D],
    V: tl.Tensor[tl.float16, Bt, S, H, D],
    O: tl.Tensor[tl.float16, Bt, S, H, D],
    dO: tl.Tensor[tl.float16, Bt, S, H, D],
    LSE: tl.Tensor[tl.float32, Bt, H, S],
    causal: bool = False,
    config: tuple[int, int, int] = tl.tune(CONFIGS),
) -> tuple[tl.Tensor[tl.float16, Bt, S, H, D], tl.Tensor[tl.float16, Bt, S, H, D], tl.Tensor[tl.float16, Bt, S, H, D]]:
    """dQ, dK, dV of `attention_lse` (or `causal_attention_lse` if `causal`) for the output's gradient dO."""
    block_M, block_N, num_stages = config
    batch, seq_len, heads, dim = Q.shape
    sm_scale = (1.0 / dim) ** 0.5
    scale = sm_scale * 1.44269504  # log2(e): P = exp2(s - LSE) as in the forward
    dQ = T.empty((batch, seq_len, heads, dim), tl.float16)
    dK = T.empty((batch, seq_len, heads, dim), tl.float16)
    dV = T.empty((batch, seq_len, heads, dim), tl.float16)
    Delta = T.alloc_global((batch, heads, seq_len), tl.float32)
    dQ_accum = T.alloc_global((batch, seq_len, heads, dim), tl.float32)

    with T.Kernel(T.ceildiv(seq_len, ROWS), heads, batch, threads=128) as (bx, by, bz):
        o = T.alloc_fragment([ROWS, dim], tl.float32)
        do = T.alloc_fragment([ROWS, dim], tl.float32)
        delta = T.alloc_fragment([ROWS], tl.float32)
        T.copy(O[bz, bx * ROWS : (bx + 1) * ROWS, by, :], o)
        T.copy(dO[bz, bx * ROWS : (bx + 1) * ROWS, by, :], do)
        for i, j in T.Parallel(ROWS, dim):
            o[i, j] *= do[i, j]
        T.reduce_sum(o, delta, dim=1)
        T.copy(delta, Delta[bz, by, bx * ROWS : (bx + 1) * ROWS])
        T.clear(do)
        T.copy(do, dQ_accum[bz, bx * ROWS : (bx + 1) * ROWS, by, :])

    with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=256) as (bx, by, bz):
        K_shared = T.alloc_shared([block_M, dim], tl.float16)
        V_shared = T.alloc_shared([block_M, dim], tl.float16)
        q = T.alloc_shared([block_N, dim], tl.float16)
        do_shared = T.alloc_shared([block_N, dim], tl.float16)
        lse = T.alloc_shared([block_N], tl.float32)
        delta_shared = T.alloc_shared([block_N], tl.float32)
        pT = T.alloc_fragment([block_M, block_N], tl.float32)
        dpT = T.alloc_fragment([block_M, block_N], tl.float32)
        pT_cast = T.alloc_fragment([block_M, block_N], tl.float16)
        dsT_cast = T.alloc_fragment([block_M, block_N], tl.float16)
        dsT_shared = T.alloc_shared([block_M, block_N], tl.float16)
        dk = T.alloc_fragment([block_M, dim], tl.float32)
        dv = T.alloc_fragment([block_M, dim], tl.float32)
        dq = T.alloc_fragment([block_N, dim], tl.float32)
        dq_shared = T.alloc_shared([block_N, dim], tl.float32)
        dk_shared = T.alloc_shared([block_M, dim], tl.float16)
        dv_shared = T.alloc_shared([block_M, dim], tl.float16)

        T.copy(K[bz, bx * block_M : (bx + 1) * block_M, by, :], K_shared)
        T.copy(V[bz, bx * block_M : (bx + 1) * block_M, by, :], V_shared)
        T.clear(dk)
        T.clear(dv)
        first = T.floordiv(bx * block_M, block_N) if causal else 0
        for k in T.Pipelined(first, T.ceildiv(seq_len, block_N), num_stages=num_stages):
            T.copy(Q[bz, k * block_N : (k + 1) * block_N, by, :], q)
            T.gemm(K_shared, q, pT, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(dO[bz, k * block_N : (k + 1) * block_N, by, :], do_shared)
            T.gemm(V_shared, do_shared, dpT, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(LSE[bz, by, k * block_N : (k + 1) * block_N], lse)
            for i, j in T.Parallel(block_M, block_N):
                pT[i, j] = T.exp2(pT[i, j] * scale - lse[j])
            if causal:
                for i, j in T.Parallel(block_M, block_N):
                    pT[i, j] = T.if_then_else(bx * block_M + i <= k * block_N + j, pT[i, j], 0)
            T.copy(pT, pT_cast)
            T.gemm(pT_cast, do_shared, dv, policy=T.GemmWarpPolicy.FullRow)
            T.copy(Delta[bz, by, k * block_N : (k + 1) * block_N], delta_shared)
            for i, j in T.Parallel(block_M, block_N):
                dsT_cast[i, j] = pT[i, j] * (dpT[i, j] - delta_shared[j]) * sm_scale
            T.gemm(dsT_cast, q, dk, policy=T.GemmWarpPolicy.FullRow)
            T.copy(dsT_cast, dsT_shared)
            T.gemm(dsT_shared, K_shared, dq, transpose_A=True, clear_accum=True)
            T.copy(dq, dq_shared)
            T.atomic_add(dQ_accum[bz, k * block_N : (k + 1) * block_N, by, :], dq_shared, use_tma=True)
        T.copy(dk, dk_shared)
        T.copy(dk_shared, dK[bz, bx * block_M : (bx + 1) * block_M, by, :])
        T.copy(dv, dv_shared)
        T.copy(dv_shared, dV[bz, bx * block_M : (bx + 1) * block_M, by, :])

    with T.Kernel(T.ceildiv(seq_len, ROWS), heads, batch, threads=128) as (bx, by, bz):
        T.copy(dQ_accum[bz, bx * ROWS : (bx + 1) * ROWS, by, :], dQ[bz, bx * ROWS : (bx + 1) * ROWS, by, :])
    return dQ, dK, dV


def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, torch.Tensor]) -> None:
    ctx.save_for_backward(*inputs, *output)
    ctx.mark_non_differentiable(output[1])  # the LSE: a by-product for the backward


def backward(
    ctx: Any, dO: torch.Tensor, _dLSE: torch.Tensor | None, causal: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    Q, K, V, O, LSE = ctx.saved_tensors
    return attention_backward(Q, K, V, O, dO.contiguous(), LSE, causal)


attention_lse.register_autograd(functools.partial(backward, causal=False), setup_context=setup_context)
causal_attention_lse.register_autograd(functools.partial(backward, causal=True), setup_context=setup_context)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d)) V of fp16 BSHD tensors, trainable: the forward kernel, and the backward's on
    `backward()`."""
    output, _lse = (causal_attention_lse if causal else attention_lse)(q, k, v)
    return output


if __name__ == "__main__":
    import torch.nn.functional as F

    for causal in (False, True):
        q, k, v = (torch.randn(2, 1000, 4, 128, dtype=torch.float16, device="cuda", requires_grad=True) for _ in range(3))
        do = torch.randn_like(q)
        grads = torch.autograd.grad(flash_attention(q, k, v, causal), (q, k, v), do)
        q64, k64, v64 = (x.detach().double().transpose(1, 2).requires_grad_() for x in (q, k, v))
        out64 = F.scaled_dot_product_attention(q64, k64, v64, is_causal=causal)
        refs = torch.autograd.grad(out64, (q64, k64, v64), do.double().transpose(1, 2))
        for name, got, want in zip(("dQ", "dK", "dV"), grads, refs):
            error = float((got.double() - want.transpose(1, 2)).norm() / want.norm())
            print(f"causal={causal} {name}: relative error {error:.2e}")
            assert error < 1e-2, name
