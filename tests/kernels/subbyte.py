"""Kernels over sub-byte tensors held packed (fp4, two values a byte), shared by the CPU and GPU tests; and the torch
dtypes that hold one."""

from typing import TypeVar

import torch

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
K = TypeVar("K", bound=tl.dyn[int])

STORAGES = [torch.uint8, torch.int8] + ([torch.float4_e2m1fn_x2] if hasattr(torch, "float4_e2m1fn_x2") else [])


@tl.jit
def unpack(A: tl.Tensor[tl.float4_e2m1fn, M, K], B: tl.Tensor[tl.float32, M, K], block: int = 64):
    """B = A as float32: A's K is dyn, read from its packed innermost dim (twice the storage's)."""
    m, k = A.shape
    with T.Kernel(T.ceildiv(k, block), m, threads=128) as (bx, by):
        for j in T.Parallel(block):
            if bx * block + j < k:
                B[by, bx * block + j] = T.cast(A[by, bx * block + j], T.float32)
