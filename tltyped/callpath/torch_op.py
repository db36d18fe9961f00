"""Kernels inside PyTorch programs: a jit function as a torch custom op, for tracers only.

An eager call never comes here: it takes the fast path, and a launch. The
slow path imports this module when a call's tensors carry no data (torch's
FakeTensor and FunctionalTensor, which `torch.compile`, `torch.export` and
FakeTensorMode pass), or when autograd would record the call; Dynamo imports
it through the hook `dispatcher.expose` sets. Here the call becomes one call
of the kernel's op, which the tracer records as one opaque node.

Op naming. `tl.jit(op="mylib::rms_norm")` names the op; without it the name
is `tltyped::<module>_<qualname>`, sanitised. A factory makes several jit
functions of one qualname (`make.<locals>.kernel`): each one's name adds the
digest of the values its body reads (its closure: frontend/fingerprint.py),
so that a process names them alike whatever order it traces them in, and a
count where even that is taken (a kernel made twice from equal values, or one
whose values are read where its body is not: a module-level function
decorated twice), or one torch has an op of already (a user's
torch.library op); a name given twice, one torch has an op of, or one
that is not `namespace::name` of identifiers is refused. A kernel's consts are not op
arguments (a const is any hashable Python value, most of which a schema
cannot type): each set of const values (a lazy-style kernel object's
factory arguments are its consts) is its own op, fixed into its
implementation. The op of the consts' defaults has the plain name; any other
set appends the digest of the values' stable texts
(`mylib::rms_norm_3fa2b7c1`). An op is defined the first time a traced call
needs it, in this process; an exported program naming it runs where the
kernel has been traced with those consts.

Schema. The op takes the kernel's runtime parameters in order: tensors
(`Tensor`, or `Tensor(a!)` for those the kernel writes, read from its
lowering for the specialisation of the first traced call, so that
functionalization and export keep the write), dyn ints as `SymInt`, dyn
floats and bools as `float`/`bool`. It returns what the kernel allocates
and returns: `()`, `Tensor` or a tuple of them (counted from the
elaboration of that first call). `ptr` parameters are not traceable.

Fake implementation: `Dispatcher.outputs`, the same function a call with
meta tensors runs, after the binder has checked the call against the types
(naming the argument whose dims disagree): outputs are shaped from the
declared and derived dims, evaluated over the dyn dims' sizes, symbolic
ones included, and typed by the annotations. Const dims and strides are
specialised on (a symbolic size there becomes an int, as the kernel needs:
`Dispatcher.specialization`).

Dynamo. The jit function is a C object (or a generated function) Dynamo
cannot trace into. It carries the attributes torch gives `torch.jit`'s
script-if-tracing wrappers: Dynamo then traces `__original_fn` instead, a
plain function that first calls a function marked as Dynamo's
`assume_constant_result` (which Dynamo runs for real, at trace time: it
registers the kernel's entry with `torch._dynamo.allow_in_graph`), then that
entry. So the Dynamo graph holds one call of the kernel, its fake
propagation and AOTAutograd run the kernel on fake tensors (the op here),
and the eager backend calls the jit function itself (the fast path). Nothing
of Dynamo is imported before Dynamo runs.

Autograd, as torch's own custom ops have it. A call with grad mode on and an
input requiring grad takes the slow path (the fast path's tensor reader
refuses such tensors). A tracer's call is the op's, whose autograd kernel
records it; an eager one is recorded by the op's own `autograd.Function`
(the formula torch registers for the op, applied without the trip through
torch's dispatcher, which costs more than the kernel's call: found by the
call's static key, it runs the fast path with grad mode off). Its backward is the one
`kernel.register_autograd(backward, setup_context=...)` gave (as
`torch.library.register_autograd` takes it) when the call was recorded,
its `setup_context` seeing the runtime arguments as `inputs` and the
call's const values as `ctx.consts` (a dict by parameter name);
without one, the backward raises `tl.AutogradError`, so a forward kernel
runs on inputs that require grad and only a gradient through it is refused.
Under `torch.func.grad` (jacrev, ...) a call's tensors are wrapped and have
no data: it is recorded by a second Function of the same formula, with a
`setup_context` of its own as those transforms require (the Function torch
registers for an op has none), its forward the kernel on the unwrapped
tensors (under vmap, batched: once per sample, torch's fallback for an op
without a batching rule). A call whose argument carries a tangent
(forward-mode AD) is refused: a kernel has no forward formula
(`refuse_tangents`; the fast path leaves every call to the slow path while
a dual level is open).
A kernel that writes one of its arguments is refused at the call, as torch
refuses its `out=` functions: autograd cannot record a write.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch.autograd import forward_ad

from tltyped import locks
from tltyped.autotuner import tuned
from tltyped.callpath.fastpath import call_in_order, unpack
from tltyped.callpath.import_hook import not_lru_cache_wrappers
from tltyped.callpath.tensors import jit_trace_paused
from tltyped.errors import ArgumentTypeError, AutogradError, DefinitionError
from tltyped.frontend.binding import traced, transformed, unwrapped
from tltyped.frontend.fingerprint import Reader, fingerprint
from tltyped.frontend.signature import Kind, Param
from tltyped.templates.names import identifier
from tltyped.types.values import describe

if TYPE_CHECKING:
    from tltyped.callpath.dispatcher import Dispatcher
    from tltyped.frontend.binding import Bound


@dataclass(frozen=True)
class Autograd:
    """A kernel's registered backward, as `torch.library.register_autograd` takes it."""

    backward: Callable[..., Any]
    setup_context: Callable[..., Any] | None

    @staticmethod
    def of(name: str, backward: object, setup_context: object) -> Autograd:
        """The backward `register_autograd` was given for kernel `name`, checked now rather than at the first
        call autograd records."""
        for what, given in (("backward", backward), ("setup_context", setup_context)):
            if not callable(given) and not (what == "setup_context" and given is None):
                raise DefinitionError(f"{name}: register_autograd's {what} must be a function, got {describe(given)}")
        return Autograd(backward, setup_context)  # type: ignore[arg-type]


