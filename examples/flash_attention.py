"""Flash attention forward (softmax(Q K^T / sqrt(d)) V), BSHD layout, causal or not, tuned.

TileLang's example (examples/flash_attention/example_mha_fwd_bshd.py
upstream) scheduled by hand for Hopper, as FlashAttention-3 is:
- a producer warpgroup loads blocks of K and V with TMA into two stages each,
  handing them over through mbarriers (full: loaded, empty: read);
- two consumer warpgroups share a block of 128 query rows (64 each). For each
  block k of K and V they issue S_k = Q K_k^T and O += P_{k-1} V_{k-1} as
  asynchronous WGMMAs, wait for S_k only, and compute block k's softmax while
  the second GEMM runs: P V trails Q K^T by one block, so block 0's Q K^T
  comes before the loop and the last block's P V after it (no `if` inside
  the loop guards a WGMMA or its wait: ptxas would serialise them all);
- with `pingpong`, named barriers make the two warpgroups take turns issuing
  their GEMMs, so one's softmax overlaps the other's GEMMs.

The shapes come from the tensors, `causal` is a const (Python `if`s choose
the body), and the key block size and the ping-pong are tuned on first use.
The softmax runs in base 2 (`exp2` of pre-scaled scores, built with nvcc's
fast math as TileLang's example is). Causal blocks start with the longest
rows, so the last wave of the grid holds the shortest work. Rows and keys
past the sequence's end are zeros from TMA, masked out of the softmax, and
not stored.

The kernel is one macro, `forward`. `attention` calls it for O alone;
`attention_lse` also stores each row's log-sum-exp in base 2, LSE =
log2(sum_j exp2(s_j)) of the scores s = Q K^T log2(e) / sqrt(d) (the
natural one times log2(e)), fp32 [B, H, S]: a few stores after the last
block, for the backward of examples/flash_attention_backward.py, which
registers itself on it.
"""

from __future__ import annotations

from typing import TypeVar

import torch

import tltyped as tl
import tltyped.language as T

Bt = TypeVar("Bt")
S = TypeVar("S")
H = TypeVar("H")
D = TypeVar("D")

BLOCK_M = 128  # query rows per block: two consumer warpgroups of 64 (a WGMMA's M)
STAGES = 2  # K and V blocks in flight
CONFIGS = [(128, False), (128, True), (176, False), (176, True)]  # block_N, pingpong


@T.macro
def softmax_step(
    k: int, acc_s: T.Buffer, scores_max: T.Buffer, scores_max_prev: T.Buffer, scores_scale: T.Buffer,
    scores_sum: T.Buffer, logsum: T.Buffer, bx: int, seq_len: int, causal: bool, scale: float,
) -> None:
    """S_k (acc_s) to P_k, folded into the running row maxima and sums; the factor for O into scores_scale."""
    block_M, block_N = acc_s.shape
    # mask only the blocks that need it: those crossing the diagonal when causal, else the last one when the
    # sequence is ragged against block_N
    if causal:
        if (k + 1) * block_N > bx * block_M + 1:
            for i, j in T.Parallel(block_M, block_N):
                acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, acc_s[i, j], -T.infinity(T.float32))
    elif seq_len % block_N != 0:
        if (k + 1) * block_N > seq_len:
            for i, j in T.Parallel(block_M, block_N):
                acc_s[i, j] = T.if_then_else(k * block_N + j < seq_len, acc_s[i, j], -T.infinity(T.float32))
    T.copy(scores_max, scores_max_prev)
    T.reduce_max(acc_s, scores_max, dim=1, clear=False)
    for i in T.Parallel(block_M):
        scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
    for i, j in T.Parallel(block_M, block_N):
        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
    T.reduce_sum(acc_s, scores_sum, dim=1)
    for i in T.Parallel(block_M):
        logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]


