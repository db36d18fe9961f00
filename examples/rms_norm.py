"""RMSNorm, forward and backward, as a trainable op: `Y = X * rstd * W`, `rstd = 1 / sqrt(mean(X^2) + eps)`.

Rows are dyn and the row length is const (it sizes the on-chip tile); the
arithmetic is fp32 whatever the storage dtype. The forward returns the
per-row `rstd` too, so the backward does not recompute it. The backward
returns dX and each block's partial sum of dW (fp32), which `backward`
adds up: a reduction over all rows in one kernel would need atomics or a
second pass.

`rms_norm.register_autograd(...)` makes the pair trainable: under
`torch.compile` and `torch.export` a call is one op, and autograd runs
`backward`, which calls the backward kernel.
"""

from typing import Any, TypeVar

import torch

import tltyped as tl
import tltyped.language as T

DT = TypeVar("DT")
M = TypeVar("M", bound=tl.dyn[int])
N = TypeVar("N")


@tl.jit(op="tltyped_examples::rms_norm")
def rms_norm(
    X: tl.Tensor[DT, M, N], W: tl.Tensor[DT, N], eps: tl.dyn[float] = 1e-6, rows: int = 1, threads: int = 256
) -> tuple[tl.Tensor[DT, M, N], tl.Tensor[tl.float32, M]]:
    m, n = X.shape
    Y = T.empty((m, n), X.dtype)
    Rstd = T.empty((m,), tl.float32)
    with T.Kernel(T.ceildiv(m, rows), threads=threads) as bx:
        x = T.alloc_fragment((rows, n), tl.float32)
        squares = T.alloc_fragment((rows, n), tl.float32)
        rstd = T.alloc_fragment((rows,), tl.float32)
        T.copy(X[bx * rows, 0], x)
        for i, j in T.Parallel(rows, n):
            squares[i, j] = x[i, j] * x[i, j]
        T.reduce_sum(squares, rstd, dim=1)
        for i in T.Parallel(rows):
            rstd[i] = T.rsqrt(rstd[i] / n + eps)
        for i, j in T.Parallel(rows, n):
            x[i, j] = x[i, j] * rstd[i] * W[j]
        T.copy(x, Y[bx * rows, 0])
        T.copy(rstd, Rstd[bx * rows])
    return Y, Rstd


@tl.jit(op="tltyped_examples::rms_norm_backward")
def rms_norm_backward(
    dY: tl.Tensor[DT, M, N], X: tl.Tensor[DT, M, N], W: tl.Tensor[DT, N], Rstd: tl.Tensor[tl.float32, M], rows: int = 4
) -> tuple[tl.Tensor[DT, M, N], tl.Tensor[tl.float32, Any, N]]:
    """dX = rstd * (dY W - xhat * mean(dY W xhat)), with xhat = X rstd; dW's partial sums, one row per block."""
    m, n = X.shape
    dX = T.empty((m, n), X.dtype)
    dW_partial = T.empty((T.ceildiv(m, rows), n), tl.float32)
    with T.Kernel(T.ceildiv(m, rows), threads=128) as bx:
        xhat = T.alloc_fragment((rows, n), tl.float32)
        dy = T.alloc_fragment((rows, n), tl.float32)
        product = T.alloc_fragment((rows, n), tl.float32)
        rstd = T.alloc_fragment((rows,), tl.float32)
        dot = T.alloc_fragment((rows,), tl.float32)
        dw = T.alloc_fragment((n,), tl.float32)
        T.copy(X[bx * rows, 0], xhat)
        T.copy(dY[bx * rows, 0], dy)
        T.copy(Rstd[bx * rows], rstd)
        for i, j in T.Parallel(rows, n):
            xhat[i, j] = T.if_then_else(bx * rows + i < m, xhat[i, j] * rstd[i], 0.0)  # rows past M count nothing
            product[i, j] = xhat[i, j] * dy[i, j]
        T.reduce_sum(product, dw, dim=0)
        for i, j in T.Parallel(rows, n):
            dy[i, j] = dy[i, j] * W[j]
            product[i, j] = dy[i, j] * xhat[i, j]
        T.reduce_sum(product, dot, dim=1)
        for i, j in T.Parallel(rows, n):
            dy[i, j] = rstd[i] * (dy[i, j] - xhat[i, j] * dot[i] / n)
        T.copy(dy, dX[bx * rows, 0])
        T.copy(dw, dW_partial[bx, 0])
    return dX, dW_partial


def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, torch.Tensor]) -> None:
    X, W, _eps = inputs
    ctx.save_for_backward(X, W, output[1])


def backward(ctx: Any, dY: torch.Tensor, _dRstd: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, None]:
    X, W, Rstd = ctx.saved_tensors
    dX, dW_partial = rms_norm_backward(dY.contiguous(), X, W, Rstd)
    return dX, dW_partial.sum(0).to(W.dtype), None


rms_norm.register_autograd(backward, setup_context=setup_context)


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.double() - want.double()).norm() / want.double().norm())


if __name__ == "__main__":
    x = torch.randn(1000, 1024, device="cuda", requires_grad=True)
    w = torch.randn(1024, device="cuda", requires_grad=True)
    y, _ = rms_norm(x, w)
    dx, dw = torch.autograd.grad(y.square().sum(), (x, w))
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    y64 = torch.nn.functional.rms_norm(x64, (1024,), w64, eps=1e-6)
    dx64, dw64 = torch.autograd.grad(y64.square().sum(), (x64, w64))
    for name, got, want in (("y", y, y64), ("dX", dx, dx64), ("dW", dw, dw64)):
        error = relative_error(got, want)
        print(f"{name}: relative error {error:.2e}")
        assert error < 1e-5, name