@dataclass(frozen=True)
class KernelOp:
    """One op of a kernel: for one set of const values."""

    qualname: str
    overload: Any  # torch's OpOverload
    library: Any  # torch.library.Library, which must outlive the op
    written: tuple[str, ...]  # the tensor parameters the kernel writes (`Tensor(a!)`); none: autograd records it
    record: Callable[..., Any] | None  # an eager call autograd records: the op's formula (None where it writes)
    transformable: Callable[..., Any] | None  # the same, for tensors a `torch.func` transform wraps


def refuse_tangents(dispatcher: Dispatcher, args: tuple[Any, ...]) -> None:
    """No call under forward-mode AD with a tangent (`torch.func.jvp`, `forward_ad.make_dual`): a kernel has no
    forward formula, and torch would give its outputs no tangent, as if it were zero."""
    unpack_dual: Callable[[torch.Tensor], Any] = forward_ad.unpack_dual  # untyped in torch: typed here
    tangents = [p.name for p, a in zip(dispatcher.signature.params, args)
                if issubclass(type(a), torch.Tensor) and unpack_dual(a).tangent is not None]
    if tangents:
        raise _no_forward_formula(dispatcher, tangents[0])


def _no_forward_formula(dispatcher: Dispatcher, argument: str) -> AutogradError:
    return AutogradError(
        f"{dispatcher.signature.name}: argument {argument!r} carries a tangent (forward-mode AD: torch.func.jvp, "
        "jacfwd, hessian, torch.autograd.forward_ad), and a kernel has no forward-mode formula; use reverse mode "
        "(torch.func.grad, vjp, jacrev, or backward)"
    )


def traced_call(dispatcher: Dispatcher, args: tuple[Any, ...]) -> Any:
    """A call a tracer records (its tensors a tracer's, or a `torch.func` transform's, or any under torch.jit.trace):
    one call of the kernel's op."""
    op = kernel_op(dispatcher, args)
    return op.overload(*(a for p, a in zip(dispatcher.signature.params, args) if p.is_runtime))


