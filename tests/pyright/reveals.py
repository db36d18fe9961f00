"""The types of kernel calls: each `reveal_type` line states what type checkers must infer.

`# reveal: T` is the type as users write it, the spelling mypy with the
plugin prints (with module prefixes taken off) and pyright's hover shows;
pyright's reveal_type prints the alias's expansion, read back by
checkers.shown_type (see tltyped/types/tensor.py).
"""

from typing import Literal, TypeVar

import torch

import tltyped as tl
from tests.pyright.kernels import batched_gemm, gemm, softmax, sum_and_difference, tile_rows, transpose

P = TypeVar("P", bound=int)
Q = TypeVar("Q", bound=int)


def reveals(
    a: tl.Tensor[tl.float16, Literal[1024], Literal[512]],
    b: tl.Tensor[tl.float16, Literal[512], Literal[256]],
    v: tl.Tensor[tl.float32, Literal[100]],
    rows: tl.Tensor[tl.float16, Literal[128], Literal[300]],
    bf_a: tl.Tensor[tl.bfloat16, Literal[4], Literal[128], Literal[64]],
    bf_b: tl.Tensor[tl.bfloat16, Literal[4], Literal[64], Literal[32]],
    t: torch.Tensor,
) -> None:
    reveal_type(gemm(a, b))  # reveal: Tensor[float32, Literal[1024], Literal[256]]
    reveal_type(gemm(a, b, block_M=64))  # reveal: Tensor[float32, Literal[1024], Literal[256]]
    reveal_type(gemm(t, b))  # reveal: Tensor[float32, Any, Literal[256]]
    reveal_type(gemm(t, t))  # reveal: Tensor[float32, Any, Any]
    reveal_type(softmax(gemm(a, b)))  # reveal: Tensor[float32, Literal[1024], Literal[256]]
    reveal_type(transpose(gemm(a, b)))  # reveal: Tensor[float32, Literal[256], Literal[1024]]
    reveal_type(tile_rows(rows))  # reveal: Tensor[float16, Literal[128], Literal[300]]
    reveal_type(batched_gemm(bf_a, bf_b))  # reveal: Tensor[float32, Literal[4], Literal[128], Literal[32]]
    reveal_type(sum_and_difference(v, v))  # reveal: tuple[Tensor[float32, Literal[100]], Tensor[float32, Literal[100]]]


def generic(x: tl.Tensor[tl.float16, P, Q], w: tl.Tensor[tl.float16, Q, Q]) -> None:  # hover: x: Tensor[float16, P@generic, Q@generic]
    reveal_type(gemm(x, w))  # reveal: Tensor[float32, P@generic, Q@generic]
    y = gemm(x, w)  # hover: y: Tensor[float32, P@generic, Q@generic]
    z = transpose(y)
    print(z)  # hover: z: Tensor[float32, Q@generic, P@generic]
