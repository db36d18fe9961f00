"""Kernels whose elaboration (and a factory whose run) first fails as `FAILURES` says: each message, in turn,
raised as a SystemError from inside the body, as CPython's ast raises "AST constructor recursion depth mismatch"
when another thread's parse interleaves with the body's (gh-106905)."""

import os

import tltyped as tl
import tltyped.language as T

FAILURES: list[str] = []


def parse() -> None:
    os.getpid()  # the process's own state: what reads it is never recorded on disk, so every process runs it
    if FAILURES:
        raise SystemError(FAILURES.pop(0))


@tl.jit
def copy(A: tl.Tensor[tl.float32, 128]):
    parse()
    B = T.empty((128,), tl.float32)
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(128):
            B[i] = A[i]
    return B


@tl.jit(out_idx=[1])
def copy_factory(N):
    parse()

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(N):
                Y[i] = X[i]

    return main
