"""Wrong calls of in-body kernels: each `# wrong: <kind>` line must get an error.

pyright reads an in-body kernel's parameters as unannotated, so it checks
these calls only through the kernels' generated stubs (a stubs folder that
`python -m tltyped.stubs` writes), the compiled kernel's too; mypy with the
plugin reads the kernels' bodies themselves.
"""

from typing import Literal

import torch

import tltyped as tl
from tests.pyright.in_body_tltyped import convert, project, rows, scale_rows


def wrong(
    a: tl.Tensor[tl.float32, Literal[8], Literal[16]],
    h: tl.Tensor[tl.float16, Literal[8], Literal[16]],
    v: tl.Tensor[tl.float16, Literal[100]],
    w: tl.Tensor[tl.float32, Literal[99]],
    t: torch.Tensor,
    narrow: tl.Tensor[tl.bfloat16, Literal[4], Literal[32]],
    half: tl.Tensor[tl.float16, Literal[4], Literal[64]],
) -> None:
    scale_rows(a, a, 2.0)  # wrong: count
    scale_rows(a, a, 2.0, 4, block=64)  # wrong: name
    scale_rows(a, a, "2.0", 4)  # wrong: scalar
    scale_rows(a, a, 2.0, 4.5)  # wrong: scalar
    scale_rows(h, a, 2.0, 4)  # wrong: dtype
    convert(v, w)  # wrong: dim
    convert(a, t)  # wrong: rank
    rows(t, w)  # wrong: dtype
    project(narrow, narrow)  # wrong: dim
    project(half, half)  # wrong: dtype
    compiled = scale_rows.compile(a, a, 2.0, 4, block_M=128)  # its kernel takes the runtime arguments alone
    compiled(a, a, 2.0)  # wrong: count
    compiled(a, a, 2.0, 4, 128)  # wrong: count
    compiled(a, a, "2.0", 4)  # wrong: scalar
    compiled(a, a, 2.0, 4, block_M=128)  # wrong: name
