"""Kernels inside PyTorch programs, on CPU: traced with meta and fake tensors, by torch.export and Dynamo.

Nothing runs a kernel: tracing needs the kernel's types (and TileLang's lowering, for which tensors it
writes), never nvcc or a GPU. Fake CUDA tensors stand for the GPU's.
"""

import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
import warnings

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.export import Dim

import tltyped as tl
from tltyped.callpath.dispatcher import Dispatcher
from tltyped.frontend.fingerprint import fingerprint
from tests.conftest import ROOT, has_nvcc, no_gpu
from tests.kernels import torch_ops as kernels
from tests.kernels.torch_ops import accumulated, interleaved, scaled_plus_one

pytestmark = pytest.mark.usefixtures("sm90")


@pytest.fixture
def fake() -> FakeTensorMode:
    return FakeTensorMode(allow_non_fake_inputs=False)


def cuda(mode: FakeTensorMode, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    with mode:
        return torch.empty(shape, dtype=dtype, device="cuda")


class One(torch.nn.Module):
    """A module calling `fn` on one input, for torch.export."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, a):
        return self.fn(a)


class Two(One):
    def forward(self, a, b):
        return self.fn(a, b)


def halves(a):
    first, half = kernels.split(a)
    return first.sum() + half.float().sum()


lazy = kernels.lazy_double()


def doubled(x):
    return lazy(x) - 1


# -- meta and fake tensors --------------------------------------------------------------


def test_meta_call_returns_meta_outputs() -> None:
    out = kernels.interleave(torch.empty(10, device="meta"), torch.empty(10, device="meta"))
    assert (out.device.type, tuple(out.shape), out.dtype) == ("meta", (21,), torch.float32)


def test_fake_tensors_get_outputs_from_the_types(fake: FakeTensorMode) -> None:
    a = cuda(fake, 10)
    with fake:
        out = kernels.scale(a, 2.0)
        first, half = kernels.split(cuda(fake, 6, 4))
        doubled = lazy(a)
    assert (out.device.type, tuple(out.shape), out.dtype) == ("cuda", (10,), torch.float32)
    assert (tuple(first.shape), first.dtype, tuple(half.shape), half.dtype) == ((6,), torch.float32, (6, 4), torch.float16)
    assert tuple(doubled.shape) == (10,)


def test_fake_call_with_disagreeing_dims_names_the_argument(fake: FakeTensorMode) -> None:
    with fake, pytest.raises(tl.ArgumentValueError, match=r"interleave: dim N: 10 \(from A, axis 0\) vs 9 \(from B, axis 0\)"):
        kernels.interleave(cuda(fake, 10), cuda(fake, 9))


# -- torch.export -----------------------------------------------------------------------


def test_kernels_of_one_factory_are_ops_of_their_own(fake: FakeTensorMode) -> None:
    """A factory's jit functions share a qualname: each traced call is its own kernel's op, found again by it."""
    one, two = kernels.offset_kernel(1.0), kernels.offset_kernel(2.0)
    x = cuda(fake, 8)
    with fake:
        for fn in (one, two, one, two):
            assert tuple(fn(x).shape) == (8,)
        two(x, block=64)
    names = [set(fn._dispatcher.torch_ops) for fn in (one, two)]
    assert len(names[0]) == 1 and len(names[1]) == 2 and not names[0] & names[1], names
    assert all(hasattr(torch.ops.tltyped, name.split("::")[1]) for name in names[0] | names[1])


def test_threads_making_a_kernel_s_first_traced_calls_at_once_share_one_op() -> None:
    """DataParallel runs each replica's forward in a thread: the first call of a kernel on inputs requiring grad
    defines its op once, whichever thread comes first, and every thread gets a result autograd records."""
    fn = kernels.offset_kernel(3.0)
    start, results = threading.Barrier(6), []

    def call() -> None:
        start.wait()
        try:
            results.append(fn(torch.empty(8, device="meta", requires_grad=True)).grad_fn is not None)
        except Exception as exc:  # noqa: BLE001 - reported below, by the thread's result
            results.append(exc)

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 6 and len(fn._dispatcher.torch_ops) == 1


def test_an_op_name_given_to_two_kernels_is_refused(fake: FakeTensorMode) -> None:
    first, second = (kernels.offset_kernel(v, op="tltyped_tests::offset") for v in (1.0, 2.0))
    x = cuda(fake, 8)
    with fake:
        first(x)
        with pytest.raises(tl.DefinitionError, match="'tltyped_tests::offset' is another kernel's op already"):
            second(x)


@pytest.mark.parametrize("name", ["my-lib::offset", "tltyped_tests::offset.default", "tltyped_tests::a::b",
                                  "::offset", "tltyped_tests::"])
def test_an_op_name_torch_cannot_take_is_refused_naming_the_kernel(fake: FakeTensorMode, name: str) -> None:
    """torch's schema parser takes `namespace::name`, each an identifier: anything else is the kernel's error, not
    a parse error from inside torch.library at the first traced call."""
    with fake, pytest.raises(tl.DefinitionError, match=rf"^add_offset: op {re.escape(repr(name))} must be named"):
        kernels.offset_kernel(1.0, op=name)(cuda(fake, 8))


def test_an_op_name_torch_has_already_is_refused_and_a_derived_one_passes_it_by(fake: FakeTensorMode) -> None:
    """A user's torch.library op, or torch's own (`aten::add`, whose second schema torch would take, leaving the
    graph calling aten's op), is not the kernel's to define, nor a name torch.ops' namespaces have as an attribute
    (`name`): `op=` naming one is refused; a derived name that one holds is passed by, as one another kernel holds."""
    library = torch.library.Library("tltyped_tests_user", "DEF")
    library.define("offset(Tensor x) -> Tensor")
    x = cuda(fake, 8)
    for name in ("tltyped_tests_user::offset", "aten::add", "tltyped_tests::name"):
        with fake, pytest.raises(tl.DefinitionError, match=rf"^add_offset: op '{name}' is defined already .*not by "
                                                           r"tltyped; give the kernel a name of its own"):
            kernels.offset_kernel(1.0, op=name)(x)
    kernel = kernels.offset_kernel(4.0)
    taken = "tltyped::tests_kernels_torch_ops_offset_kernel__locals__add_offset_" + fingerprint(kernel._dispatcher.fn).digest[:8]
    holder = torch.library.Library("tltyped", "FRAGMENT")  # its ops live as long as it does
    holder.define(f"{taken.split('::')[1]}(Tensor x) -> Tensor")
    with fake:
        assert tuple(kernel(x).shape) == (8,)
    assert list(kernel._dispatcher.torch_ops) == [f"{taken}_2"]


def test_export_has_one_op_and_symbolic_shapes(fake: FakeTensorMode) -> None:
    n = Dim("n")
    ep = torch.export.export(Two(interleaved), (cuda(fake, 10), cuda(fake, 10)), dynamic_shapes=({0: n}, {0: n}))
    ops = [node.target for node in ep.graph.nodes if node.op == "call_function"]
    assert torch.ops.tltyped_tests.interleave.default in ops
    (output,) = [node for node in ep.graph.nodes if node.op == "output"][0].args[0]
    size = str(output.meta["val"].shape[0])
    assert size.startswith("2*s") and size.endswith("+ 1")


@pytest.mark.parametrize("device", ["meta", "fake cuda"])
def test_export_records_the_kernel_s_op_and_nothing_else_on_meta_inputs_too(fake: FakeTensorMode, device: str) -> None:
    """torch.export traces meta inputs as meta FakeTensors: a call with them is the kernel's op, as with fake CUDA
    ones (a plain meta call returns outputs with no op); the export that defines the op records nothing more."""
    kernel = kernels.offset_kernel(3.0)  # a new jit function: its op is defined by this export
    x = torch.empty(8, device="meta") if device == "meta" else cuda(fake, 8)
    ep = torch.export.export(One(kernel), (x,))
    ops = [str(node.target) for node in ep.graph.nodes if node.op == "call_function"]
    assert len(ops) == 1 and ops[0].startswith("tltyped.tests_kernels_torch_ops_offset_kernel"), ops


def test_torch_jit_trace_records_the_kernel_s_op_and_warns_of_nothing() -> None:
    """torch.jit.trace records the ops called on its inputs: a kernel's call is its op (a launch would be missing from
    the graph, and its outputs baked into it as constants), found with tracing paused (reading the tensors' sizes
    would warn that they are taken for constants)."""
    kernel = kernels.offset_kernel(5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch.jit.TracerWarning)
        traced = torch.jit.trace(lambda a: kernel(a) * 2, (torch.empty(8, device="meta"),), check_trace=False)
    calls = [node.kind() for node in traced.graph.nodes() if node.kind() != "prim::Constant"]
    assert len(calls) == 2 and calls[0].startswith("tltyped::tests_kernels_torch_ops_offset_kernel"), calls
    assert calls[1] == "aten::mul"


@pytest.mark.parametrize("call", ["an input requiring grad", "a compiled kernel"])
def test_torch_jit_trace_reads_no_call_it_records_with_tracing_on(call: str) -> None:
    """A call autograd would record (an input requiring grad) reaches the op its own way, and a compiled kernel's
    call is checked against what it was built for first: both read the tensors' sizes with tracing paused too,
    neither warning nor entering the graph."""
    kernel = kernels.offset_kernel(7.0 if call == "a compiled kernel" else 6.0)
    x = torch.empty(8, device="meta", requires_grad=call == "an input requiring grad")
    if call == "a compiled kernel":
        if not has_nvcc():
            pytest.skip("nvcc is not available")
        kernel = kernel.compile(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch.jit.TracerWarning)
        traced = torch.jit.trace(lambda a: kernel(a) * 2, (x,), check_trace=False)
    calls = [node.kind() for node in traced.graph.nodes() if node.kind() != "prim::Constant"]
    assert len(calls) == 2 and calls[0].startswith("tltyped::tests_kernels_torch_ops_offset_kernel"), calls
    assert calls[1] == "aten::mul"


@no_gpu
def test_torch_jit_trace_launches_a_call_of_no_tensor_as_an_eager_call_is() -> None:
    """torch dispatches an op on its tensor arguments: a call of none cannot be the kernel's op (torch finds no
    kernel of it to run). Its outputs depend on Python values alone, which the trace takes for constants anyway: it
    is launched as an eager call is (on a machine without a GPU, refused as such)."""
    with pytest.raises(tl.LaunchError, match="iota: no CUDA device is available"):
        kernels.iota(5)
    with pytest.raises(tl.LaunchError, match="iota: no CUDA device is available"):
        torch.jit.trace(lambda a: kernels.iota(5) + a, (torch.empty(5, device="meta"),), check_trace=False)


def test_torch_jit_trace_leaves_the_fast_path_a_call_of_no_tensor() -> None:
    """The fast path serves a call of no tensor under torch.jit.trace as outside it (its key is read, its launch
    made), rather than leave it to the slow path, which would read the same key."""
    d = Dispatcher(kernels.iota.__wrapped__, kernels.iota.signature, None)
    launched: list[tuple[object, ...]] = []
    d.launches[d.key(5)] = lambda *args: launched.append(args) or "launched"
    served: list[object] = []
    torch.jit.trace(lambda a: served.append(d.fast_path.call(5)) or a * 2, (torch.empty(5, device="meta"),),
                    check_trace=False)
    assert served == ["launched"] and len(launched) == 1 and launched[0][0] == 5


class Weighted(torch.nn.Module):
    """A module whose parameter (requiring grad, as parameters do) reaches kernels."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(8, device="meta"))

    def forward(self, x):
        return kernels.interleave(x, self.weight) * 2 + kernels.scale(self.weight, 2.0).sum()


