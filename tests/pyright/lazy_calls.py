"""Calls of lazy-style kernel objects (lazy_kernels.py): the prim_func's parameters but the out_idx ones.

Checked by pyright through the factories' generated stubs and by mypy with the
plugin: each `# wrong: <kind>` line must get an error, no other line any, and
each `# reveal: <type>` is the type both infer (as in reveals.py).
"""

from typing import Literal

import torch

import tltyped as tl
import tltyped.language as T
from tests.pyright.lazy_kernels import doubled, flat, matmul, rows, split


def calls(
    a: tl.Tensor[tl.float16, Literal[8], Literal[64]],
    b: tl.Tensor[tl.float16, Literal[8], Literal[32]],
    v: tl.Tensor[tl.float32, Literal[100]],
    h: tl.Tensor[tl.float16, Literal[100]],
    t: torch.Tensor,
) -> None:
    kernel = matmul(T.dynamic("m"), 1024, 1024, 128, 128, 32)
    reveal_type(kernel(a, t))  # reveal: Tensor[Any, Any, Any]
    reveal_type(rows(8)(a, 2.0))  # reveal: Tensor[Any, Any]
    reveal_type(split(100)(v))  # reveal: tuple[Tensor[float32, Any], Tensor[float16, Any]]
    reveal_type(flat((4, 4))(t))  # reveal: None
    lo, hi = split(100, block=64)(t)
    print(kernel(t, t).sum(), lo.float() + hi.float(), rows(8)(t, alpha=0.5))
    flat((2, 3, 4))(a)
    split(100).register_autograd(lambda ctx, *grads: grads)  # a kernel object takes a backward, as a jit function
    reveal_type(split(100).compile()(t))  # reveal: tuple[Tensor[float32, Any], Tensor[float16, Any]]
    kernel(a)  # wrong: count
    kernel(a, t, t)  # wrong: count
    kernel(a, C=t)  # wrong: name
    kernel(v, t)  # wrong: rank
    kernel(a, 1.0)  # wrong: tensor
    rows(8)(a, "2.0")  # wrong: scalar
    rows(8)(v, 2.0)  # wrong: rank
    rows(8)(b, 2.0)  # wrong: dim
    rows(8)(torch.empty(8, 64).half(), 2.0, a)  # wrong: count
    split(100)(h)  # wrong: dtype
    split(100)(v, v)  # wrong: count
    split(100).compile()(h)  # wrong: dtype
    kernel.compile()(a)  # wrong: count
    reveal_type(doubled(8)(t))  # reveal: Tensor[float16, Any, Literal[4]]
    doubled(8)(v)  # wrong: rank
    doubled(8)(a, a)  # wrong: count
    print(split.compile(100)(v), matmul.get_tir(8, 8, 8, 8, 8, 8), split.par_compile([(100,), {"N": 200}]))
    print(split.cache_info(), doubled.par_compile([(8,)], ignore_error=True), doubled.lower(8).cuda_source)
    print(kernel.get_kernel_source(), kernel.get_profiler(), kernel.signature, kernel.lower().cuda_source)
    print(kernel.compile().get_kernel_source(), kernel.cache_info())
