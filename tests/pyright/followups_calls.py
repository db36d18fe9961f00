"""Calls of the kernel objects of factories returning from branches, and of autotuned kernels (followups_kernels.py).

Checked by pyright through the factories' generated stubs and by mypy with the plugin alike: each
`# wrong: <kind>` line must get an error, no other line any, and each `# reveal: <type>` is the type both infer.
"""

from typing import Literal

import torch

import tltyped as tl
from tests.pyright.followups_kernels import decode, gemm, padded, repeated, scaled, tuned_copy


def calls(
    v: tl.Tensor[tl.float32, Literal[16]],
    h: tl.Tensor[tl.float16, Literal[16]],
    a: tl.Tensor[tl.float16, Literal[8], Literal[32]],
    t: torch.Tensor,
) -> None:
    reveal_type(decode(16, 2)(v))  # reveal: Tensor[float32, Any]
    reveal_type(gemm(8, 8, 32, "rs")(a, t))  # reveal: Tensor[float32, Any, Any]
    reveal_type(padded(16, True)(v, v))  # reveal: Any
    padded(16, False)(v)
    decode(16, 1)(t)
    decode(16, 2)(v, v)  # wrong: count
    decode(16, 2)(h)  # wrong: dtype
    gemm(8, 8, 32)(a)  # wrong: count
    gemm(8, 8, 32)(v, t)  # wrong: rank
    reveal_type(scaled(v))  # reveal: Tensor[float32, Literal[16]]
    reveal_type(tuned_copy(16)(v))  # reveal: Tensor[float32, Any]
    scaled(v, block=128)
    scaled(v, 64, 128, 0.5)
    scaled.compile(v)
    tuned_copy(16, 64)(t)
    scaled()  # wrong: count
    scaled(v, block="64")  # wrong: scalar
    tuned_copy()  # wrong: count
    reveal_type(repeated(v, 3, "mul"))  # reveal: Tensor[float32, Literal[16]]
    repeated(v, times=3, mode="add")
    repeated(v, times="3")  # wrong: scalar
    repeated(v, mode="pow")  # wrong: scalar