def test_export_of_a_module_whose_parameters_reach_kernels_records_their_ops_and_nothing_else() -> None:
    """A call autograd would record, traced: the kernel's op and no grad-mode switch around it (an empty
    `wrap_with_set_grad_enabled` per call, which only `run_decompositions` would remove). Meta inputs: autograd's
    engine, given fake CUDA tensors requiring grad, aborts the process on a CPU-only torch."""
    model, x = Weighted(), torch.empty(8, device="meta")
    ep = torch.export.export(model, (x,))
    ops = [str(node.target) for node in ep.graph.nodes if node.op == "call_function"]
    assert ops == ["tltyped_tests.interleave.default", "aten.mul.Tensor", "tltyped.tests_kernels_torch_ops_scale.default",
                   "aten.sum.default", "aten.add.Tensor"], ops


def test_export_of_an_output_sized_by_min_holds_for_every_size() -> None:
    """`T.min(N, 256)` is a symbolic min of the traced size, not a guard that specialises the export to N > 256."""
    ep = torch.export.export(One(kernels.head), (torch.empty(1000, device="meta"),),
                             dynamic_shapes=({0: Dim("n", min=2, max=100_000)},))
    (output,) = [node for node in ep.graph.nodes if node.op == "output"][0].args[0]
    assert str(output.meta["val"].shape[0]).startswith("Min("), output.meta["val"].shape
    assert tuple(kernels.head(torch.empty(100, device="meta")).shape) == (100,)


