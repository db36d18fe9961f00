"""Kernels inside PyTorch programs on the GPU: inductor, CUDA graphs, torch.export, opcheck, training.

No `from __future__ import annotations`, as in user code that torch traces.
"""

import pytest
import torch
import torch.nn.functional as F

from examples.rms_norm import rms_norm, rms_norm_backward
from tests.gpu.conftest import poison_allocator, rel_err
from tests.kernels import torch_ops as kernels
from tests.kernels.torch_ops import accumulated, interleaved, scaled_plus_one


def halves(a):
    first, half = kernels.split(a)
    return first * 3, half.float() - 1


LAZY = kernels.lazy_double()  # a kernel object is made outside the traced code, as TileLang's examples make it


def doubled(x):
    return LAZY(x) + 0.5


def normed(x, w):
    y, rstd = rms_norm(x, w, 1e-6)
    return y * 2, rstd


CASES = {
    "signature form, dyn dim": (scaled_plus_one, lambda n: (torch.randn(n, device="cuda"),)),
    "in-body, derived dim": (interleaved, lambda n: (torch.randn(n, device="cuda"), torch.randn(n, device="cuda"))),
    "out-parameter": (accumulated, lambda n: (torch.randn(n, device="cuda"), torch.randn(n, device="cuda"))),
    "two outputs, two dtypes": (halves, lambda n: (torch.randn(n, 8, device="cuda"),)),
    "lazy style": (doubled, lambda n: (torch.randn(n, device="cuda"),)),
    "rms_norm": (normed, lambda n: (torch.randn(n, 256, device="cuda"), torch.randn(256, device="cuda"))),
}


def as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


def eager_result(fn, args):
    return as_tuple(fn(*(a.clone() for a in args)))


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
@pytest.mark.parametrize("case", list(CASES))
def test_inductor_fullgraph_matches_eager(case: str, mode) -> None:
    fn, make = CASES[case]
    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, mode=mode, dynamic=False)
    for n in (300, 300, 300):  # reduce-overhead records a CUDA graph on a later call and replays it after
        args = make(n)
        expected = eager_result(fn, args)
        poison_allocator(*((e.shape, e.dtype) for e in expected))
        got = as_tuple(compiled(*(a.clone() for a in args)))
        for g, e in zip(got, expected, strict=True):
            assert g.shape == e.shape and g.dtype == e.dtype
            assert rel_err(g, e) < 1e-6, case


@pytest.mark.parametrize("case", list(CASES))
def test_an_exported_program_runs(case: str) -> None:
    fn, make = CASES[case]

    class Module(torch.nn.Module):
        def forward(self, *args):
            return fn(*args)

    exported = torch.export.export(Module(), make(64))
    args = make(64)
    expected = eager_result(fn, args)
    got = as_tuple(exported.module()(*(a.clone() for a in args)))
    for g, e in zip(got, expected, strict=True):
        assert rel_err(g, e) < 1e-6, case


def test_opcheck_passes_on_each_op() -> None:
    x, w = torch.randn(40, 256, device="cuda"), torch.randn(256, device="cuda")
    torch.compile(normed, fullgraph=True, backend="eager")(x, w)  # defines the ops of these const values
    _, rstd = rms_norm(x, w, 1e-6)
    dy = torch.randn_like(x)
    rms_norm_backward(dy, x, w, rstd)
    with torch.no_grad():
        torch.compile(lambda *a: rms_norm_backward(*a), fullgraph=True, backend="eager")(dy, x, w, rstd)
    a, b = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    for fn, args in ((scaled_plus_one, (a,)), (interleaved, (a, b)), (accumulated, (a, b.clone())), (halves, (x,))):
        torch.compile(fn, fullgraph=True, backend="eager")(*args)
    ops = [
        (torch.ops.tltyped_examples.rms_norm.default, (x, w, 1e-6)),
        (torch.ops.tltyped_examples.rms_norm_backward.default, (dy, x, w, rstd)),
        (torch.ops.tltyped_tests.interleave.default, (a, b)),
    ]
    for dispatcher, args in ((kernels.scale, (a, 2.0)), (kernels.add_into, (a, b.clone())), (kernels.split, (x,))):
        (op,) = dispatcher._dispatcher.torch_ops.values()
        ops.append((op.overload, args))
    for op, args in ops:
        torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


class TinyModel(torch.nn.Module):
    """Linear -> RMSNorm -> Linear, the norm tltyped's or torch's."""

    def __init__(self, tltyped_norm: bool) -> None:
        super().__init__()
        self.up = torch.nn.Linear(64, 256)
        self.norm_weight = torch.nn.Parameter(torch.rand(256) + 0.5)
        self.down = torch.nn.Linear(256, 8)
        self.tltyped_norm = tltyped_norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(x)
        if self.tltyped_norm:
            h, _ = rms_norm(h, self.norm_weight, 1e-6)
        else:
            h = F.rms_norm(h, (256,), self.norm_weight, eps=1e-6)
        return self.down(torch.relu(h))


