"""Autograd never silent: a gradient through a kernel needs the kernel's registered backward.

On CPU: the check on the fast path (C and Python, around a hand-filled cache), the AutogradError at backward
(or at the call of a kernel that writes an argument), and a registered backward run end to end on meta tensors,
its backward calling a kernel too.
"""

from typing import Any

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.autograd import forward_ad

import tltyped as tl
from tests.kernels import torch_ops as kernels
from tltyped.callpath import fastpath, tensors

pytestmark = pytest.mark.usefixtures("sm90")


def launched(*args: Any) -> str:
    return "launched"


def slow(*args: Any) -> str:
    return "slow"


def add_into_path(in_c: bool, facts: Any = None) -> tuple[Any, dict[Any, Any]]:
    """`add_into`'s fast path (C, or Python with the C or the Python facts) around a cache the test fills: a hit
    is "launched", a miss "slow"."""
    tensors.load_helpers()
    dispatcher = kernels.add_into._dispatcher
    launches: dict[Any, Any] = {}
    path = fastpath.build_fast_path(dispatcher.plan, dispatcher.fast_path_source, launches, slow, facts=facts, in_c=in_c)
    return path, launches


@pytest.mark.parametrize("in_c", [True, False])
def test_the_fast_path_leaves_a_tensor_requiring_grad_to_the_slow_path(in_c: bool) -> None:
    """A hit is launched only while autograd would not record the call: grad mode off, or no input requiring grad."""
    path, launches = add_into_path(in_c)
    a, out = torch.randn(8, requires_grad=True), torch.zeros(8)
    with torch.no_grad():
        launches[path.key(a, out, 128)] = launched
        assert path.call(a, out) == "launched"
    assert path.call(a, out) == "slow"
    assert path.call(a.detach(), out) == "launched"


def test_a_kernel_without_backward_runs_and_refuses_the_gradient_through_it() -> None:
    """As torch's custom ops: the forward runs on inputs requiring grad; backward through it raises."""
    a = torch.empty(10, device="meta", requires_grad=True)
    b = torch.empty(10, device="meta")
    out = kernels.interleave(a, b)
    assert tuple(out.shape) == (21,) and out.grad_fn is not None
    with pytest.raises(tl.AutogradError, match=r"interleave: backward through the kernel, which has no backward"):
        out.sum().backward()
    with pytest.raises(RuntimeError, match="no backward"):  # still a RuntimeError, as torch's own autograd errors are
        kernels.interleave(b, a.detach().requires_grad_()).sum().backward()
    with torch.no_grad():
        assert kernels.interleave(a, b).grad_fn is None
    assert kernels.interleave(a.detach(), b).grad_fn is None


