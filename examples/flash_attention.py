"""Flash attention forward (softmax(Q K^T / sqrt(d)) V), BSHD layout, causal or not, tuned.

TileLang's example (examples/flash_attention/example_mha_fwd_bshd.py upstream),
written with tltyped: the shapes come from the tensors, `causal` is a const
(Python `if`s choose the body), and the block shape, pipeline depth and
thread count are tuned on first use. The softmax runs in base 2 (`exp2` of
pre-scaled scores, one fused multiply-add per element, built with nvcc's
fast math as TileLang's example is); TileLang pipelines the loads of K and V
with the two GEMMs. Causal blocks start with the longest rows, so the last
wave of the grid holds the shortest work.
"""

from __future__ import annotations

from typing import TypeVar

import tltyped as tl
import tltyped.language as T

Bt = TypeVar("Bt")
S = TypeVar("S")
H = TypeVar("H")
D = TypeVar("D")

CONFIGS = [  # block_M, block_N, num_stages, threads
    (128, 128, 2, 256),
    (128, 128, 1, 256),
    (128, 128, 2, 128),
    (128, 64, 2, 256),
    (64, 128, 2, 128),
    (128, 176, 1, 256),
    (128, 192, 1, 256),
    (192, 128, 1, 384),
]


@tl.jit(pass_configs={"tl.enable_fast_math": True})
def attention(
    Q: tl.Tensor[tl.float16, Bt, S, H, D],
    K: tl.Tensor[tl.float16, Bt, S, H, D],
    V: tl.Tensor[tl.float16, Bt, S, H, D],
    causal: bool = False,
    config: tuple[int, int, int, int] = tl.tune(CONFIGS),
) -> tl.Tensor[tl.float16, Bt, S, H, D]:
    block_M, block_N, num_stages, threads = config
    batch, seq_len, heads, dim = Q.shape
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e): softmax in base 2
    Output = T.empty((batch, seq_len, heads, dim), tl.float16)
    with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (block, by, bz):
        bx = T.ceildiv(seq_len, block_M) - 1 - block if causal else block
        Q_shared = T.alloc_shared([block_M, dim], tl.float16)
        K_shared = T.alloc_shared([block_N, dim], tl.float16)
        V_shared = T.alloc_shared([block_N, dim], tl.float16)
        O_shared = T.alloc_shared([block_M, dim], tl.float16)
        acc_s = T.alloc_fragment([block_M, block_N], tl.float32)
        acc_s_cast = T.alloc_fragment([block_M, block_N], tl.float16)
        acc_o = T.alloc_fragment([block_M, dim], tl.float32)
        scores_max = T.alloc_fragment([block_M], tl.float32)
        scores_max_prev = T.alloc_fragment([block_M], tl.float32)
        scores_scale = T.alloc_fragment([block_M], tl.float32)
        scores_sum = T.alloc_fragment([block_M], tl.float32)
        logsum = T.alloc_fragment([block_M], tl.float32)

        T.copy(Q[bz, bx * block_M : (bx + 1) * block_M, by, :], Q_shared)
        T.fill(acc_o, 0)
        T.fill(logsum, 0)
        T.fill(scores_max, -T.infinity(T.float32))
        steps = T.ceildiv(seq_len, block_N)
        if causal:
            steps = T.min(steps, T.ceildiv((bx + 1) * block_M, block_N))
        for k in T.Pipelined(steps, num_stages=num_stages):
            # scores = Q K^T, masked only in the blocks that need it: those crossing the diagonal when
            # causal, else the last one when the sequence is ragged against block_N
            T.copy(K[bz, k * block_N : (k + 1) * block_N, by, :], K_shared)
            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            if causal:
                if (k + 1) * block_N > bx * block_M + 1:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, acc_s[i, j], -T.infinity(T.float32))
            elif seq_len % block_N != 0:
                if (k + 1) * block_N > seq_len:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j < seq_len, acc_s[i, j], -T.infinity(T.float32))
            # online softmax
            T.copy(scores_max, scores_max_prev)
            T.fill(scores_max, -T.infinity(T.float32))
            T.reduce_max(acc_s, scores_max, dim=1, clear=False)
            for i in T.Parallel(block_M):
                scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
            for i in T.Parallel(block_M):
                scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
            for i, j in T.Parallel(block_M, block_N):
                acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
            T.reduce_sum(acc_s, scores_sum, dim=1)
            for i in T.Parallel(block_M):
                logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
            T.copy(acc_s, acc_s_cast)
            # rescale the running output, then add P V
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] *= scores_scale[i]
            T.copy(V[bz, k * block_N : (k + 1) * block_N, by, :], V_shared)
            T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
        for i, j in T.Parallel(block_M, dim):
            acc_o[i, j] /= logsum[i]
        T.copy(acc_o, O_shared)
        T.copy(O_shared, Output[bz, bx * block_M : (bx + 1) * block_M, by, :])
    return Output
