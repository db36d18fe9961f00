"""A GEMM for Hopper, scheduled by hand as CUTLASS's persistent cooperative kernel is, its schedule tuned on first use.

- A fixed number of CTAs (about one per SM) walk the 128x256 tiles of C,
  `ctas` apart, in groups of `group` tile rows, so that the tiles in flight
  at once share their rows of A and columns of B in L2.
- In each CTA a producer warpgroup loads 128x64 blocks of A and 64x256 blocks
  of B with TMA into a ring of three stages (mbarriers: full, empty). It runs
  on into the next tile's blocks while the consumers store the last one.
- Two consumer warpgroups (64 rows of the tile each) issue one asynchronous
  WGMMA per block, keep it in flight while waiting for the next block, and
  release a stage once the WGMMA that read it is done.
- The tile goes out through shared memory and a TMA store, which the next
  tile's main loop overlaps.

The stage and parity of a block come from its position in the CTA's whole
sequence of blocks, so the ring runs on across tiles. K is dyn (one kernel
per M and N); TMA needs rows of 16-byte multiples, so K and N are multiples
of 8. The schedule (CTAs, group) is tuned on first use.

The kernel is one macro, `persistent_gemm`, over the operands' dtypes, B's
layout, the tile and an optional epilogue (scale, bias, SiLU): `matmul` calls
it in fp16; examples/gemm_fp8.py calls it in fp8 with B transposed and
scaled; examples/linear.py's `linear` with B transposed, a bias and SiLU.
"""

from __future__ import annotations

from typing import TypeVar

import torch

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
N = TypeVar("N")
K = TypeVar("K", bound=tl.dyn[int])

BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64
STAGES = 3  # 3 x 48 KiB of A and B blocks, and 64 KiB for the C tile
CONFIGS = [(128, 16), (128, 8), (132, 16), (132, 8)]  # persistent CTAs (H100/H200: 132 SMs), group of tile rows


def tile_of(index: int, tiles_m: int, tiles_n: int, group: int) -> tuple[int, int]:
    """The (row, column) of the index-th tile, in groups of `group` tile rows taken column by column.

    Plain Python over the kernel's expressions, called while the body is built (by producer and consumers alike).
    """
    width = group * tiles_n
    first = index // width * group
    rows = T.min(tiles_m - first, group)
    return first + index % width % rows, index % width // rows