def autograd_call(dispatcher: Dispatcher, args: tuple[Any, ...]) -> Any:
    """A call autograd records, unless the kernel writes an argument (autograd cannot record that).

    An eager call is recorded by its op's `record`, found by the call's static key (exact const values, as
    the fast path's), read with grad mode off. A call under a `torch.func` transform is recorded by the op's
    `transformable`. A call the key cannot be read for (a tracer's tensors, which the tensor reader refuses,
    or bad arguments) is bound and checked (kernel_op), then one call of the op."""
    runtime = [a for p, a in zip(dispatcher.signature.params, args) if p.is_runtime]
    tensors = [a for a in runtime if issubclass(type(a), torch.Tensor)]
    wrapped = any(transformed(a) for a in tensors)
    key = None
    # Not for a tracer's tensors (or a transform's, which `traced` counts), whose key the reader refuses: the
    # grad-mode switch around reading it would be traced too, an empty `wrap_with_set_grad_enabled` node beside
    # each kernel's in torch.export's graph of a module whose parameters reach a kernel.
    if not any(traced(a) for a in tensors):
        try:
            with torch.no_grad():
                key = dispatcher.key(*args)
        except Exception:  # the reader refuses it: kernel_op's binding below names what is wrong, if anything
            key = None
    record = dispatcher.recorders.get(key) if key is not None else None
    if record is not None:
        return record(*runtime)
    op = kernel_op(dispatcher, args)
    if op.record is None or op.transformable is None:
        needing = [p.name for p, a in zip(dispatcher.signature.params, args)
                   if p.kind is Kind.TENSOR and issubclass(type(a), torch.Tensor) and a.requires_grad]
        raise AutogradError(
            f"{dispatcher.signature.name}: argument {needing[0]!r} requires grad, and the kernel writes its argument "
            f"{op.written[0]!r}, which autograd cannot record (as torch refuses out= functions); return outputs "
            "instead (in-body T.empty, or out_idx), or call it under torch.no_grad() or with detached tensors"
        )
    if wrapped:
        return op.transformable(*runtime)
    if key is None:
        return op.overload(*runtime)
    dispatcher.recorders[key] = op.record
    return op.record(*runtime)


def allow_in_graph(entry: Callable[..., Any], exposed: Iterable[Any]) -> None:
    """Let Dynamo put `entry` in its graph as one call (run by Dynamo while it traces: see the module's docstring).

    Dynamo takes any wrapper with a `cache_info` attribute for a `functools.lru_cache` wrapper, and warns that
    tracing through its cache may be wrong: the jit functions are told apart as Dynamo is imported
    (`import_hook.tell_apart_when_dynamo_loads`), each made later as it is made (`dispatcher._hook_dynamo`), and
    here again.
    """
    torch._dynamo.allow_in_graph(entry)  # type: ignore[no-untyped-call]
    not_lru_cache_wrappers(exposed)


# -- making ops ---------------------------------------------------------------------------


def kernel_op(dispatcher: Dispatcher, args: tuple[Any, ...]) -> KernelOp:
    """The op of the call's const values, defined on first use from the call's (traced) tensors; under
    torch.jit.trace, found with tracing paused (`jit_trace_paused`), however the call reached it."""
    with jit_trace_paused():
        bound = dispatcher.binder.bind(args, allow_meta=True)
        consts = dispatcher.consts(bound)
        qualname = op_name(dispatcher, consts)
        op = dispatcher.torch_ops.get(qualname)
        if op is None:
            with _defining:  # threads making one op's first call (DataParallel's replicas): one defines, the rest wait
                op = dispatcher.torch_ops.get(qualname)
                if op is None:
                    op = dispatcher.torch_ops[qualname] = _define(dispatcher, qualname, bound, consts)
    return op


_defining = locks.Lock()


def op_name(dispatcher: Dispatcher, consts: dict[str, Any]) -> str:
    """`ns::name` as the decorator names it (or from the kernel's module and qualname), with the digest of any
    const values other than the defaults."""
    base = _base_name(dispatcher)
    reader = Reader()
    texts = [f"{name}={reader.text(value)}" for name, value in consts.items()]
    defaults = [f"{p.name}={reader.text(p.default)}" for p in dispatcher.signature.params if p.kind is Kind.CONST]
    if texts == defaults:
        return base
    return f"{base}_{hashlib.sha256(chr(0).join(texts).encode()).hexdigest()[:8]}"


_named: dict[str, weakref.ref[object]] = {}  # an op base name -> its jit function's owner (never reused in a process)


def _base_name(dispatcher: Dispatcher) -> str:
    """The kernel's op name before consts, one per jit function in this process (see the module docstring)."""
    if dispatcher.op_base is None:
        dispatcher.op_base = _claim_name(dispatcher)
    return dispatcher.op_base


def _claim_name(dispatcher: Dispatcher) -> str:
    """The base name, claimed for the Dispatcher's owner: the jit function, so that the Dispatchers of one Router
    (a signature per const value) or one Factory (a kernel object per argument) share it whatever order their
    calls are traced in (an exported program names its ops so)."""
    name, owner = dispatcher.signature.name, dispatcher.op_owner
    if dispatcher.op is not None:
        if not _OP_NAME.fullmatch(dispatcher.op):
            raise DefinitionError(f"{name}: op {dispatcher.op!r} must be named `namespace::name`, each an identifier "
                                  "(letters, digits and underscores; no overload name)")
        if not _claim(dispatcher.op, owner):
            if dispatcher.op in _named:
                raise DefinitionError(f"{name}: op {dispatcher.op!r} is another kernel's op already; give each its own name")
            raise DefinitionError(f"{name}: op {dispatcher.op!r} is defined already (by torch.library or torch itself, "
                                  "or torch.ops names something so), not by tltyped; give the kernel a name of its own "
                                  "with tl.jit(op=...)")
        return dispatcher.op
    return next(n for n in _derived_names(dispatcher) if _claim(n, owner))


