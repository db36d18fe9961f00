"""Correct calls of signature-form kernels, written as users write them: no type checker may report one.

Plain torch tensors go wherever a kernel takes a tensor; tensors typed
`tl.Tensor[...]` whose dtype, rank and dims fit go there too; results are
torch tensors to torch and typed tensors to the next kernel.
"""

from typing import Literal, TypeVar

import torch

import tltyped as tl
import tltyped.language as T
from tests.pyright.kernels import (
    add,
    axpy,
    batched_gemm,
    fill,
    gemm,
    scale,
    softmax,
    sum_and_difference,
    tile_rows,
    transpose,
)

P = TypeVar("P", bound=int)
Q = TypeVar("Q", bound=int)
L128 = Literal[128]
L256 = Literal[256]
L512 = Literal[512]
L1024 = Literal[1024]


def with_torch_tensors(device: str = "cuda") -> None:
    a = torch.randn(1024, 512, dtype=torch.float16, device=device)
    b = torch.randn(512, 256, dtype=torch.float16, device=device)
    c = gemm(a, b)
    c = gemm(a, b, 64)
    c = gemm(a, b, block_M=64, block_N=256, block_K=64)
    c = gemm(A=a, B=b)
    c = gemm(a, B=b, block_K=16)
    c = gemm(a.T.contiguous().T, b[:, :128])
    c = gemm(a, b, tl.tune([64, 128]))
    c = gemm(a, b, block_N=tl.tune([128, 256]))
    torch.testing.assert_close(c, a.float() @ b.float())
    print(c.sum().item(), c.shape[0], c.dtype, c[0, 0], c.cpu().numpy())

    x = torch.randn(100_000, device=device)
    y = torch.empty_like(x)
    add(x, x, y)
    add(x, x, y, 256)
    add(A=x, B=x, C=y, block=64)
    add(x, torch.nn.Parameter(x), y)
    s = scale(x, 2.0)
    s = scale(x, 2)
    s = scale(x, alpha=0.5, relu=True)
    assert torch.allclose(s, x * 0.5)
    z = axpy(x, y, 1.5)
    z = axpy(x.half(), y.half(), 1.5)
    lo, hi = sum_and_difference(x, y)
    both = sum_and_difference(x, y, block=256)
    print(lo + hi, both[0], z.mean())

    out = torch.zeros(100, dtype=torch.int32, device=device)
    fill(out, 7)
    fill(out, 7, "add")
    fill(out, value=7, mode="set", block=256)
    fill(out, True)

    sm = softmax(torch.randn(777, 512, device=device))
    sm = softmax(torch.randn(777, 512, device=device), 4)
    print(sm.argmax(dim=1))
    tr = transpose(torch.randn(64, 96, device=device))
    tr = transpose(torch.randn(64, 96, device=device), block=16)
    rows = tile_rows(torch.randn(128, 300, dtype=torch.float16, device=device))
    bmm = batched_gemm(torch.randn(4, 128, 64, dtype=torch.bfloat16), torch.randn(4, 64, 32, dtype=torch.bfloat16))
    print(tr.T, rows.float(), bmm.shape)


def with_typed_tensors(
    a: tl.Tensor[tl.float16, L1024, L512],
    b: tl.Tensor[tl.float16, L512, L256],
    v: tl.Tensor[tl.float32, L1024],
    i32: tl.Tensor[tl.int32, L1024],
    rows: tl.Tensor[tl.float16, L128, L256],
    m: tl.Tensor[tl.float32, L128, Literal[64]],
    bf_a: tl.Tensor[tl.bfloat16, Literal[4], L128, Literal[64]],
    bf_b: tl.Tensor[tl.bfloat16, Literal[4], Literal[64], L256],
    t: torch.Tensor,
) -> None:
    c = gemm(a, b)
    gemm(a, t)
    gemm(t, b, block_M=64)
    add(v, v, v)
    add(v, t, v)
    scale(v, 3.0)
    add(scale(v, 2.0), v, v)
    axpy(v, v, 2.0)
    fill(i32, 0)
    tile_rows(rows)
    tile_rows(tile_rows(rows))
    softmax(c)
    softmax(softmax(c))
    transpose(c)
    gemm(a, transpose(transpose(b.float())).half())
    add(*sum_and_difference(v, v), v)
    batched_gemm(bf_a, bf_b)
    transpose(m)
    gemm.lower(a, b)
    gemm.compile(a, b, block_M=64)
    print(gemm.cache_info(), gemm.signature, gemm.__name__)
    torch.testing.assert_close(c, torch.zeros_like(c))


def inspection_without_tensors() -> None:
    """`lower`, `compile` and `get_kernel_source` take the dims by name, or tensor descriptions, for tensors."""
    gemm.compile(M=1024, N=1024, K=512)
    gemm.compile(M=1024, N=1024, K=512, block_M=64)
    gemm.lower(M=1024, N=256, K=512, block_K=64)
    gemm.get_kernel_source(M=1024, N=1024, K=512)
    gemm.lower(T.Tensor((1024, 512), T.float16), T.Tensor((512, 256), T.float16))
    add.compile(N=100_000, block=256)


def generic_caller(x: tl.Tensor[tl.float16, P, Q], w: tl.Tensor[tl.float16, Q, Q]) -> tl.Tensor[tl.float32, P, Q]:
    """A caller generic over its own dims: they flow through the kernel's TypeVars."""
    return gemm(x, w)


def pipeline(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Results are torch tensors: they go back into torch code as they are."""
    h = gemm(x, w)
    h = softmax(h)
    return torch.relu(h) + 1
