"""Plain TileLang eager-mode bodies (no tltyped) for the TileLang contract tests.

They are run through TileLang's own `mutate` + `Builder` route, the route
tltyped/frontend/elaborate.py takes, so a TileLang upgrade that changes it
fails tests/unit/test_tilelang_contract.py rather than tltyped in obscure ways.
"""

import tilelang.language as T


def scale(A, factor):
    M = T.const("M")
    out = T.empty((M,), "float32")
    with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
        for i in T.Parallel(128):
            out[bx * 128 + i] = A[bx * 128 + i] * factor
    return out  # LAST LINE: scale


def fails(A):
    with T.Kernel(1, threads=128) as bx:
        T.copy(A, A, no_such_argument=1)  # FAILS HERE: fails


def l2_persisting(A, B):
    M = T.const("M")
    C = T.empty((M,), "float32")
    with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
        T.annotate_l2_hit_ratio({B: 0.8})
        for i in T.Parallel(128):
            C[bx * 128 + i] = A[bx * 128 + i] + B[bx * 128 + i]
    return C
