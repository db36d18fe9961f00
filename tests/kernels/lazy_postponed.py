"""A lazy-style kernel in a module with `from __future__ import annotations`: its prim_func's annotations are
strings, evaluated where TileLang evaluates them (the module's globals and the factory's closure)."""

from __future__ import annotations

import tltyped as tl
import tltyped.language as T


@tl.jit(out_idx=[-1])
def scale(N, dtype=T.float32):
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(N):
                Y[i] = X[i] * 3

    return main


@tl.jit(out_idx=[-1])
def scale_in_body(N, dtype=T.float32):
    """The parameters annotated in the body, naming `dtype`, which the body never reads: TileLang reads such an
    annotation again inside the body, where postponed annotations leave `dtype` unseen, so tltyped refuses it."""

    @T.prim_func
    def main(X, Y):
        X: T.Tensor((N,), dtype)
        Y: T.Tensor((N,), dtype)
        with T.Kernel(1, threads=32):
            for i in T.Parallel(N):
                Y[i] = X[i] * 3

    return main
