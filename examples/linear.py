"""nn.Linear as one trainable kernel: `Y = X W^T + bias`, then SiLU if asked, in fp16.

The forward is examples/gemm_tuned.py's persistent GEMM (its schedule tuned
on first use) with the bias and SiLU applied to the fp32 accumulator in
registers, before the tile is stored: no second pass over Y. Rows are dyn,
so one kernel serves every batch; TMA moves rows of 16-byte multiples, so K
and N are multiples of 8 (checked by each call, before the launch).

The backward is torch's GEMMs (dX = dY W, dW = dY^T X, dbias = sum of dY's
rows), through SiLU at the pre-activation, recomputed, when the call had it
(torch's `silu_backward`: one pass over the tensors).
`linear.register_autograd(...)` makes the kernel trainable, under
`torch.compile` too (benchmarks/model.py trains a transformer block on it).
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch
import torch.nn.functional as F

import tltyped as tl
import tltyped.language as T
from examples.gemm_tuned import BLOCK_K, BLOCK_N, CONFIGS, STAGES, persistent_gemm

M = TypeVar("M", bound=tl.dyn[int])
N = TypeVar("N")
K = TypeVar("K")


@tl.jit(op="tltyped_examples::linear")
def linear(
    X: tl.Tensor[tl.float16, M, K],
    W: tl.Tensor[tl.float16, N, K],
    bias: tl.Tensor[tl.float16, N],
    silu: bool = False,
    schedule: tuple[int, int] = tl.tune(CONFIGS),
) -> tl.Tensor[tl.float16, M, N]:
    """X W^T + bias (W as nn.Linear keeps it, [out, in]), through SiLU if `silu`."""
    assert X.shape[1] // 8 * 8 == X.shape[1]
    assert W.shape[0] // 8 * 8 == W.shape[0]
    (m, _), (n, _) = X.shape, W.shape
    Y = T.empty((m, n), tl.float16)
    persistent_gemm(X, W, Y, schedule, (BLOCK_N, BLOCK_K, STAGES), transpose_B=True, bias=bias, silu=silu)
    return Y


def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    ctx.save_for_backward(*inputs)
    ctx.silu = ctx.consts["silu"]


def backward(ctx: Any, dY: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    X, W, bias = ctx.saved_tensors
    if ctx.silu:
        dY = torch.ops.aten.silu_backward(dY, F.linear(X, W, bias))
    return dY @ W, dY.t() @ X, dY.sum(0)


linear.register_autograd(backward, setup_context=setup_context)
