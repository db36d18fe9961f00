"""Trainable flash attention (examples/flash_attention_backward.py) against torch autograd through SDPA."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from examples.flash_attention import attention_lse
from examples.flash_attention_backward import CONFIGS, attention_backward, flash_attention
from tests.gpu.conftest import poison_allocator, rel_err

BATCH, HEADS = 2, 4


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor, causal: bool) -> tuple[torch.Tensor, ...]:
    """O, dQ, dK, dV in float64 through SDPA (BHSD), returned in BSHD."""
    q64, k64, v64 = (x.detach().double().transpose(1, 2).requires_grad_() for x in (q, k, v))
    out = F.scaled_dot_product_attention(q64, k64, v64, is_causal=causal)
    grads = torch.autograd.grad(out, (q64, k64, v64), do.double().transpose(1, 2))
    return tuple(x.transpose(1, 2) for x in (out, *grads))


def inputs(seq_len: int, dim: int) -> tuple[torch.Tensor, ...]:
    return tuple(torch.randn(BATCH, seq_len, HEADS, dim, dtype=torch.float16, device="cuda") for _ in range(4))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_len, dim", [(256, 64), (384, 128), (300, 64), (383, 128)])
def test_lse_forward(causal: bool, seq_len: int, dim: int) -> None:
    q, k, v, do = inputs(seq_len, dim)
    poison_allocator(((BATCH, seq_len, HEADS, dim), torch.float16), ((BATCH, HEADS, seq_len), torch.float32))
    out, lse = attention_lse(q, k, v, causal, config=(128, True))
    scores = torch.einsum("bqhd,bkhd->bhqk", q.double(), k.double()) / dim**0.5
    if causal:
        scores.masked_fill_(torch.ones(seq_len, seq_len, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
    assert rel_err(out, reference(q, k, v, do, causal)[0]) < 1e-2
    assert rel_err(lse, torch.logsumexp(scores, dim=-1) * 1.4426950408889634) < 1e-4  # base 2


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_len, dim", [(300, 64), (383, 128)])
def test_backward_kernel(causal: bool, config: tuple[int, int, int, int], seq_len: int, dim: int) -> None:
    """Every configuration, from the forward's own LSE, on sequences ragged against every block size."""
    q, k, v, do = inputs(seq_len, dim)
    out, lse = attention_lse(q, k, v, causal, config=(128, False))
    shape = (BATCH, seq_len, HEADS, dim)
    poison_allocator((shape, torch.float16), (shape, torch.float16), (shape, torch.float16), (shape, torch.float32))
    grads = attention_backward(q, k, v, out, do, lse, causal, config)
    for name, got, want in zip(("dQ", "dK", "dV"), grads, reference(q, k, v, do, causal)[1:]):
        assert rel_err(got, want) < 1e-2, name


@pytest.mark.parametrize("causal", [False, True])
def test_training_through_autograd(causal: bool) -> None:
    """`flash_attention` under autograd (tuned forward and backward), gradients as torch's through SDPA."""
    q, k, v, do = inputs(384, 128)
    leaves = [x.requires_grad_() for x in (q, k, v)]
    out = flash_attention(*leaves, causal=causal)
    out.backward(do)
    want = reference(q, k, v, do, causal)
    assert rel_err(out, want[0]) < 1e-2
    for name, leaf, ref in zip(("dQ", "dK", "dV"), leaves, want[1:]):
        assert leaf.grad is not None and rel_err(leaf.grad, ref) < 1e-2, name
