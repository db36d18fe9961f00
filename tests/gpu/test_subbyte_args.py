"""Sub-byte tensor arguments on the GPU: packed fp4 (two e2m1 values a byte, element 0 in the low nibble, as
TileLang's CUDA conversions and torch's float4_e2m1fn_x2 read them) unpacked by a kernel and packed by one,
checked against a torch reference built from the 16 e2m1 values."""

from __future__ import annotations

from typing import TypeVar

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.kernels.subbyte import STORAGES, unpack

M = TypeVar("M")
K = TypeVar("K", bound=tl.dyn[int])

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
"""The value of each 4-bit code: sign, 2 exponent bits, 1 mantissa bit."""



@tl.jit
def unpack_rows(A, B):
    """The in-body form over a StridedTensor (every other row of a packed storage)."""
    M, N, S = T.const("M N S")
    A: T.StridedTensor((M, N), (S, 1), T.float4_e2m1fn)
    B: T.Tensor((M, N), T.float32)
    with T.Kernel(M, threads=64) as by:
        for j in T.Parallel(N):
            B[by, j] = T.cast(A[by, j], T.float32)


@tl.jit
def to_fp4(A: tl.Tensor[tl.float32, M, K]):
    """A (float32 values that are e2m1 values) as packed fp4: a sub-byte output. One thread writes a row: a store
    of one value is a read-modify-write of its byte (TileLang's tl_fp4_packed_store), which two threads writing
    the two values of a byte would race on."""
    m, k = A.shape
    Out = T.empty((m, k), T.float4_e2m1fn)
    with T.Kernel(m, threads=32) as by:
        tx = T.get_thread_binding()
        if tx == 0:
            for j in T.serial(k):
                Out[by, j] = T.cast(A[by, j], T.float4_e2m1fn)
    return Out


def random_codes(m: int, k: int) -> torch.Tensor:
    return torch.randint(0, 16, (m, k), dtype=torch.uint8, device="cuda")


def pack(codes: torch.Tensor) -> torch.Tensor:
    """Two codes a byte along the last dim, element 2i in the low nibble of byte i."""
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def values(codes: torch.Tensor) -> torch.Tensor:
    return torch.tensor(E2M1, device=codes.device)[codes.long()]


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out - ref).norm() / ref.norm().clamp_min(1e-12))


@pytest.mark.parametrize("storage", STORAGES, ids=str)
@pytest.mark.parametrize(("m", "k"), [(1, 2), (7, 130), (64, 1024)])
def test_a_kernel_unpacks_packed_fp4(storage: torch.dtype, m: int, k: int) -> None:
    codes = random_codes(m, k)
    packed = pack(codes).view(storage)
    ref = values(codes)
    for _ in range(2):  # the second call takes the fast path
        out = torch.full((m, k), float("nan"), device="cuda")
        unpack(packed, out)
        assert not out.isnan().any()
        assert relative_error(out, ref) < 1e-6
        assert torch.equal(out.abs(), ref.abs())  # exact; -0.0 and 0.0 compare by magnitude


def test_element_zero_is_the_low_nibble() -> None:
    packed = torch.tensor([[0x71]], dtype=torch.uint8, device="cuda")  # codes 1 (0.5) then 7 (6.0)
    out = torch.full((1, 2), float("nan"), device="cuda")
    unpack(packed, out)
    assert out.tolist() == [[0.5, 6.0]]


def test_a_strided_packed_tensor_reads_every_other_row() -> None:
    codes = random_codes(16, 64)
    packed = pack(codes)[::2]  # strides (64, 1) bytes: (128, 1) fp4
    out = torch.full((8, 64), float("nan"), device="cuda")
    unpack_rows(packed, out)
    assert torch.equal(out.abs(), values(codes[::2]).abs())


@pytest.mark.parametrize(("m", "k"), [(3, 16), (33, 256)])
def test_a_kernel_returns_packed_fp4(m: int, k: int) -> None:
    codes = random_codes(m, k)
    codes[codes == 8] = 0  # -0.0 converts to either zero's code
    poison = torch.full((m, k // 2), 0xEE, dtype=torch.uint8, device="cuda")
    del poison  # its block, poisoned, is the next allocation of this size
    for _ in range(2):
        out = to_fp4(values(codes))
        assert out.dtype == getattr(torch, "float4_e2m1fn_x2", torch.int8) and out.shape == (m, k // 2)
        assert torch.equal(out.view(torch.uint8), pack(codes))
        back = torch.full((m, k), float("nan"), device="cuda")
        unpack(out, back)
        assert relative_error(back, values(codes)) < 1e-6