@pytest.mark.parametrize("compiled", [False, True])
def test_a_tiny_model_trains_with_tltyped_forward_and_backward_kernels(compiled: bool) -> None:
    ours, theirs = TinyModel(tltyped_norm=True).cuda(), TinyModel(tltyped_norm=False).cuda()
    theirs.load_state_dict(ours.state_dict())
    step_ours = torch.compile(ours, fullgraph=True) if compiled else ours
    optimisers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ours, theirs)]
    for _ in range(5):
        x, target = torch.randn(100, 64, device="cuda"), torch.randn(100, 8, device="cuda")
        for model, step, opt in zip((ours, theirs), (step_ours, theirs), optimisers):
            opt.zero_grad()
            F.mse_loss(step(x), target).backward()
        for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
            assert rel_err(p.grad, q.grad) < 1e-4, name
        for opt in optimisers:
            opt.step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert rel_err(p, q) < 1e-4


def test_a_kernel_without_a_backward_runs_and_refuses_the_gradient_through_it() -> None:
    import tltyped as tl

    a = torch.randn(100, device="cuda", requires_grad=True)
    kernels.scale(a.detach(), 2.0)  # compiled and cached: a call autograd records leaves the fast path for the op
    out = kernels.scale(a, 2.0)
    assert out.grad_fn is not None and rel_err(out, a.detach() * 2) == 0
    with pytest.raises(tl.AutogradError, match="scale: backward through the kernel, which has no backward"):
        out.sum().backward()
    with pytest.raises(tl.AutogradError, match="argument 'A' requires grad, and the kernel writes its argument 'Out'"):
        kernels.add_into(a, torch.randn(100, device="cuda"))
    with torch.no_grad():
        assert rel_err(kernels.scale(a, 2.0), a * 2) == 0


def test_kernels_of_one_factory_are_recorded_each_with_its_own_backward() -> None:
    one, two = kernels.offset_kernel(1.0), kernels.offset_kernel(2.0)
    one.register_autograd(lambda ctx, grad: grad)
    two.register_autograd(lambda ctx, grad: 2 * grad)
    a = torch.randn(1000, device="cuda", requires_grad=True)
    for _ in range(3):  # the first call of each defines its op; later ones find its recording by the call's key
        a.grad = None
        outs = one(a), two(a), two(a, block=64)
        sum(out.sum() for out in outs).backward()
        assert rel_err(a.grad, torch.full_like(a, 5.0)) == 0
        assert all(rel_err(out, a.detach() + v) < 1e-6 for out, v in zip(outs, (1.0, 2.0, 2.0)))



def test_torch_func_transforms_run_the_kernels_and_their_registered_backward() -> None:
    """`torch.func` wraps its inputs (no storage of their own): the kernels run as their ops on the tensors torch
    unwraps (under vmap once per sample, torch's fallback), and gradients are the registered backward's (itself a
    kernel); forward mode is refused, where torch would give no tangent."""
    import tltyped as tl

    x, w = torch.randn(64, 256, device="cuda"), torch.rand(256, device="cuda") + 0.5
    x64, w64 = x.double().requires_grad_(), w.double().requires_grad_()
    dx, dw = torch.func.grad(lambda x, w: rms_norm(x, w)[0].square().sum(), argnums=(0, 1))(x, w)
    want = torch.autograd.grad(F.rms_norm(x64, (256,), w64, eps=1e-6).square().sum(), (x64, w64))
    assert rel_err(dx, want[0]) < 1e-5 and rel_err(dw, want[1]) < 1e-5
    y = torch.func.vmap(lambda rows: rms_norm(rows, w)[0])(x.view(8, 8, 256))
    assert rel_err(y.view(64, 256), F.rms_norm(x64, (256,), w64, eps=1e-6)) < 1e-5
    jacobian = torch.func.jacrev(lambda rows: rms_norm(rows, w)[0])(x[:2])
    want_jacobian = torch.func.jacrev(lambda rows: F.rms_norm(rows, (256,), w.double(), eps=1e-6))(x[:2].double())
    assert jacobian.shape == (2, 256, 2, 256) and rel_err(jacobian, want_jacobian) < 1e-5
    with pytest.raises(tl.AutogradError, match="argument 'X' carries a tangent"):
        torch.func.jvp(lambda rows: rms_norm(rows, w)[0], (x,), (x,))


def test_torch_jit_trace_records_the_kernel_and_its_trace_runs_it_on_new_inputs():
    """A launch missing from the trace would leave its outputs baked into the graph as constants: the traced
    function would return the first inputs' result for any other."""
    traced = torch.jit.trace(scaled_plus_one, (torch.randn(4096, device="cuda"),))
    assert any(node.kind().startswith("tltyped::") for node in traced.graph.nodes())
    x = torch.randn(4096, device="cuda")  # new inputs
    poison_allocator(((4096,), torch.float32))
    assert rel_err(traced(x), x.double() * 2 + 1) < 1e-6
