"""An fp8 GEMM for Hopper with per-tensor scales, as `torch._scaled_mm` computes it, its schedule tuned on first use.

C = (A @ B^T) * scale_a * scale_b in bf16, from A [M, K] and B [N, K] in
float8_e4m3fn (both K-major: B is what `torch._scaled_mm` takes transposed,
`torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16)`),
scale_a and scale_b fp32 tensors of one element (read by the kernel, so a
scale computed on the GPU costs no synchronisation; reshape a 0-dim scale
with `.reshape(1)`), accumulated in fp32.

The kernel is examples/gemm_tuned.py's persistent schedule (`persistent_gemm`:
a TMA producer warpgroup, a ring of stages running on across tiles, two
consumer warpgroups on asynchronous WGMMAs, a TMA store the next tile
overlaps), with:
- blocks of 128 fp8 along K: rows of 128 bytes, as the fp16 kernel's blocks
  of 64, so a stage holds the same bytes (and 128x256x128 is the same 48 KiB
  of shared memory per stage) for twice the multiply-adds: fp8 WGMMA reads
  both operands K-major from shared memory, which B [N, K] is;
- the scales applied to the fp32 accumulators once per tile, before the
  store in bf16.
The accumulation is WGMMA's own across the whole of K (what
`torch._scaled_mm(..., use_fast_accum=True)` does): promoting partial sums
into a second fp32 tile every few blocks, as `use_fast_accum=False` does,
would need a second 128x256 fp32 tile in the consumers' registers, which
hold one. TMA needs rows of 16-byte multiples: K is a multiple of 16 and N
of 8. K is dyn (one kernel per M and N). The schedule (CTAs, group of tile
rows, block_N) is tuned on first use; a 128x128 tile leaves room for five
stages. CUTLASS's ping-pong schedule (each consumer warpgroup a whole tile of
its own, its epilogue under the other's main loop) measured 4% slower on an
H100 at 4096^3 and 8192^3 (benchmarks/RESULTS.md, 2026-12-07). Its 128x128
or 64x256 tiles move more bytes per flop, which under the power cap likely
costs more than hiding one store per 32 k-blocks or more saves (not measured
apart).
"""

from __future__ import annotations

from typing import Literal, TypeVar

import tltyped as tl
import tltyped.language as T
from examples.gemm_tuned import persistent_gemm

M = TypeVar("M")
N = TypeVar("N")
K = TypeVar("K", bound=tl.dyn[int])

BLOCK_K = 128  # 128 bytes of fp8
STAGES = {256: 3, 128: 5}  # by block_N: 48 KiB a stage and a 64 KiB C tile, or 32 KiB and 32 KiB
# persistent CTAs (H100/H200: 132 SMs), group of tile rows, block_N
CONFIGS = [(132, 8, 256), (132, 16, 256), (128, 8, 256), (128, 16, 256), (132, 8, 128), (132, 16, 128)]


@tl.jit
def scaled_mm(
    A: tl.Tensor[tl.float8_e4m3, M, K],
    B: tl.Tensor[tl.float8_e4m3, N, K],
    scale_a: tl.Tensor[tl.float32, Literal[1]],
    scale_b: tl.Tensor[tl.float32, Literal[1]],
    schedule: tuple[int, int, int] = tl.tune(CONFIGS),
) -> tl.Tensor[tl.bfloat16, M, N]:
    """C = (A @ B^T) * scale_a * scale_b in bf16, from fp8 e4m3 A [M, K] and B [N, K], accumulated in fp32."""
    # TMA moves rows of 16-byte multiples: K a multiple of 16 (A, B), N of 8 (C), checked by each call before the launch
    assert A.shape[1] // 16 * 16 == A.shape[1]
    assert B.shape[0] // 8 * 8 == B.shape[0]
    ctas, group, block_N = schedule
    (m, _), (n, _) = A.shape, B.shape
    C = T.empty((m, n), tl.bfloat16)
    persistent_gemm(A, B, C, (ctas, group), (block_N, BLOCK_K, STAGES[block_N]), transpose_B=True,
                    scales=(scale_a, scale_b))
    return C