def test_under_an_aot_compile_a_missing_backward_is_reported_when_compiling() -> None:
    """aot_eager (as inductor) traces the backward with the forward: the refusal comes then, as for torch's own
    custom ops without a backward; under no_grad the compiled program runs."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda a, b: kernels.interleave(a, b), backend="aot_eager", fullgraph=True)
    a, b = torch.empty(10, device="meta", requires_grad=True), torch.empty(10, device="meta")
    with pytest.raises(Exception, match=r"interleave: backward through the kernel, which has no backward"):
        compiled(a, b)
    with torch.no_grad():
        assert tuple(compiled(a, b).shape) == (21,)


def test_a_kernel_writing_an_argument_refuses_a_call_autograd_would_record() -> None:
    """As torch refuses `out=` functions: autograd cannot record a write."""
    a = torch.empty(10, device="meta", requires_grad=True)
    out = torch.empty(10, device="meta")
    with pytest.raises(tl.AutogradError, match=r"add_into: argument 'A' requires grad, and the kernel writes its argument 'Out'"):
        kernels.add_into(a, out)
    with torch.no_grad():
        kernels.add_into(a, out)


def test_the_error_comes_at_trace_time_too() -> None:
    """Under fake tensors (a tracer's), the recorded call's backward raises the same error."""
    with FakeTensorMode():
        a = torch.empty(6, 4, device="meta", requires_grad=True)
        first, half = kernels.split(a)
        with pytest.raises(tl.AutogradError, match=r"split: backward through the kernel"):
            (first.sum() + half.float().sum()).backward()


# `scale`'s backward: d(A * factor)/dA = factor, computed by the kernel itself.


CONSTS_SEEN: list[dict[str, Any]] = []


def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    ctx.factor = inputs[1]  # the runtime arguments: A, factor
    CONSTS_SEEN.append(ctx.consts)


def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
    return kernels.scale(grad, ctx.factor), None


@pytest.fixture(scope="module")
def scale_with_backward() -> Any:
    tl.register_autograd(kernels.scale, backward, setup_context=setup_context)
    return kernels.scale


def test_a_registered_backward_is_recorded_and_runs(scale_with_backward: Any) -> None:
    a = torch.empty(10, device="meta", requires_grad=True)
    out = scale_with_backward(a, 3.0)
    assert out.requires_grad and out.grad_fn is not None and tuple(out.shape) == (10,)
    out.sum().backward()
    assert a.grad is not None and tuple(a.grad.shape) == (10,) and a.grad.device.type == "meta"


def test_a_registered_backward_traces_under_fake_tensors(scale_with_backward: Any) -> None:
    """Fake meta tensors: autograd's engine, given fake CUDA ones, wants a CUDA device (which CPU machines lack)."""
    with FakeTensorMode():
        a = torch.empty(10, device="meta", requires_grad=True)
        out = scale_with_backward(a, 3.0)
        out.sum().backward()
        assert tuple(a.grad.shape) == (10,)
    # the call's op, named for the default consts (other tests may have made ops for other consts)
    assert "tltyped::tests_kernels_torch_ops_scale" in kernels.scale._dispatcher.torch_ops


def test_setup_context_sees_the_calls_consts(scale_with_backward: Any) -> None:
    """The op takes the runtime arguments; the consts fixed into it are `ctx.consts`, so one backward serves all."""
    a = torch.empty(10, device="meta", requires_grad=True)
    CONSTS_SEEN.clear()
    scale_with_backward(a, 3.0)
    scale_with_backward(a, 3.0, block=64)
    assert CONSTS_SEEN == [{"block": 128}, {"block": 64}]


def test_a_factory_s_backward_serves_every_kernel_object_it_makes() -> None:
    """Registered once on a lazy-style factory (as the AutogradError says): the kernel objects made before and after
    record their calls with it, `ctx.consts` their factory's arguments."""
    from tests.kernels.lazy_style import copy_block

    before, seen = copy_block(16), []
    copy_block.register_autograd(lambda ctx, grad: (grad,), setup_context=lambda ctx, i, o: seen.append(ctx.consts))
    after = copy_block(32)
    for kernel, n in ((before, 16), (after, 32)):
        a = torch.empty(n, device="meta", requires_grad=True)
        kernel(a).sum().backward()
        assert a.grad is not None and tuple(a.grad.shape) == (n,)
    assert seen == [{"N": 16}, {"N": 32}]


def test_register_autograd_refuses_what_is_not_a_function_when_given() -> None:
    """Not at the first call autograd records, as a plain TypeError from inside torch: a jit function, one whose
    annotations depend on consts (a Router), a lazy-style factory."""
    from tests.kernels.eager_style import const_params_as_dims
    from tests.kernels.lazy_style import copy_block

    for fn, name in ((kernels.offset_kernel(5.0), "add_offset"), (const_params_as_dims, "const_params_as_dims"), (copy_block, "copy_block")):
        with pytest.raises(tl.DefinitionError, match=rf"^{name}: register_autograd's backward must be a function, got int 3$"):
            fn.register_autograd(3)
        with pytest.raises(tl.DefinitionError, match=rf"^{name}: register_autograd's setup_context must be a function, got int 5$"):
            fn.register_autograd(lambda ctx, grad: (grad,), setup_context=5)


def test_eager_recordings_are_found_by_the_call_and_keep_its_consts() -> None:
    """An eager recorded call finds its op's recording by its static key: each set of consts has its own, and
    the backward sees the consts of the call it belongs to."""
    seen: list[int] = []
    kernel = kernels.offset_kernel(1.0)

    def seeing(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        seen.append(ctx.consts["block"])
        return grad

    kernel.register_autograd(seeing)
    a = torch.empty(16, device="meta", requires_grad=True)
    for block in (128, 64, 128, 64):
        kernel(a, block=block).sum().backward()
    assert seen == [128, 64, 128, 64]
    recorders = kernel._dispatcher.recorders
    assert len(recorders) == 2 and len(set(recorders.values())) == 2


def test_torch_func_grad_runs_the_registered_backward(scale_with_backward: Any) -> None:
    """`torch.func.grad` wraps its inputs (no data of their own) and differentiates only a Function with a
    `setup_context` of its own, which the Function torch registers for an op has not: the call is the kernel's,
    recorded by such a Function of the same formula, and the registered backward (itself a kernel call) runs."""
    CONSTS_SEEN.clear()
    grad = torch.func.grad(lambda a: scale_with_backward(a, 3.0, block=64).sum())(torch.empty(10, device="meta"))
    assert tuple(grad.shape) == (10,) and grad.device.type == "meta"
    assert CONSTS_SEEN and all(seen == {"block": 64} for seen in CONSTS_SEEN)  # functorch sets up twice, by design
    jacobian = torch.func.jacrev(lambda a: scale_with_backward(a, 3.0))(torch.empty(10, device="meta"))  # under vmap
    assert tuple(jacobian.shape) == (10, 10)


def test_torch_func_vjp_runs_the_registered_backward(scale_with_backward: Any) -> None:
    """`torch.func.vjp`: the forward is the kernel's call on the tensor vjp wraps, and the pullback is the
    registered backward, its setup given the call's consts; a kernel without one refuses the pullback."""
    CONSTS_SEEN.clear()
    a = torch.empty(10, device="meta")
    out, pullback = torch.func.vjp(lambda a: scale_with_backward(a, 3.0, block=64), a)
    assert tuple(out.shape) == (10,) and out.device.type == "meta"
    (grad,) = pullback(torch.empty(10, device="meta"))
    assert tuple(grad.shape) == (10,) and grad.device.type == "meta"
    assert CONSTS_SEEN and all(seen == {"block": 64} for seen in CONSTS_SEEN)
    _, no_backward = torch.func.vjp(lambda a: kernels.interleave(a, torch.empty(10, device="meta")), a)
    with pytest.raises(tl.AutogradError, match=r"interleave: backward through the kernel, which has no backward"):
        no_backward(torch.empty(21, device="meta"))


@pytest.mark.parametrize("in_c, facts", [(True, None), (False, None), (False, tensors.python_facts)])
def test_the_fast_path_leaves_every_call_to_the_slow_path_while_a_dual_level_is_open(in_c: bool, facts: Any) -> None:
    """A tensor may carry a tangent, which a launch would drop: the slow path looks at each argument."""
    path, launches = add_into_path(in_c, facts)
    a, out = torch.randn(8), torch.zeros(8)
    launches[path.key(a, out, 128)] = launched
    assert path.call(a, out) == "launched"
    with forward_ad.dual_level():
        assert path.call(forward_ad.make_dual(a, torch.ones(8)), out) == "slow"
        assert path.call(a, out) == "slow"
    assert path.call(a, out) == "launched"


def test_forward_mode_ad_through_a_kernel_is_refused(scale_with_backward: Any) -> None:
    """torch gives a custom op's outputs no tangent under `jvp` (as if it were zero): a kernel refuses instead."""
    a = torch.empty(10, device="meta")
    with pytest.raises(tl.AutogradError, match="argument 'A' carries a tangent .*no forward-mode formula"):
        torch.func.jvp(lambda a: scale_with_backward(a, 3.0), (a,), (a,))
    with forward_ad.dual_level():
        with pytest.raises(tl.AutogradError, match="argument 'A' carries a tangent"):
            scale_with_backward(forward_ad.make_dual(a, a), 3.0)
        assert tuple(scale_with_backward(a, 3.0).shape) == (10,)  # no tangent: the call runs


def test_forward_mode_ad_through_a_kernel_is_refused_under_a_tracer(scale_with_backward: Any) -> None:
    """Dynamo and torch.export trace `jvp` through the kernel's op on fake tensors: the same refusal, at trace time."""

    def tangent_of_scale(a: torch.Tensor) -> Any:
        return torch.func.jvp(lambda a: scale_with_backward(a, 3.0), (a,), (torch.ones_like(a),))

    class TangentOfScale(torch.nn.Module):
        def forward(self, a: torch.Tensor) -> Any:
            return tangent_of_scale(a)

    with FakeTensorMode() as fake:
        a = torch.empty(10, device="cuda")
    refused = "argument 'A' carries a tangent .*no forward-mode formula"
    with pytest.raises(Exception, match=refused):  # Dynamo's TorchRuntimeError, around tltyped's message
        torch.compile(tangent_of_scale, fullgraph=True, backend="aot_eager")(a)
    with fake, pytest.raises(tl.AutogradError, match=refused):
        torch.export.export(TangentOfScale(), (a,))


def test_forward_mode_over_reverse_mode_is_refused_too(scale_with_backward: Any) -> None:
    """`hessian` (jacfwd of jacrev): forward mode meets the call recorded for the inner reverse mode, whose
    Function refuses a tangent as the call itself does."""
    a = torch.empty(10, device="meta")
    refused = "scale: argument 'A' carries a tangent .*no forward-mode formula"
    with pytest.raises(tl.AutogradError, match=refused):
        torch.func.hessian(lambda a: scale_with_backward(a, 3.0).sum())(a)
    with pytest.raises(tl.AutogradError, match=refused):
        torch.func.jacfwd(torch.func.jacrev(lambda a: scale_with_backward(a, 3.0).sum()))(a)


def test_a_call_on_tensors_without_data_keeps_a_tuned_const_s_space_in_ctx_consts() -> None:
    """A recorded call on meta tensors runs nothing, so nothing was tuned: `ctx.consts` has the space (on a GPU, the
    value the tuning chose: tests/gpu/test_tuning.py)."""
    from tests.gpu.kernels import tuned_double

    seen: list[Any] = []
    kernel = tl.jit(tuned_double.__wrapped__)  # a backward of its own
    kernel.register_autograd(lambda ctx, grad: grad * 2, setup_context=lambda ctx, i, o: seen.append(ctx.consts))
    a = torch.empty(256, device="meta", requires_grad=True)
    kernel(a).sum().backward()
    assert seen == [{"block": tl.Tune((64, 128))}]
    assert a.grad is not None and tuple(a.grad.shape) == (256,)


def test_a_tensor_a_torch_func_transform_wraps_is_the_kernel_s_call_s_once_unwrapped() -> None:
    """What `ctx.consts` binds (`Dispatcher.chosen_consts`): under `torch.func.grad` the kernel ran on the tensor
    torch unwraps, so its tuning chose for that one."""
    from tltyped.frontend.binding import transformed, unwrapped

    plain = torch.randn(3)
    seen: list[torch.Tensor] = []

    def f(a: torch.Tensor) -> torch.Tensor:
        assert transformed(a)
        seen.append(unwrapped(a))
        return a.sum()

    torch.func.grad(f)(plain)
    assert not transformed(seen[0]) and type(seen[0]) is torch.Tensor and torch.equal(seen[0], plain)
    assert unwrapped(3) == 3 and unwrapped(plain) is plain