TRACE_IN_ORDER = """
import sys, torch
from torch._subclasses.fake_tensor import FakeTensorMode
from tests.kernels.eager_style import body_names
from tests.kernels.lazy_style import row_sum
from tests.kernels.torch_ops import offset_kernel

class Call(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn
    def forward(self, *args):
        return self.fn(*args)

with FakeTensorMode():
    a, at, b = (torch.empty(*shape, device="cuda", dtype=dtype) for shape, dtype in
                (((8, 4), torch.float16), ((4, 8), torch.float16), ((8,), torch.float32)))
    x, x32 = torch.empty(64, 32, device="cuda"), torch.empty(32, 32, device="cuda")
calls = {
    "plain": (lambda a, b: body_names(a, b), (a, b)),
    "transposed": (lambda a, b: body_names(a, b, trans=True), (at, b)),
    "rows 64": (lambda x: row_sum(64, 32)(x), (x,)),
    "rows 32": (lambda x: row_sum(32, 32)(x), (x32,)),
    "offset 1": (lambda b: offset_kernel(1.0)(b), (b,)),
    "offset 2": (lambda b: offset_kernel(2.0)(b), (b,)),
}
for name in sys.argv[1:]:
    fn, args = calls[name]
    ep = torch.export.export(Call(fn), args)
    print(name, [str(node.target) for node in ep.graph.nodes if node.op == "call_function" and "tltyped" in str(node.target)])
"""


