"""Calls of signature-form kernels that are wrong: each line marked `# wrong: <kind>` must get an error.

The kinds (test_call_sets.py says which checker rules count for each):
count (too few or too many arguments), name (a keyword no parameter has, or
one given twice), scalar (a non-tensor argument of the wrong type), dtype,
rank, dim (a dim shared between arguments, or a literal dim, that disagrees),
tensor (something that is not a tensor where a tensor goes). Tensors typed
`tl.Tensor[...]` come from annotated parameters and from other kernels'
results, as in user code; plain torch tensors carry no dtype or shape a type
checker knows, so they appear only where the error is elsewhere.
"""

from typing import Literal, Union

import numpy as np
import torch

import tltyped as tl
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

L64 = Literal[64]
L128 = Literal[128]
L256 = Literal[256]
L512 = Literal[512]
L1024 = Literal[1024]


def wrong(
    a: tl.Tensor[tl.float16, L1024, L512],
    b: tl.Tensor[tl.float16, L512, L256],
    b_short: tl.Tensor[tl.float16, L256, L256],
    a32: tl.Tensor[tl.float32, L1024, L512],
    a3: tl.Tensor[tl.float16, Literal[8], L1024, L512],
    v: tl.Tensor[tl.float32, L1024],
    w: tl.Tensor[tl.float32, L512],
    h: tl.Tensor[tl.float16, L1024],
    i32: tl.Tensor[tl.int32, L1024],
    m: tl.Tensor[tl.float32, L128, L64],
    rows64: tl.Tensor[tl.float16, L64, L256],
    rows128: tl.Tensor[tl.float16, L128, L256],
    bf: tl.Tensor[tl.bfloat16, Literal[4], L128, L64],
    bf_other: tl.Tensor[tl.bfloat16, Literal[2], L64, L128],
    f16_bmm: tl.Tensor[tl.float16, Literal[4], L128, L64],
    either: Union[tl.Tensor[tl.float32, L1024], tl.Tensor[tl.float16, L1024]],
    t: torch.Tensor,
) -> None:
    # argument count
    gemm(a)  # wrong: count
    gemm()  # wrong: count
    gemm(a, b, 64, 64, 32, 3)  # wrong: count
    add(v, v)  # wrong: count
    scale(v)  # wrong: count
    transpose()  # wrong: count
    fill(i32, 1, "set", 64, 5)  # wrong: count

    # argument names
    gemm(a, b, blockM=64)  # wrong: name
    gemm(a, b, block_m=64)  # wrong: name
    scale(v, alpha=1.0, beta=2.0)  # wrong: name
    add(v, v, C=v, c=v)  # wrong: name
    gemm(a, b, A=a)  # wrong: name
    softmax(X=t, rows=4)  # wrong: name
    transpose(a32, blocks=16)  # wrong: name

    # scalar argument types
    gemm(a, b, block_M="64")  # wrong: scalar
    gemm(a, b, 64.0)  # wrong: scalar
    scale(v, "2.0")  # wrong: scalar
    scale(v, None)  # wrong: scalar
    scale(v, 2.0, relu="yes")  # wrong: scalar
    fill(i32, 1.5)  # wrong: scalar
    fill(i32, 1, "multiply")  # wrong: scalar
    softmax(t, rows_per_block=[2])  # wrong: scalar
    transpose(t, block=(32, 32))  # wrong: scalar
    transpose(m, 16.0)  # wrong: scalar
    fill(i32, value="1")  # wrong: scalar
    softmax(gemm(a, b), rows_per_block=2.5)  # wrong: scalar

    # dtype
    gemm(a32, b)  # wrong: dtype
    gemm(a, a32)  # wrong: dtype
    add(h, v, v)  # wrong: dtype
    add(v, v, i32)  # wrong: dtype
    scale(h, 2.0)  # wrong: dtype
    fill(v, 1)  # wrong: dtype
    axpy(v, h, 0.5)  # wrong: dtype
    batched_gemm(f16_bmm, bf_other)  # wrong: dtype
    gemm(gemm(a, b), b)  # wrong: dtype
    tile_rows(transpose(m))  # wrong: dtype
    scale(either, 2.0)  # wrong: dtype
    sum_and_difference(v, h)  # wrong: dtype

    # rank
    gemm(a3, b)  # wrong: rank
    gemm(a, h)  # wrong: rank
    add(a32, v, v)  # wrong: rank
    scale(m, 2.0)  # wrong: rank
    softmax(v)  # wrong: rank
    batched_gemm(a, b)  # wrong: rank
    add(*sum_and_difference(v, v), m)  # wrong: rank

    # dims shared between arguments, and literal dims
    gemm(a, b_short)  # wrong: dim
    add(v, w, v)  # wrong: dim
    add(v, v, w)  # wrong: dim
    axpy(v, w, 1.0)  # wrong: dim
    batched_gemm(bf, bf_other)  # wrong: dim
    tile_rows(rows64)  # wrong: dim
    add(v, scale(w, 2.0), v)  # wrong: dim
    gemm(b, a)  # wrong: dim
    batched_gemm(bf, bf)  # wrong: dim
    gemm(rows128, transpose(gemm(a, b)))  # wrong: dtype

    # not a tensor
    gemm(1.0, b)  # wrong: tensor
    add([1.0, 2.0], v, v)  # wrong: tensor
    scale(np.zeros(1024, dtype=np.float32), 2.0)  # wrong: tensor
    softmax(None)  # wrong: tensor

    # lower and compile: the kernel's arguments, or its dims by name
    gemm.lower(a32, b)  # wrong: dtype
    gemm.lower(A=a32, B=b)  # wrong: dtype
    gemm.compile(a)  # wrong: count
    gemm.compile(a, b, block_Q=64)  # wrong: name
    gemm.compile(a, b, block_M="64")  # wrong: scalar
    gemm.compile(M="1024", N=1024, K=512)  # wrong: scalar
