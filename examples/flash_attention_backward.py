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
- the main kernel, scheduled by hand for Hopper as the forward is: one block
  of `block_M` keys per CTA, its K and V loaded once with TMA, its dK and dV
  in registers of `block_M // 64` consumer warpgroups (64 keys each). A
  producer warpgroup loads each block of `block_N` queries (Q and dO with
  TMA, LSE and Delta with plain loads) into one of `num_stages` stages,
  handing them over through mbarriers (full: loaded, empty: read). Per block
  the consumers issue S^T = K Q^T and dP^T = V dO^T as asynchronous WGMMAs,
  wait for S^T only and compute P = exp2(S^T scale - LSE) while dP^T runs;
  then issue dV += P^T dO and compute dS^T = P (dP^T - Delta) while it
  runs (1 / sqrt(d) is left to dK at the end and to dQ's cast, as
  FlashAttention-3 does: one multiply fewer per score); then, dS^T in
  shared memory, issue dQ_k = dS K and dK += dS^T Q, and store dQ_k in one
  of two shared buffers. A writer warp of the producer warpgroup adds each
  stored dQ_k into the accumulator with TMA's reduce-add while the
  consumers go on (FlashAttention-3's scheme: one bulk fp32 add per block,
  no per-element atomics), and frees the buffer once the add has read it.
  Consumer warpgroup 0 waits for that read of the previous block's dQ_k
  after issuing its GEMMs, warpgroup 1 does not: the offset keeps their
  shared-memory-bound WGMMAs from colliding. Neither waiting measured a
  fifth slower without a mask; warpgroup 1 or both waiting, no faster
  (benchmarks/RESULTS.md). The consumers meet at one named barrier per
  block (two with a single dS^T buffer), placed by hand rather than after
  every shared-memory write. Each stage is released once its last WGMMA
  has completed. dK and dV are stored once at the end, through the shared
  memory of K and V;
- dQ times 1 / sqrt(d), cast to fp16.
Zeroing the accumulator inside the call keeps the call self-contained, so
the tuner may time it repeatedly on the same inputs. Causal key blocks skip
the query blocks above the diagonal and mask only the blocks crossing it;
blocks come in order of decreasing work (key block 0 sees every query).
Rows past the sequence's end load as zeros (LSE and Delta too), which
contribute nothing (their dO is zero), and are not stored.

Autograd: `attention_lse` has `backward` registered (the call's `causal`
comes to it as `ctx.consts`), so `flash_attention` (which calls it and drops
the LSE) is trainable, under torch.compile too.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch

import tltyped as tl
import tltyped.language as T
from examples.flash_attention import attention_lse

Bt = TypeVar("Bt")
S = TypeVar("S")
H = TypeVar("H")
D = TypeVar("D")

ROWS = 64  # rows per block of the Delta and dQ-cast kernels
# block_M (keys: 64 per consumer warpgroup), block_N (queries), num_stages, ds_buffers (dS^T in shared
# memory: 2 saves a barrier per block, 1 saves 16 KiB and keeps dS's stores as stmatrix). block_N = 128, or
# 3 stages, would not fit shared memory at D = 128; block_M = 64 (one consumer warpgroup) runs at half speed.
CONFIGS = [(128, 64, 2, 2), (128, 64, 2, 1)]