@pytest.mark.parametrize("earlier, later", [("plain", "transposed"), ("rows 32", "rows 64"),
                                            ("offset 1", "offset 2")],
                         ids=["a router's signatures", "a factory's kernel objects", "a factory's jit functions"])
def test_an_op_is_named_alike_whatever_was_traced_before_it(earlier: str, later: str, tmp_path: Path) -> None:
    """An exported program names its ops: a process that traces `later` alone names its op as one that traced
    another signature (or kernel object) of the same jit function first, or another jit function of the same
    factory, so either loads the other's program."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TLTYPED_TARGET": "sm_90a", "TLTYPED_CACHE_DIR": str(tmp_path)}
    names = []
    for order in ([later], [earlier, later]):
        run = subprocess.run([sys.executable, "-c", TRACE_IN_ORDER, *order], capture_output=True, text=True, env=env,
                             cwd=ROOT, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        names.append(run.stdout.strip().splitlines()[-1])
    assert names[0] == names[1] and names[0].startswith(later), names


LOAD_SAVED = """
import sys, torch
from torch._subclasses.fake_tensor import FakeTensorMode
from tests.kernels import torch_ops as kernels
if sys.argv[2] == "traced":
    with FakeTensorMode():
        kernels.interleave(torch.empty(1, device="meta"), torch.empty(1, device="meta"))
try:
    ep = torch.export.load(sys.argv[1])
except RuntimeError:
    print("not loaded")
else:
    print(tuple(ep.module()(torch.empty(7, device="meta"), torch.empty(7, device="meta")).shape))