@T.macro
def persistent_gemm(
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    schedule: tuple[int, int],
    tile: tuple[int, int, int],
    transpose_B: bool = False,
    scales: tuple[torch.Tensor, torch.Tensor] | None = None,
    bias: torch.Tensor | None = None,
    silu: bool = False,
) -> None:
    """The kernel: C = A @ B (B [K, N]), or A @ B^T (B [N, K]) with `transpose_B`, accumulated in fp32 in the
    operands' dtype; then, on the accumulator in registers, times scales[0][0] * scales[1][0] if given, plus
    bias [N] if given, and through SiLU if `silu` (nn.Linear's epilogue, benchmarks/model.py).

    `schedule` is (CTAs, group), `tile` (block_N, block_K, stages): a block of A is BLOCK_M x block_K, and C's tile
    BLOCK_M x block_N.
    """
    ctas, group = schedule
    block_N, block_K, stages = tile
    m, n = C.shape
    tiles_m, tiles_n = T.ceildiv(m, BLOCK_M), T.ceildiv(n, block_N)
    blocks = T.ceildiv(A.shape[1], block_K)  # k-blocks per tile
    with T.Kernel(ctas, threads=384) as cta:
        A_shared = T.alloc_shared((stages, BLOCK_M, block_K), A.dtype)
        B_shared = T.alloc_shared((stages, block_N, block_K) if transpose_B else (stages, block_K, block_N), B.dtype)
        C_local = T.alloc_fragment((BLOCK_M, block_N), tl.float32)
        C_shared = T.alloc_shared((BLOCK_M, block_N), C.dtype)
        full = T.alloc_barrier(arrive_count=[128] * stages)  # the producer's threads
        empty = T.alloc_barrier(arrive_count=[256] * stages)  # the consumers' threads
        tx = T.get_thread_binding()
        # every CTA takes the same number of rounds and skips the tiles past the end: a loop whose extent depends
        # on the CTA (ceildiv(tiles - cta, ctas)) loses its guard in TileLang's lowering when it is at most 1
        rounds = T.ceildiv(tiles_m * tiles_n, ctas)
        if tx >= 256:  # the producer
            T.set_max_nreg(40, 0)
            for r in T.serial(rounds):
                if cta + r * ctas < tiles_m * tiles_n:
                    tm, tn = tile_of(cta + r * ctas, tiles_m, tiles_n, group)
                    for kb in T.serial(blocks):
                        i = r * blocks + kb  # the block's place in this CTA's sequence
                        T.barrier_wait(empty[i % stages], ((i // stages) & 1) ^ 1)
                        T.tma_copy(A[tm * BLOCK_M : (tm + 1) * BLOCK_M, kb * block_K : (kb + 1) * block_K],
                                   A_shared[i % stages, :, :], barrier=full[i % stages])
                        if transpose_B:
                            T.tma_copy(B[tn * block_N : (tn + 1) * block_N, kb * block_K : (kb + 1) * block_K],
                                       B_shared[i % stages, :, :], barrier=full[i % stages])
                        else:
                            T.tma_copy(B[kb * block_K : (kb + 1) * block_K, tn * block_N : (tn + 1) * block_N],
                                       B_shared[i % stages, :, :], barrier=full[i % stages])
                        T.barrier_arrive(full[i % stages])
        else:  # the consumers
            T.set_max_nreg(232, 1)
            for r in T.serial(rounds):
                if cta + r * ctas < tiles_m * tiles_n:
                    tm, tn = tile_of(cta + r * ctas, tiles_m, tiles_n, group)
                    T.clear(C_local)
                    for kb in T.serial(blocks):
                        i = r * blocks + kb
                        T.barrier_wait(full[i % stages], (i // stages) & 1)
                        T.wgmma_gemm(A_shared[i % stages, :, :], B_shared[i % stages, :, :], C_local,
                                     transpose_B=transpose_B, policy=T.GemmWarpPolicy.FullRow)
                        T.wait_wgmma(1)  # the previous block's WGMMA is done: its stage is free
                        if kb > 0:
                            T.barrier_arrive(empty[(i + stages - 1) % stages])
                    T.wait_wgmma(0)
                    T.barrier_arrive(empty[(r * blocks + blocks - 1) % stages])
                    if scales is not None:
                        for i, j in T.Parallel(BLOCK_M, block_N):
                            C_local[i, j] *= scales[0][0] * scales[1][0]
                    if bias is not None:
                        for i, j in T.Parallel(BLOCK_M, block_N):
                            C_local[i, j] += T.if_then_else(tn * block_N + j < n, bias[tn * block_N + j], 0)
                    if silu:
                        for i, j in T.Parallel(BLOCK_M, block_N):
                            C_local[i, j] = C_local[i, j] / (1.0 + T.exp(-C_local[i, j]))
                    T.tma_store_wait(0)  # the previous tile's store has read C_shared
                    T.sync_threads(1, 256)
                    T.copy(C_local, C_shared)
                    T.fence_proxy_async()
                    T.sync_threads(1, 256)
                    T.tma_copy(C_shared, C[tm * BLOCK_M : (tm + 1) * BLOCK_M, tn * block_N : (tn + 1) * block_N])
            T.tma_store_wait(0)


@tl.jit
def matmul(
    A: tl.Tensor[tl.float16, M, K],
    B: tl.Tensor[tl.float16, K, N],
    schedule: tuple[int, int] = tl.tune(CONFIGS),
) -> tl.Tensor[tl.float16, M, N]:
    """C = A @ B in fp16, accumulated in fp32."""
    # TMA moves rows of 16-byte multiples: K and N are multiples of 8 (checked by each call, before the launch)
    assert A.shape[1] // 8 * 8 == A.shape[1]
    assert B.shape[1] // 8 * 8 == B.shape[1]
    (m, _), (_, n) = A.shape, B.shape
    C = T.empty((m, n), tl.float16)
    persistent_gemm(A, B, C, schedule, (BLOCK_N, BLOCK_K, STAGES))
    return C