_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*")
"""A name `tl.jit(op=...)` may give: torch's schema parser takes nothing else, and the op is its default overload."""


def _claim(qualname: str, owner: object) -> bool:
    """Whether the op name is `owner`'s: claimed by it before, or now. A name torch has an op of that no kernel
    claimed (a user's `torch.library` op, torch's own `aten::add`) is never claimed: defining the kernel's op there
    fails deep in torch, or, where torch takes a second schema of the name, leaves the graph calling the other op.
    Nor is one that `torch.ops.<namespace>` has as an attribute of its own (`name`), where the op could not be found."""
    if qualname not in _named:
        namespace, name = qualname.split("::", 1)
        if hasattr(getattr(torch.ops, namespace), name):
            return False
    return _named.setdefault(qualname, weakref.ref(owner))() is owner


def _derived_names(dispatcher: Dispatcher) -> Iterator[str]:
    """`tltyped::<module>_<qualname>` (a function made by another has none of its own), then with the digest of
    the values the body reads, then counted."""
    # no leading `__` (a kernel of `__main__`): inductor's generated code names the op inside a class body,
    # where Python would mangle it
    qualname = dispatcher.fn.__qualname__
    derived = "tltyped::" + identifier(f"{dispatcher.fn.__module__}_{qualname}").lstrip("_")
    if "<locals>" not in qualname:
        yield derived
    with_values = f"{derived}_{fingerprint(dispatcher.fn).digest[:8]}"
    yield with_values
    yield from (f"{with_values}_{n}" for n in itertools.count(2))


def _define(dispatcher: Dispatcher, qualname: str, bound: Bound, consts: dict[str, Any]) -> KernelOp:
    namespace, name = qualname.split("::", 1)
    params = dispatcher.signature.params
    runtime = [p for p in params if p.is_runtime]
    written = _written(dispatcher, bound, runtime)
    schema = ", ".join(_schema_arg(dispatcher, p, written) for p in runtime)
    outputs = len(dispatcher.returned(bound, consts))  # not `outputs`, whose tensors a tracer would record
    returns = "Tensor" if outputs == 1 else f"({', '.join(['Tensor'] * outputs)})"
    library = torch.library.Library(namespace, "FRAGMENT")  # type: ignore[no-untyped-call]
    library.define(f"{name}({schema}) -> {returns}")  # type: ignore[no-untyped-call]

    def full(values: tuple[Any, ...]) -> list[Any]:
        given = dict(zip((p.name for p in runtime), values))
        return [given[p.name] if p.is_runtime else consts[p.name] for p in params]

    def run(*values: Any) -> Any:  # real tensors: the kernel itself (under autograd, with grad mode off)
        return call_in_order(dispatcher.fast_path.call, params, full(values))

    def fake(*values: Any) -> Any:
        return unpack(dispatcher.outputs(dispatcher.binder.bind(full(values), allow_meta=True)))

    library.impl(name, run, "CUDA")  # type: ignore[no-untyped-call]
    torch.library.register_fake(qualname, fake, lib=library)
    record = transformable = None
    if not written:
        formula = _autograd_formula(dispatcher, consts, full)
        torch.library.register_autograd(qualname, formula.backward, setup_context=formula.setup_context, lib=library)
        record = _recording(run, formula)
        transformable = _transformable(run, formula)
    overload = getattr(getattr(torch.ops, namespace), name).default
    return KernelOp(qualname, overload, library, tuple(written), record, transformable)


_SCHEMA_SCALARS: dict[type, str] = {bool: "bool", float: "float", int: "SymInt"}
"""A dyn scalar's type in the op's schema: an int is a SymInt, which a traced size may reach."""


def _schema_arg(dispatcher: Dispatcher, p: Param, written: list[str]) -> str:
    if p.kind is Kind.TENSOR:
        return f"Tensor(a{written.index(p.name)}!) {p.name}" if p.name in written else f"Tensor {p.name}"
    if p.kind is Kind.DYN:
        return f"{_SCHEMA_SCALARS[p.scalar_type]} {p.name}"
    raise ArgumentTypeError(f"{dispatcher.signature.name}: ptr parameter {p.name!r} cannot be traced (an address has no tensor to trace)")