"""


def test_a_saved_exported_program_loads_where_its_kernels_have_been_traced(fake: FakeTensorMode, tmp_path: Path) -> None:
    """An op is defined by a traced call, not by importing its kernel's module (README): a fresh process loads a
    program `torch.export.save` wrote once it has traced a call of each kernel with the program's consts, and
    the loaded program has the op's symbolic shapes."""
    n = Dim("n")
    saved = tmp_path / "interleaved.pt2"
    torch.export.save(torch.export.export(Two(interleaved), (cuda(fake, 10), cuda(fake, 10)),
                                          dynamic_shapes=({0: n}, {0: n})), saved)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TLTYPED_TARGET": "sm_90a", "TLTYPED_CACHE_DIR": str(tmp_path)}
    printed = []
    for traced in ("traced", "imported"):
        run = subprocess.run([sys.executable, "-c", LOAD_SAVED, str(saved), traced], capture_output=True, text=True,
                             env=env, cwd=ROOT, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        printed.append(run.stdout.strip().splitlines()[-1])
    assert printed == ["(15,)", "not loaded"], printed


def test_each_set_of_const_values_is_an_op_of_its_own_the_defaults_under_the_plain_name(fake: FakeTensorMode) -> None:
    """Consts are fixed into the op, not passed to it: the op of the defaults (given or not) is
    `tltyped::<module>_<qualname>` or the name `op=` gives, any other values append their digest; a dyn scalar is
    an argument of the op, so its value names nothing."""

    def traced(fn, *args) -> list[str]:
        ep = torch.export.export(Two(fn) if len(args) == 2 else One(fn), args)
        return [str(node.target) for node in ep.graph.nodes if node.op == "call_function"]

    a, b = cuda(fake, 10), cuda(fake, 10)
    plain = "tltyped.tests_kernels_torch_ops_scale.default"
    assert traced(lambda x: kernels.scale(x, 2.0), a) == [plain]
    assert traced(lambda x: kernels.scale(x, 3.0, block=128), a) == [plain]  # the default, given
    (other,) = traced(lambda x: kernels.scale(x, 2.0, block=64), a)
    assert re.fullmatch(r"tltyped\.tests_kernels_torch_ops_scale_[0-9a-f]{8}\.default", other), other
    assert traced(lambda x: kernels.scale(x, 5.0, 64), a) == [other]  # equal consts: the same op
    assert traced(lambda x: kernels.scale(x, 2.0, block=256), a) not in ([plain], [other])
    assert traced(lambda x, y: kernels.interleave(x, y), a, b) == ["tltyped_tests.interleave.default"]
    (named,) = traced(lambda x, y: kernels.interleave(x, y, block=64), a, b)
    assert re.fullmatch(r"tltyped_tests\.interleave_[0-9a-f]{8}\.default", named), named


def test_export_keeps_the_write_of_an_out_parameter(fake: FakeTensorMode) -> None:
    ep = torch.export.export(Two(accumulated), (cuda(fake, 8), cuda(fake, 8))).run_decompositions({})
    mutated = {spec.target for spec in ep.graph_signature.output_specs if spec.kind.name == "USER_INPUT_MUTATION"}
    assert mutated == {"b"}  # the module's second input, which the kernel's Out writes
    schema = str(next(op for op in kernels.add_into._dispatcher.torch_ops.values()).overload._schema)
    assert "Tensor(a0!) Out" in schema and "Tensor A" in schema


def test_export_two_outputs_and_a_lazy_kernel_object(fake: FakeTensorMode) -> None:
    torch.export.export(One(halves), (cuda(fake, 6, 4),), dynamic_shapes=({1: Dim("n")},))
    with pytest.raises(torch._dynamo.exc.UserError, match="specialized it to be a constant"):  # M is a const dim
        torch.export.export(One(halves), (cuda(fake, 6, 4),), dynamic_shapes=({0: Dim("m")},))
    ep = torch.export.export(One(doubled), (cuda(fake, 10),), dynamic_shapes=({0: Dim("l")},))
    assert any(str(node.target).startswith("tltyped.tests_kernels_torch_ops_lazy_double_") for node in ep.graph.nodes)


def test_export_refuses_disagreeing_dims_naming_the_argument(fake: FakeTensorMode) -> None:
    with pytest.raises(tl.ArgumentValueError, match=r"interleave: dim N: 10 \(from A, axis 0\) vs 9 \(from B, axis 0\)"):
        torch.export.export(Two(interleaved), (cuda(fake, 10), cuda(fake, 9)))


# -- Dynamo ------------------------------------------------------------------------------


@pytest.mark.parametrize("program, shapes", [
    (scaled_plus_one, [(10,)]), (interleaved, [(10,), (10,)]), (accumulated, [(8,), (8,)]), (halves, [(6, 4)]),
    (doubled, [(10,)]),
])
def test_dynamo_sees_one_call_and_no_graph_break(fake: FakeTensorMode, program, shapes) -> None:
    args = [cuda(fake, *shape) for shape in shapes]
    explanation = torch._dynamo.explain(program)(*args)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


def test_a_graph_traced_through_one_kernel_is_not_replayed_for_another(fake: FakeTensorMode) -> None:
    """Two kernels reached by one code path (two instances of a module class, one function given either): each
    compiled call's graph calls its own kernel, not the one Dynamo traced first."""
    called = []

    def backend(gm: torch.fx.GraphModule, example_inputs):
        called.append([node.target.__wrapped__ for node in gm.graph.nodes if node.op == "call_function"])
        return gm.forward

    kernels_ = [kernels.offset_kernel(1.0), kernels.offset_kernel(2.0)]
    modules = [torch.compile(One(kernel), fullgraph=True, backend=backend) for kernel in kernels_]
    either = torch.compile(lambda kernel, a: kernel(a), fullgraph=True, backend=backend)
    x = cuda(fake, 8)
    with fake:
        for compiled in modules:
            compiled(x)
        for kernel in kernels_:
            either(kernel, x)
    assert called == [[kernel] for kernel in kernels_ * 2], called
    assert [len(kernel._dispatcher.torch_ops) for kernel in kernels_] == [1, 1]  # each traced on fake tensors


def test_compile_fullgraph_dynamic_traces_symbolic_shapes(fake: FakeTensorMode) -> None:
    seen = []

    def backend(gm: torch.fx.GraphModule, example_inputs):
        seen.append([node.meta["example_value"] for node in gm.graph.nodes if node.op == "call_function"])
        return gm.forward

    compiled = torch.compile(interleaved, fullgraph=True, backend=backend, dynamic=True)
    with fake:
        out = compiled(cuda(fake, 10), cuda(fake, 10))
    assert tuple(out.shape) == (21,)
    kernel_out = seen[0][0]
    assert str(kernel_out.shape[0]).startswith("2*s") and kernel_out.dtype == torch.float32


@pytest.mark.parametrize("program, shapes, expected", [
    (scaled_plus_one, [(10,)], (10,)), (interleaved, [(10,), (10,)], (21,)), (accumulated, [(8,), (8,)], (8,)),
    (halves, [(6, 4)], ()), (doubled, [(10,)], (10,)),
])
def test_compile_fullgraph_with_the_eager_backend_runs_the_kernel_on_fake_tensors(fake, program, shapes, expected) -> None:
    compiled = torch.compile(program, fullgraph=True, backend="eager")
    with fake:
        out = compiled(*(cuda(fake, *shape) for shape in shapes))
    assert tuple(out.shape) == expected


def test_compile_passes_a_symbolic_size_to_a_dyn_int_and_specialises_a_const_on_one(fake: FakeTensorMode) -> None:
    """torch.compile's default traces a second shape with symbolic sizes (automatic dynamic shapes): a size given
    to a dyn int reaches the op as a SymInt; one given to a const is specialised on (the kernel is built for it)."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda a: kernels.first_n(a, a.shape[0] - 1), fullgraph=True, backend="eager")
    for n in (10, 12, 14):
        assert tuple(compiled(cuda(fake, n)).shape) == (n,)
    blocked = torch.compile(lambda a: kernels.first_n(a, 3, block=a.shape[0]), fullgraph=True, dynamic=True,
                            backend="eager")
    assert tuple(blocked(cuda(fake, 64)).shape) == (64,)


def test_a_view_whose_strides_are_traced_sizes_is_specialised_on_them() -> None:
    """Strides are static, as const dims are: under dynamic shapes a non-contiguous view's strides are symbolic
    (a row of every other column, a step given as a size), and the kernel is built for the ints they stand for (a
    guard), not handed torch's symbols. Meta tensors: slicing a fake CUDA tensor needs a CUDA build of torch."""
    torch._dynamo.reset()
    columns = torch.compile(lambda a: kernels.split(a[:, ::2]), fullgraph=True, dynamic=True, backend="aot_eager")
    first, half = columns(torch.empty(6, 16, device="meta"))
    assert (tuple(first.shape), tuple(half.shape)) == ((6,), (6, 8))
    stepped = torch.compile(lambda a, step: kernels.scale(a[::step], 2.0), fullgraph=True, dynamic=True, backend="aot_eager")
    assert [tuple(stepped(torch.empty(n, device="meta"), step).shape) for n, step in ((16, 2), (18, 3))] == [(8,), (6,)]


@pytest.mark.parametrize("dynamic", [None, True])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_python_float_that_the_compiler_makes_dynamic_reaches_a_dyn_float(fake: FakeTensorMode, dynamic, backend) -> None:
    """torch.compile's default traces a second float value as a SymFloat (automatic dynamic); the op takes a dyn float
    as a `float`, as torch's own ops do, so the value is specialised on (guarded), never refused."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda a, factor: kernels.scale(a, factor), fullgraph=True, dynamic=dynamic, backend=backend)
    for factor in (2.0, 3.0, 4.0):
        assert tuple(compiled(cuda(fake, 10), factor).shape) == (10,)


def test_a_traced_float_for_a_dyn_float_is_refused_naming_it(fake: FakeTensorMode) -> None:
    """The op takes a dyn float as a `float` fixed at trace time: a tensor's `.item()` is refused, named."""

    class ItemScale(torch.nn.Module):
        def forward(self, a, b):
            return kernels.scale(a, b.sum().item())

    with fake, pytest.raises(tl.ArgumentTypeError, match=r"scale: dyn parameter 'factor' expects a float32 fixed when "
                                                         r"the program is traced, got torch.SymFloat"):
        torch.export.export(ItemScale(), (cuda(fake, 10), cuda(fake, 3)))


def test_a_ptr_parameter_is_not_traceable_and_the_refusal_names_it(fake: FakeTensorMode) -> None:
    """A raw address has no tensor a tracer could follow: a traced call passing one to a `ptr` parameter is refused
    naming it, under FakeTensorMode and torch.export alike; a plain meta call (no tracer) takes it."""
    from tests.kernels.shapes import with_scalars

    refused = r"^with_scalars: ptr parameter 'p' cannot be traced \(an address has no tensor to trace\)$"
    with fake, pytest.raises(tl.ArgumentTypeError, match=refused):
        with_scalars(cuda(fake, 8), 3, 4096)
    with pytest.raises(tl.ArgumentTypeError, match=refused):
        torch.export.export(One(lambda a: (with_scalars(a, 3, 4096), a * 2)[1]), (cuda(fake, 8),))
    assert with_scalars(torch.empty(8, device="meta"), 3, 4096) is None


def test_a_traced_tensor_given_to_a_ptr_parameter_is_refused_naming_it(fake: FakeTensorMode) -> None:
    """A CUDA tensor stands for its address at a real call; a tracer's tensor has none, so a traced call giving one
    to a `ptr` parameter is refused naming it (not torch's error from reading a FakeTensor's data pointer)."""
    from tests.kernels.eager_style import pointers

    refused = r"^pointers: ptr parameter 'A' cannot be traced \(a traced tensor has no address; declare"
    a, out = cuda(fake, 8), cuda(fake, 8)
    with fake, pytest.raises(tl.ArgumentTypeError, match=refused):
        pointers(a, out, 8)
    with pytest.raises(tl.ArgumentTypeError, match=refused):
        torch.export.export(One(lambda a: (pointers(a, a, 8), a * 2)[1]), (a,))


def test_dynamo_takes_a_kernel_made_before_it_was_imported_for_no_lru_cache() -> None:
    """The usual program: kernels defined at import, torch.compile later. Defining them imports no Dynamo, and
    its first trace of one does not warn (in a process of its own: this one has imported Dynamo). A program that
    first asks whether Dynamo exists (importlib.util.find_spec) is no different."""
    probe = textwrap.dedent("""
        import importlib.util, sys, warnings
        import torch
        from tests.kernels.torch_ops import scaled_plus_one
        assert "torch._dynamo" not in sys.modules
        assert importlib.util.find_spec("torch._dynamo") is not None  # asking whether it exists imports nothing
        assert "torch._dynamo" not in sys.modules
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = torch.compile(scaled_plus_one, fullgraph=True, backend="eager")(torch.empty(10, device="meta"))
        assert tuple(out.shape) == (10,), out.shape
        print([str(w.message)[:80] for w in caught if "lru_cache" in str(w.message)])
    """)
    env = {**os.environ, "TLTYPED_TARGET": "sm_90a"}
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "[]", run.stdout


def test_defining_calling_and_lowering_kernels_eagerly_imports_neither_the_torch_op_nor_dynamo() -> None:
    """An eager call never goes through the op: a program that defines kernels (a jit function, a factory's, a
    lazy-style kernel object), calls them and lowers them imports neither torch_op.py nor Dynamo; a call autograd
    records is the first to need the op (in a process of its own: this one has imported both)."""
    probe = textwrap.dedent("""
        import sys
        import torch
        from tests.kernels import torch_ops as kernels
        offset, lazy = kernels.offset_kernel(2.5), kernels.lazy_double(block=64)
        a = torch.empty(10, device="meta")
        results = [kernels.scale(a, 2.0), offset(a), lazy(a), kernels.interleave(a, a)]
        kernels.scale.lower(a, 2.0)
        print(sorted(name for name in ("tltyped.callpath.torch_op", "torch._dynamo") if name in sys.modules))
        kernels.scale(a.clone().requires_grad_(), 2.0)
        print(sorted(name for name in ("tltyped.callpath.torch_op", "torch._dynamo") if name in sys.modules))
    """)
    env = {**os.environ, "TLTYPED_TARGET": "sm_90a"}
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-2:] == ["[]", "['tltyped.callpath.torch_op']"], run.stdout


