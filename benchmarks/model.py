"""A transformer block from tltyped kernels against the same block in torch, eager and under torch.compile.

The block (pre-norm, fp16):

    h   = x + Wo(attention(split_heads(Wqkv(rms_norm(x)))))
    out = h + W2(silu(W1(rms_norm(h))))

tltyped: `examples/rms_norm.py`, the tuned `examples/flash_attention.py`,
and the tuned `examples/linear.py` (examples/gemm_tuned.py's persistent GEMM
with its epilogue fused: bias, and SiLU where the MLP wants it). torch:
`F.rms_norm`, `F.linear` (cuBLAS), `F.silu`, and
`F.scaled_dot_product_attention` (its own BHSD transposes). Each block runs
eager and under `torch.compile` (inductor); the table gives the time per
forward step (CUDA events, median of the rounds) and the number of graphs
and graph breaks Dynamo made of it (`torch._dynamo.explain`): a tltyped
kernel is one op in the graph, so the compiled tltyped block is one graph.

With --train, a training step instead (forward, then backward from a
random gradient of the output): tltyped's block runs the kernels' registered
backwards (examples/rms_norm.py's kernel, examples/flash_attention_backward.py's
kernels through `flash_attention`, and examples/linear.py's, whose GEMMs
are torch's), and its parameters' gradients are checked against the torch
block's before the steps are timed, eager and under `torch.compile`.

    python3 benchmarks/model.py [--batch 8] [--seq 1024] [--train] [--profile] [--out table.md]

It needs a GPU.
"""

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from _timing import relative_error  # also puts the checkout on sys.path

from examples.flash_attention import attention  # noqa: E402
from examples.flash_attention_backward import flash_attention  # noqa: E402
from examples.linear import linear  # noqa: E402
from examples.rms_norm import rms_norm  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, dim: int, heads: int, hidden: int, tltyped_kernels: bool) -> None:
        super().__init__()
        self.heads, self.tltyped_kernels = heads, tltyped_kernels
        self.norm1, self.norm2 = (torch.nn.Parameter(torch.rand(dim, dtype=torch.float16) + 0.5) for _ in range(2))
        self.qkv = torch.nn.Linear(dim, 3 * dim, dtype=torch.float16)
        self.out = torch.nn.Linear(dim, dim, dtype=torch.float16)
        self.up = torch.nn.Linear(dim, hidden, dtype=torch.float16)
        self.down = torch.nn.Linear(hidden, dim, dtype=torch.float16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        rows = x.reshape(batch * seq, dim)
        if self.tltyped_kernels:
            qkv = linear(rms_norm(rows, self.norm1, 1e-6)[0], self.qkv.weight, self.qkv.bias)
            q, k, v = qkv.view(batch, seq, 3, self.heads, -1).unbind(2)  # strided views: no copies
            attend = flash_attention if torch.is_grad_enabled() else attention  # trainable: it keeps the LSE
            attended = attend(q, k, v).view(batch * seq, dim)
            h = rows + linear(attended, self.out.weight, self.out.bias)
            mlp = linear(linear(rms_norm(h, self.norm2, 1e-6)[0], self.up.weight, self.up.bias, True),
                         self.down.weight, self.down.bias)
        else:
            qkv = F.linear(F.rms_norm(rows, (dim,), self.norm1, 1e-6), self.qkv.weight, self.qkv.bias)
            q, k, v = qkv.view(batch, seq, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
            attended = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(batch * seq, dim)
            h = rows + F.linear(attended, self.out.weight, self.out.bias)
            mlp = F.linear(F.silu(F.linear(F.rms_norm(h, (dim,), self.norm2, 1e-6), self.up.weight, self.up.bias)),
                           self.down.weight, self.down.bias)
        return (h + mlp).view(batch, seq, dim)


def step_ms(fn, x: torch.Tensor, rounds: int, steps: int) -> float:
    """Median over rounds of the milliseconds per forward step, `steps` steps per round between CUDA events."""
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            fn(x)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / steps)
    return statistics.median(times)


def train_step(block: torch.nn.Module, dout: torch.Tensor) -> Any:
    """One training step of `block` (forward, backward from `dout`), as a function of the input."""

    def step(x: torch.Tensor) -> None:
        for p in block.parameters():
            p.grad = None
        block(x).backward(dout)

    return step


def gradient_errors(ours: torch.nn.Module, theirs: torch.nn.Module, x: torch.Tensor, dout: torch.Tensor) -> dict[str, float]:
    """Each parameter's gradient through our block against the torch block's (relative Frobenius error)."""
    train_step(ours, dout)(x)
    train_step(theirs, dout)(x)
    errors = {}
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        assert p.grad is not None and q.grad is not None, name
        errors[name] = relative_error(p.grad, q.grad)
    return errors


def print_kernels(name: str, step: Any, x: torch.Tensor, steps: int) -> None:
    """The GPU kernels of `steps` eager steps and their time, longest first: where a block's time goes."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step(x)
        torch.cuda.synchronize()
    print(f"{name} block, {steps} eager steps:")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=70))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--train", action="store_true", help="time training steps (forward and backward)")
    parser.add_argument("--profile", action="store_true", help="also print each block's kernels (torch.profiler)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("benchmarks/model.py needs a CUDA GPU")
    torch.manual_seed(0)
    ours = Block(args.dim, args.heads, 4 * args.dim, tltyped_kernels=True).cuda()
    theirs = Block(args.dim, args.heads, 4 * args.dim, tltyped_kernels=False).cuda()
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(args.batch, args.seq, args.dim, dtype=torch.float16, device="cuda")
    rows = []
    with torch.no_grad():
        error = relative_error(ours(x), theirs(x))
        print(f"tltyped block vs torch block: relative error {error:.2e}")
        assert error < 2e-2
    if args.train:
        dout = torch.randn_like(x)
        errors = gradient_errors(ours, theirs, x, dout)
        print("parameter gradients, tltyped vs torch: " + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()))
        assert max(errors.values()) < 5e-2
    for name, block in (("tltyped", ours), ("torch", theirs)):
        torch._dynamo.reset()
        step = train_step(block, dout) if args.train else block
        compiled = torch.compile(step)
        with torch.set_grad_enabled(args.train):
            explained = torch._dynamo.explain(step)(x)
            for _ in range(3):
                compiled(x)
                step(x)
            eager, inductor = step_ms(step, x, args.rounds, args.steps), step_ms(compiled, x, args.rounds, args.steps)
            if args.profile:
                print_kernels(name, step, x, args.steps)
        rows.append(f"| {name} | {eager:.3f} | {inductor:.3f} | {explained.graph_count} | "
                    f"{explained.graph_break_count} |")
    table = "\n".join([
        f"transformer block {'training step' if args.train else 'forward'}, B{args.batch} S{args.seq} D{args.dim} "
        f"H{args.heads}, fp16",
        "",
        "| block | eager ms/step | torch.compile ms/step | graphs | graph breaks |",
        "|---|---|---|---|---|",
        *rows,
    ])
    print(table)
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