def _written(dispatcher: Dispatcher, bound: Bound, runtime: list[Param]) -> list[str]:
    """The tensor parameters the kernel writes, from its lowering (TileLang's, no nvcc) for this call's specialisation."""
    lowered = dispatcher.builder.lower(*dispatcher.inspected(bound))
    return [runtime[i].name for i in sorted(lowered.written_params) if i < len(runtime) and runtime[i].kind is Kind.TENSOR]


@dataclass(frozen=True)
class Formula:
    """An op's autograd formula, as its recording Functions take it."""

    setup_context: Callable[[Any, tuple[Any, ...], Any], Any]
    backward: Callable[..., Any]
    jvp: Callable[..., Any]  # forward mode: refused, naming the argument whose tangent reached it


def _autograd_formula(
    dispatcher: Dispatcher, consts: dict[str, Any], full: Callable[[tuple[Any, ...]], list[Any]],
) -> Formula:
    """The op's autograd formula: the backward the kernel has when a call is recorded, or an AutogradError at
    backward time (so one formula serves a backward given before or after the op is made); no forward mode, which
    a tangent reaching a recorded call (forward over reverse: `hessian`) meets. The op's inputs are the runtime
    arguments only (`full` makes the call's arguments of them); its consts (fixed into the op) are `ctx.consts`,
    a tuned one as the value its tuning chose."""
    tuning = bool(tuned(consts))

    chosen: dict[tuple[Any, ...], dict[str, Any]] = {}  # the inputs' sizes, strides, dtypes, devices -> ctx.consts

    def tuned_consts(inputs: tuple[Any, ...]) -> dict[str, Any]:
        """The consts with the tuned ones as chosen for inputs like these (remembered, once none is left a space:
        a tracer's call, which runs nothing, leaves them spaces)."""
        tensors = [unwrapped(a) for a in inputs]  # a torch.func transform's wrappers may not tell their strides
        key = tuple((t.shape, t.stride(), t.dtype, t.device) if issubclass(type(t), torch.Tensor) else None for t in tensors)
        if key in chosen:
            return dict(chosen[key])
        found = dispatcher.chosen_consts(full(inputs), consts)
        if not tuned(found):
            chosen[key] = found
        return dict(found)

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.consts = tuned_consts(inputs) if tuning else dict(consts)
        ctx.tltyped_autograd = autograd = dispatcher.autograd
        if autograd is not None and autograd.setup_context is not None:
            autograd.setup_context(ctx, inputs, output)

    def backward(ctx: Any, *grads: Any) -> Any:
        autograd: Autograd | None = ctx.tltyped_autograd
        if autograd is None:
            name = dispatcher.signature.name
            raise AutogradError(
                f"{name}: backward through the kernel, which has no backward; register one with "
                f"{name}.register_autograd(backward, setup_context=...), or call it under torch.no_grad() or with "
                "detached tensors"
            )
        return autograd.backward(ctx, *grads)

    def jvp(ctx: Any, *tangents: Any) -> Any:
        runtime = [p.name for p in dispatcher.signature.params if p.is_runtime]
        raise _no_forward_formula(dispatcher, next((n for n, t in zip(runtime, tangents) if t is not None), runtime[0]))

    return Formula(setup_context, backward, jvp)


def _recording(run: Callable[..., Any], formula: Formula) -> Callable[..., Any]:
    """The op's formula as an `autograd.Function` of its runtime arguments, for eager calls: `apply` runs the
    kernel with grad mode off and records the call, as the op's autograd kernel does. Its forward sets up the
    context itself: a Function with a `setup_context` of its own has torch bind its arguments through
    `inspect.signature` at every call, which costs more than the kernel's call."""

    class Recorded(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *values: Any) -> Any:
            output = run(*values)
            formula.setup_context(ctx, values, output)
            return output

        backward = staticmethod(formula.backward)
        jvp = staticmethod(formula.jvp)

    return Recorded.apply


def _transformable(run: Callable[..., Any], formula: Formula) -> Callable[..., Any]:
    """The op's formula as an `autograd.Function` that `torch.func.grad` (and jacrev, ...) can differentiate: those
    transforms take only a Function with a `setup_context` of its own, which the one torch registers for the op
    has not. Its forward runs on the tensors the transform unwraps; under vmap (jacrev, vmap of grad) its forward
    and backward run batched, which torch's fallback for an op without a batching rule makes once per sample."""

    class Transformable(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(*values: Any) -> Any:
            with torch.no_grad():  # as any Function's forward: the formula is the gradient, not the kernel's call
                return run(*values)

        @staticmethod
        def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
            formula.setup_context(ctx, inputs, output)

        backward = staticmethod(formula.backward)
        jvp = staticmethod(formula.jvp)

    return Transformable.apply