def test_dynamo_takes_a_kernel_made_after_its_first_trace_for_no_lru_cache(fake: FakeTensorMode) -> None:
    """A jit function carries `cache_info`, which Dynamo takes for an lru_cache wrapper's unless told apart: a
    kernel a factory makes once Dynamo is loaded is told apart as it is made, and its first trace does not warn."""
    a = cuda(fake, 10)
    torch.compile(scaled_plus_one, fullgraph=True, backend="eager")(a)  # Dynamo has traced a kernel
    made = kernels.offset_kernel(2.5), kernels.lazy_double(block=64)
    for kernel in made:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = torch.compile(lambda x: kernel(x), fullgraph=True, backend="eager")(a)
        assert tuple(out.shape) == (10,)
        assert not [w for w in caught if "lru_cache" in str(w.message)]


def test_tuned_kernels_are_one_op_each_in_export_and_compile(fake: FakeTensorMode) -> None:
    """A lazy factory's `tl.tune` argument and `@tl.autotune`'s configurations: the op stands for the tuner's choice
    (its fake outputs, shared by every candidate), in torch.export's graph and under torch.compile(fullgraph=True)."""
    from tests.kernels.eager_style import gemv
    from tests.kernels.lazy_style import row_sum

    rows = row_sum(256, 64)
    ep = torch.export.export(One(lambda x: rows(x) * 2), (cuda(fake, 256, 64),))
    assert any(str(node.target).startswith("tltyped.tests_kernels_lazy_style_row_sum_") for node in ep.graph.nodes)
    ep = torch.export.export(Two(gemv), (cuda(fake, 1024, dtype=torch.float16), cuda(fake, 512, 1024, dtype=torch.float16)))
    assert any("gemv" in str(node.target) for node in ep.graph.nodes if node.op == "call_function")
    compiled = torch.compile(lambda x, a, b: (rows(x), gemv(a, b)), fullgraph=True, backend="eager")
    with fake:
        summed, product = compiled(cuda(fake, 256, 64), cuda(fake, 1024, dtype=torch.float16),
                                   cuda(fake, 512, 1024, dtype=torch.float16))
    assert (tuple(summed.shape), tuple(product.shape), product.dtype) == ((256,), (512,), torch.float16)


def test_a_traced_size_is_shown_with_the_size_it_has_in_the_traced_call(fake: FakeTensorMode) -> None:
    """Under dynamic shapes a tensor's sizes are torch's symbols (`s52`): a refusal says which size each stands
    for in the call being traced."""
    compiled = torch.compile(interleaved, fullgraph=True, backend="eager", dynamic=True)
    with fake, pytest.raises(Exception, match=r"interleave: dim N: s\d+ = 10 \(from A, axis 0\) vs s\d+ = 9 \(from B, axis 0\)"):
        compiled(cuda(fake, 10), cuda(fake, 9))