@T.macro
def forward(
    Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, Output: torch.Tensor, LSE: torch.Tensor | None, causal: bool,
    config: tuple[int, bool],
) -> None:
    """The kernel: O = softmax(Q K^T / sqrt(d)) V into Output, and each row's base-2 log-sum-exp into LSE if given."""
    block_N, pingpong = config
    block_M = BLOCK_M
    batch, seq_len, heads, dim = Q.shape
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e): softmax in base 2
    with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=384) as (block, by, bz):
        bx = T.ceildiv(seq_len, block_M) - 1 - block if causal else block
        Q_shared = T.alloc_shared([block_M, dim], tl.float16)
        K_shared = T.alloc_shared([STAGES, block_N, dim], tl.float16)
        V_shared = T.alloc_shared([STAGES, block_N, dim], tl.float16)
        O_shared = Q_shared  # Q is read for the last time before O is written
        acc_s = T.alloc_fragment([block_M, block_N], tl.float32)
        acc_s_cast = T.alloc_fragment([block_M, block_N], tl.float16)
        acc_o = T.alloc_fragment([block_M, dim], tl.float32)
        scores_max = T.alloc_fragment([block_M], tl.float32)
        scores_max_prev = T.alloc_fragment([block_M], tl.float32)
        scores_scale = T.alloc_fragment([block_M], tl.float32)
        scores_sum = T.alloc_fragment([block_M], tl.float32)
        logsum = T.alloc_fragment([block_M], tl.float32)
        q_ready = T.alloc_barrier(arrive_count=384)
        k_full = T.alloc_barrier(arrive_count=[128] * STAGES)  # the producer's threads
        v_full = T.alloc_barrier(arrive_count=[128] * STAGES)
        k_empty = T.alloc_barrier(arrive_count=[256] * STAGES)  # the consumers' threads
        v_empty = T.alloc_barrier(arrive_count=[256] * STAGES)

        steps = T.ceildiv(seq_len, block_N)
        if causal:
            steps = T.min(steps, T.ceildiv((bx + 1) * block_M, block_N))
        tx = T.get_thread_binding()
        T.tma_copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared, barrier=q_ready)
        T.barrier_arrive(q_ready)

        if tx >= 256:  # the producer: block k of K, then of V, each into stage k % STAGES once it is read
            T.set_max_nreg(24, 0)
            for k in T.serial(steps):
                T.barrier_wait(k_empty[k % STAGES], ((k // STAGES) & 1) ^ 1)
                T.tma_copy(K[bz, k * block_N : (k + 1) * block_N, by, :], K_shared[k % STAGES, :, :], barrier=k_full[k % STAGES])
                T.barrier_arrive(k_full[k % STAGES])
                T.barrier_wait(v_empty[k % STAGES], ((k // STAGES) & 1) ^ 1)
                T.tma_copy(V[bz, k * block_N : (k + 1) * block_N, by, :], V_shared[k % STAGES, :, :], barrier=v_full[k % STAGES])
                T.barrier_arrive(v_full[k % STAGES])
        else:  # the consumers; with pingpong, warpgroup w = tx // 128 issues when named barrier 8 + w lets it
            T.set_max_nreg(240, 1)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(T.float32))
            T.barrier_wait(q_ready, 0)
            if pingpong and tx >= 128:
                T.named_barrier_arrive(8, 256)  # warpgroup 0 goes first
            # S_0
            T.barrier_wait(k_full[0], 0)
            if pingpong:
                T.sync_threads(8 + tx // 128, 256)
            T.wgmma_gemm(Q_shared, K_shared[0, :, :], acc_s, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            if pingpong:
                T.named_barrier_arrive(9 - tx // 128, 256)
            T.wait_wgmma(0)
            T.barrier_arrive(k_empty[0])
            softmax_step(0, acc_s, scores_max, scores_max_prev, scores_scale, scores_sum, logsum, bx, seq_len, causal, scale)
            T.copy(acc_s, acc_s_cast)
            for k in T.serial(1, steps):
                # S_k = Q K_k^T and O += P_{k-1} V_{k-1}, both async; block k's softmax runs while the second does
                T.barrier_wait(k_full[k % STAGES], (k // STAGES) & 1)
                if pingpong:
                    T.sync_threads(8 + tx // 128, 256)
                T.wgmma_gemm(Q_shared, K_shared[k % STAGES, :, :], acc_s, transpose_B=True, clear_accum=True,
                             policy=T.GemmWarpPolicy.FullRow)
                T.barrier_wait(v_full[(k - 1) % STAGES], ((k - 1) // STAGES) & 1)
                T.wgmma_gemm(acc_s_cast, V_shared[(k - 1) % STAGES, :, :], acc_o, policy=T.GemmWarpPolicy.FullRow)
                if pingpong:
                    T.named_barrier_arrive(9 - tx // 128, 256)
                T.wait_wgmma(1)  # S_k is ready; P_{k-1} V_{k-1} still runs
                T.barrier_arrive(k_empty[k % STAGES])
                softmax_step(k, acc_s, scores_max, scores_max_prev, scores_scale, scores_sum, logsum, bx, seq_len, causal, scale)
                T.wait_wgmma(0)
                T.barrier_arrive(v_empty[(k - 1) % STAGES])
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(acc_s, acc_s_cast)
            # O += P V of the last block
            last = steps - 1
            T.barrier_wait(v_full[last % STAGES], (last // STAGES) & 1)
            if pingpong:
                T.sync_threads(8 + tx // 128, 256)
            T.wgmma_gemm(acc_s_cast, V_shared[last % STAGES, :, :], acc_o, policy=T.GemmWarpPolicy.FullRow)
            if pingpong and tx < 128:
                T.named_barrier_arrive(9, 256)  # warpgroup 1's last turn; warpgroup 0 takes no more
            T.wait_wgmma(0)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            if LSE is not None:
                for i in T.Parallel(block_M):
                    logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
                T.copy(logsum, LSE[bz, by, bx * block_M : (bx + 1) * block_M])
            T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])


@tl.jit(pass_configs={"tl.enable_fast_math": True})
def attention(
    Q: tl.Tensor[tl.float16, Bt, S, H, D],
    K: tl.Tensor[tl.float16, Bt, S, H, D],
    V: tl.Tensor[tl.float16, Bt, S, H, D],
    causal: bool = False,
    config: tuple[int, bool] = tl.tune(CONFIGS),
) -> tl.Tensor[tl.float16, Bt, S, H, D]:
    batch, seq_len, heads, dim = Q.shape
    Output = T.empty((batch, seq_len, heads, dim), tl.float16)
    forward(Q, K, V, Output, None, causal, config)
    return Output


@tl.jit(op="tltyped_examples::attention_lse", pass_configs={"tl.enable_fast_math": True})
def attention_lse(
    Q: tl.Tensor[tl.float16, Bt, S, H, D],
    K: tl.Tensor[tl.float16, Bt, S, H, D],
    V: tl.Tensor[tl.float16, Bt, S, H, D],
    causal: bool = False,
    config: tuple[int, bool] = tl.tune(CONFIGS),
) -> tuple[tl.Tensor[tl.float16, Bt, S, H, D], tl.Tensor[tl.float32, Bt, H, S]]:
    """`attention`, also returning each row's log-sum-exp (base 2): the forward of a trainable op."""
    batch, seq_len, heads, dim = Q.shape
    Output = T.empty((batch, seq_len, heads, dim), tl.float16)
    LSE = T.empty((batch, heads, seq_len), tl.float32)
    forward(Q, K, V, Output, LSE, causal, config)
    return Output, LSE