# The consumers' barriers are placed by hand (named barrier 5 over the consumer threads), not inserted by
# TileLang after each shared-memory write: one or two per query block instead of four.
@tl.jit(
    op="tltyped_examples::attention_backward",
    pass_configs={"tl.enable_fast_math": True, "tl.disable_thread_storage_sync": True},
)
def attention_backward(
    Q: tl.Tensor[tl.float16, Bt, S, H, D],
    K: tl.Tensor[tl.float16, Bt, S, H, D],
    V: tl.Tensor[tl.float16, Bt, S, H, D],
    O: tl.Tensor[tl.float16, Bt, S, H, D],
    dO: tl.Tensor[tl.float16, Bt, S, H, D],
    LSE: tl.Tensor[tl.float32, Bt, H, S],
    causal: bool = False,
    config: tuple[int, int, int, int] = tl.tune(CONFIGS),
) -> tuple[tl.Tensor[tl.float16, Bt, S, H, D], tl.Tensor[tl.float16, Bt, S, H, D], tl.Tensor[tl.float16, Bt, S, H, D]]:
    """dQ, dK, dV of `attention_lse` (with its `causal`) for the output's gradient dO."""
    block_M, block_N, num_stages, ds_buffers = config
    consumers = block_M // 64 * 128  # consumer threads: a warpgroup per 64 keys
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

    with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=consumers + 128) as (bx, by, bz):
        K_shared = T.alloc_shared([block_M, dim], tl.float16)
        V_shared = T.alloc_shared([block_M, dim], tl.float16)
        q = T.alloc_shared([num_stages, block_N, dim], tl.float16)
        do_shared = T.alloc_shared([num_stages, block_N, dim], tl.float16)
        lse = T.alloc_shared([num_stages, block_N], tl.float32)
        delta_shared = T.alloc_shared([num_stages, block_N], tl.float32)
        pT = T.alloc_fragment([block_M, block_N], tl.float32)
        dpT = T.alloc_fragment([block_M, block_N], tl.float32)
        pT_cast = T.alloc_fragment([block_M, block_N], tl.float16)
        dsT_cast = T.alloc_fragment([block_M, block_N], tl.float16)
        dsT_shared = T.alloc_shared([2, block_M, block_N] if ds_buffers == 2 else [block_M, block_N], tl.float16)
        dk = T.alloc_fragment([block_M, dim], tl.float32)
        dv = T.alloc_fragment([block_M, dim], tl.float32)
        dq = T.alloc_fragment([block_N, dim], tl.float32)
        dq_shared = T.alloc_shared([2, block_N, dim], tl.float32)  # block n's dQ_k is added during block n + 1
        dk_shared = K_shared  # K and V are read for the last time before dK and dV are written
        dv_shared = V_shared
        kv_ready = T.alloc_barrier(arrive_count=consumers + 128)
        q_full = T.alloc_barrier(arrive_count=[64] * num_stages)  # the loaders' threads
        do_full = T.alloc_barrier(arrive_count=[64] * num_stages)
        q_empty = T.alloc_barrier(arrive_count=[consumers] * num_stages)  # the consumers' threads
        do_empty = T.alloc_barrier(arrive_count=[consumers] * num_stages)
        dq_full = T.alloc_barrier(arrive_count=[consumers] * 2)  # dq_shared[i] stored by the consumers
        dq_empty = T.alloc_barrier(arrive_count=[1] * 2)  # dq_shared[i] read by the writer's add

        first = T.floordiv(bx * block_M, block_N) if causal else 0
        steps = T.ceildiv(seq_len, block_N) - first
        tx = T.get_thread_binding()
        T.tma_copy(K[bz, bx * block_M : (bx + 1) * block_M, by, :], K_shared, barrier=kv_ready)
        T.tma_copy(V[bz, bx * block_M : (bx + 1) * block_M, by, :], V_shared, barrier=kv_ready)
        T.barrier_arrive(kv_ready)

        if tx >= consumers:  # the producer warpgroup: a dQ writer warp, an idle warp, two loader warps
            T.set_max_nreg(24, 0)
            if tx < consumers + 32:  # the writer: adds block n's dQ_k into the accumulator, with TMA's reduce-add
                for n in T.serial(steps):
                    T.barrier_wait(dq_full[n % 2], (n // 2) & 1)
                    if tx == consumers:  # one thread issues the add, waits for its read of the buffer, frees it
                        T.atomic_add(dQ_accum[bz, (first + n) * block_N : (first + n + 1) * block_N, by, :],
                                     dq_shared[n % 2, :, :], use_tma=True)
                        T.barrier_arrive(dq_empty[n % 2])
            if tx >= consumers + 64:  # the loaders: query block first + n's Q, dO (TMA), LSE and Delta into stage n % num_stages
                for n in T.serial(steps):
                    k = first + n
                    T.barrier_wait(q_empty[n % num_stages], ((n // num_stages) & 1) ^ 1)
                    T.tma_copy(Q[bz, k * block_N : (k + 1) * block_N, by, :], q[n % num_stages, :, :], barrier=q_full[n % num_stages])
                    for j in T.Parallel(block_N):
                        lse[n % num_stages, j] = T.if_then_else(k * block_N + j < seq_len, LSE[bz, by, k * block_N + j], 0)
                    T.barrier_arrive(q_full[n % num_stages])
                    T.barrier_wait(do_empty[n % num_stages], ((n // num_stages) & 1) ^ 1)
                    T.tma_copy(dO[bz, k * block_N : (k + 1) * block_N, by, :], do_shared[n % num_stages, :, :],
                               barrier=do_full[n % num_stages])
                    for j in T.Parallel(block_N):
                        delta_shared[n % num_stages, j] = T.if_then_else(k * block_N + j < seq_len, Delta[bz, by, k * block_N + j], 0)
                    T.barrier_arrive(do_full[n % num_stages])
        else:  # the consumers: block_M // 64 warpgroups, 64 keys each
            T.set_max_nreg(240, 1)
            T.clear(dk)
            T.clear(dv)
            T.barrier_wait(kv_ready, 0)
            for n in T.serial(steps):
                k = first + n
                stage = n % num_stages
                # S^T = K Q^T and dP^T = V dO^T, both async; P while dP^T runs
                T.barrier_wait(q_full[stage], (n // num_stages) & 1)
                T.wgmma_gemm(K_shared, q[stage, :, :], pT, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
                T.barrier_wait(do_full[stage], (n // num_stages) & 1)
                T.wgmma_gemm(V_shared, do_shared[stage, :, :], dpT, transpose_B=True, clear_accum=True,
                             policy=T.GemmWarpPolicy.FullRow)
                T.wait_wgmma(1)
                for i, j in T.Parallel(block_M, block_N):
                    pT[i, j] = T.exp2(pT[i, j] * scale - lse[stage, j])
                if causal:
                    if k * block_N < (bx + 1) * block_M:  # only blocks crossing the diagonal
                        for i, j in T.Parallel(block_M, block_N):
                            pT[i, j] = T.if_then_else(bx * block_M + i <= k * block_N + j, pT[i, j], 0)
                T.copy(pT, pT_cast)
                T.wait_wgmma(0)
                # dV += P^T dO, async; dS^T while it runs
                T.wgmma_gemm(pT_cast, do_shared[stage, :, :], dv, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block_M, block_N):
                    dsT_cast[i, j] = pT[i, j] * (dpT[i, j] - delta_shared[stage, j])
                # two buffers: block n's was last read by block n - 2's dQ_k WGMMA, waited for before block n - 1's
                # barrier; one: wait until every warpgroup's dQ_k WGMMA of block n - 1 has read it
                if ds_buffers == 1:
                    T.sync_threads(5, consumers)
                T.copy(dsT_cast, dsT_shared[n % 2, :, :] if ds_buffers == 2 else dsT_shared)
                T.fence_proxy_async()  # each thread's writes of dS, before the WGMMAs' reads
                T.sync_threads(5, consumers)
                # dQ_k = dS K and dK += dS^T Q, async; the writer adds block n - 1's dQ_k meanwhile
                T.wgmma_gemm(dsT_shared[n % 2, :, :] if ds_buffers == 2 else dsT_shared, K_shared, dq, transpose_A=True,
                             clear_accum=True)
                T.wgmma_gemm(dsT_cast, q[stage, :, :], dk, policy=T.GemmWarpPolicy.FullRow)
                if n > 0:  # warpgroup 0 waits for the writer's read of block n - 1's dQ_k: see the docstring
                    if tx < 128:
                        T.barrier_wait(dq_empty[(n - 1) % 2], ((n - 1) // 2) & 1)
                T.wait_wgmma(1)
                T.barrier_arrive(do_empty[stage])
                T.barrier_wait(dq_empty[n % 2], ((n // 2) & 1) ^ 1)  # block n - 2's add has read the buffer
                T.copy(dq, dq_shared[n % 2, :, :])
                T.fence_proxy_async()
                T.barrier_arrive(dq_full[n % 2])
                T.wait_wgmma(0)
                T.barrier_arrive(q_empty[stage])
            T.sync_threads(5, consumers)  # every WGMMA reading K and V is done
            for i, j in T.Parallel(block_M, dim):
                dk[i, j] *= sm_scale
            T.copy(dk, dk_shared)
            T.copy(dv, dv_shared)
            T.fence_proxy_async()
            T.sync_threads(5, consumers)
            T.copy(dk_shared, dK[bz, bx * block_M : (bx + 1) * block_M, by, :])
            T.copy(dv_shared, dV[bz, bx * block_M : (bx + 1) * block_M, by, :])

    with T.Kernel(T.ceildiv(seq_len, ROWS), heads, batch, threads=128) as (bx, by, bz):
        dq_rows = T.alloc_fragment([ROWS, dim], tl.float32)
        T.copy(dQ_accum[bz, bx * ROWS : (bx + 1) * ROWS, by, :], dq_rows)
        for i, j in T.Parallel(ROWS, dim):
            dq_rows[i, j] *= sm_scale
        T.copy(dq_rows, dQ[bz, bx * ROWS : (bx + 1) * ROWS, by, :])
    return dQ, dK, dV


def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, torch.Tensor]) -> None:
    ctx.save_for_backward(*inputs, *output)
    ctx.causal = ctx.consts["causal"]
    ctx.mark_non_differentiable(output[1])  # the LSE: a by-product for the backward


def backward(ctx: Any, dO: torch.Tensor, _dLSE: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    Q, K, V, O, LSE = ctx.saved_tensors
    return attention_backward(Q, K, V, O, dO.contiguous(), LSE, ctx.causal)


attention_lse.register_autograd(backward, setup_context=setup_context)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d)) V of fp16 BSHD tensors, trainable: the forward kernel, and the backward's on
    `backward()`."""
    output, _lse = attention_lse(q, k, v, causal)
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
