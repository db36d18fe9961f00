"""A kernel whose elaboration first fails as `FAILURES` says: each message, in turn, raised as a SystemError from
inside the body, as CPython's ast raises "AST constructor recursion depth mismatch" when another thread's parse
interleaves with the body's (gh-106905)."""

import tltyped as tl
import tltyped.language as T

FAILURES: list[str] = []


def parse() -> None:
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
