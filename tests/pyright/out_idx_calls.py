"""Calls of `jit(out_idx=...)` kernels: called without their outputs, returning them.

Checked by pyright through the kernels' generated stubs and by mypy with the
plugin: each `# wrong: <kind>` line must get an error, no other line any, and
each `# reveal: <type>` is the type both infer (as in reveals.py).
"""

from typing import Literal

import torch

import tltyped as tl
from tests.pyright.in_body_tltyped import add_rows, halves


def calls(
    a: tl.Tensor[tl.float32, Literal[8], Literal[16]],
    v: tl.Tensor[tl.float32, Literal[100]],
    h: tl.Tensor[tl.float16, Literal[100]],
    t: torch.Tensor,
) -> None:
    reveal_type(add_rows(a, a))  # reveal: Tensor[float32, Literal[8], Literal[16]]
    reveal_type(halves(v))  # reveal: tuple[Tensor[float16, Literal[100]], Tensor[bfloat16, Literal[100]]]
    lo, hi = halves(t, block=64)
    print(add_rows(t, t).sum(), lo.float() + hi.float())
    add_rows(a)  # wrong: count
    add_rows(a, a, a)  # wrong: count
    add_rows(a, C=a)  # wrong: name
    add_rows(a, v)  # wrong: rank
    halves(h)  # wrong: dtype
    halves(v, block=32)  # wrong: scalar
