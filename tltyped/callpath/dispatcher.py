"""The Dispatcher: the state behind one jit function and its slow path.

    jitfn(*args) -> the fast path (fastpath.py; in C where the signature allows):
        read the tensors' facts, build the static key, look it up in `launches`
      hit  -> launch the compiled kernel with data pointers, dyn values and the
              raw current CUDA stream
      miss -> Dispatcher.slow: validate (frontend/binding.py), tune if asked
              (or reuse the saved result), take the kernel of the call's
              specialisation from `kernels` (in memory, the disk cache, or
              elaborate -> lower -> build), store its launch under the key, launch
      a global or closure cell the body reads was rebound since -> the slow
              path too, which empties `launches` first (unless each was rebound
              to a value of the same text): the kernels are taken anew, from
              the values as they are now
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import sys
import weakref
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import torch

from tltyped import locks
from tltyped.autotuner import candidates, first_candidates, memory_copy, search, time_call, tuned
from tltyped.backend import records
from tltyped.backend import target as targets
from tltyped.backend.kernel import CompiledKernel
from tltyped.backend.options import BuildOptions
from tltyped.callpath import tensors
from tltyped.callpath.fastpath import build_fast_path, call_in_order, python_parameters, render_fast_path, unpack
from tltyped.callpath.kernels import KernelTable
from tltyped.callpath.parallel import build_in_parallel, par_compile
from tltyped.callpath.plan import plan_call
from tltyped.errors import ArgumentTypeError, ArgumentValueError, DefinitionError, LaunchError
from tltyped.frontend.binding import Binder, Bound, inspection_arguments, traced, unwrapped, without_data
from tltyped.frontend.fingerprint import Watch, fingerprint, rebound_alike, unchanged, watched_texts
from tltyped.frontend.signature import Difference, KernelSignature, Kind, Specialization
from tltyped.types.dtypes import is_packed

if TYPE_CHECKING:
    from tltyped.backend.compiler import KernelBuilder
    from tltyped.backend.lower import LoweredKernel
    from tltyped.callpath.torch_op import Autograd, KernelOp


class CacheInfo(NamedTuple):
    hits: int  # calls served by a kernel already in memory
    misses: int  # calls that took the slow path
    compiles: int  # kernels built in this process (elaborated and lowered; nvcc unless its build was on disk)
    disk_hits: int  # kernels loaded from the disk cache without building them
    size: int  # static signatures in the in-memory cache


class Pin(NamedTuple):
    """What a compiled kernel was built for (`Dispatcher.compile`): its call runs nothing else."""

    spec: Specialization
    target: dict[str, Any]
    launch: Callable[..., Any]  # the compiled kernel's own


class Dispatcher:
    """One jit function: its analysed signature, fast path, launches, kernels and the slow path.

    `launches` maps a fast-path key to the launch of its kernel; `kernels`
    holds the compiled kernel of each specialisation (consts, const dims,
    dtypes, strides, arch), shared by every key and tuning candidate that
    needs it.
    """

    def __init__(
        self, fn: Callable[..., Any], signature: KernelSignature, target: targets.TargetLike,
        options: BuildOptions = BuildOptions(), op: str | None = None, op_owner: object | None = None,
        reread: Callable[[], KernelSignature] | None = None,
    ) -> None:
        if target is not None:
            targets.normalize(target)  # reject a malformed target at decoration
        self.fn = fn
        self.op = op  # the torch op's name, `tl.jit(op=...)` (torch_op.py)
        self.op_base: str | None = None  # the name its ops are named from, once claimed (torch_op.py)
        self.op_owner = op_owner or self  # who claims that name: a Router's or a Factory's Dispatchers share theirs
        self.torch_ops: dict[str, KernelOp] = {}  # qualname -> the op of one set of const values
        self.recorders: dict[Any, Callable[..., Any]] = {}  # static key -> its op's eager recording (torch_op.py)
        self.outputs_agree: set[str] = set()  # tuning spaces (described) whose candidates were seen to return alike
        self.autograd: Autograd | None = None  # the backward `register_autograd` gave
        self.target = target
        self.options = options
        self.signature = signature
        self.reread = reread  # the signature as the annotations read now, checked before each build (Elaborator)
        self.binder = Binder(self.signature, dict(fn.__globals__))
        self.kernels = KernelTable(fn, signature, lambda spec, target: self.builder.build(spec, target), options.describe)
        self.launches: dict[Any, Callable[..., Any]] = {}
        self.watched: tuple[Watch, ...] = ()  # where the values of the kernels in `launches` were read from
        self.watched_texts: tuple[str | None, ...] = ()  # their texts, as read then (fingerprint.watched_texts)
        self.guard_lock = locks.Lock()  # `launches`, `watched` and the fast path's guard change together
        self.building: dict[Any, locks.Lock] = {}  # key -> the lock of the thread building its launch
        self.misses = 0
        self.plan = plan_call(signature)
        self.fast_path_source = render_fast_path(self.plan)
        self.fast_path = build_fast_path(self.plan, self.fast_path_source, self.launches, self.slow)
        self.key = self.fast_path.key
        self.helpers_ready = False

    @functools.cached_property
    def builder(self) -> KernelBuilder:
        """Elaboration, lowering and nvcc: TileLang is imported here, on the first true miss."""
        from tltyped.backend.compiler import KernelBuilder
        from tltyped.frontend.elaborate import Elaborator  # TileLang's AST rewrite of the body runs once, here

        return KernelBuilder(self.signature, self.options, Elaborator(self.fn, self.signature, self.reread).elaborate)

    # -- the slow path -------------------------------------------------------------

    def load_helpers(self) -> None:
        """On the first call or compile: build and load the C helpers (once per machine), and read tensors with them."""
        if not self.helpers_ready:
            tensors.load_helpers()
            with self.guard_lock:  # the C cached call the fast path may now forward to takes its guard
                self.fast_path.read_with(tensors.tensor_facts())
            self.helpers_ready = True

    def slow(self, *args: Any) -> Any:
        return self.run(args, self.launches)

    def run(self, args: tuple[Any, ...], launches: dict[Any, Callable[..., Any]], pinned: Pin | None = None) -> Any:
        """A call the fast path missed: checked, then launched (and its launch stored under its key in `launches`),
        or handed to autograd or a tracer (torch_op.py). A compiled kernel's call (`pinned`) is refused unless it is
        of the kernel's specialisation and target, as TileLang's compiled kernels refuse it; then an eager call
        launches the compiled kernel itself, and one autograd records or a tracer traces is the kernel's torch op
        (of the same specialisation)."""
        self.misses += 1
        self.load_helpers()
        if pinned is None and not unchanged(self.watched):  # a value the kernels were built from was rebound
            self.recheck()
        bound = None if pinned is None else self.check_pinned(args, pinned)
        if tensors.forward_ad_open():
            from tltyped.callpath import torch_op

            torch_op.refuse_tangents(self, args)
        given = [a for p, a in zip(self.signature.params, args) if p.kind is Kind.TENSOR and issubclass(type(a), torch.Tensor)]
        if torch.is_grad_enabled() and any(t.requires_grad for t in given):
            from tltyped.callpath import torch_op

            return torch_op.autograd_call(self, args)
        # a tracer's tensors, or torch.jit.trace's: the op. (torch dispatches an op on its tensors: a call of none is
        # launched, its outputs made of Python values alone, which the trace takes for constants anyway.)
        if any(traced(t) for t in given) or (given and tensors.jit_tracing()):
            from tltyped.callpath import torch_op

            return torch_op.traced_call(self, args)
        if bound is None:  # a pinned call's is bound already
            bound = self.binder.bind(args, allow_meta=True)
        if bound.device is not None and bound.device.type == "meta":
            return unpack(self.outputs(bound))
        if bound.device is None:  # no tensor says where: the current device, as the fast path's facts say
            if not torch.cuda.is_available():
                raise LaunchError(f"{self.signature.name}: no CUDA device is available to run the kernel on")
            bound.device = torch.device("cuda", torch.cuda.current_device())
        device = bound.device.index
        assert device is not None
        stream = self.stream(bound)
        key = self.key(*args)
        packed = frozenset(p.name for p in self.signature.tensors if is_packed(bound.dtypes[p.name]))
        if packed and not self.plan.serves(packed):  # the fast paths would read its packed sizes as logical ones
            key = (_SLOW_PATH_ONLY, key)  # a key they never make: this call's launch is the slow path's alone
        launch = launches.get(key)
        if launch is None and pinned is not None:
            launch = launches.setdefault(key, pinned.launch)  # checked: this key is the compiled kernel's
        elif launch is None:
            with self.building.setdefault(key, locks.Lock()):
                try:
                    launch = launches.get(key)
                    if launch is None:
                        watched = fingerprint(self.fn).watched  # read before the kernel is taken (see `keep`)
                        texts = watched_texts(watched)
                        launch = self.make_launch(bound, stream)
                        self.keep(key, launch, watched, texts)
                finally:
                    self.building.pop(key, None)  # threads still waiting hold the lock object itself
        call_tensors = [bound.values[p.name] for p in self.signature.tensors]  # the launch bumps the versions of
        return launch(*self.launch_args(bound), stream, device, *call_tensors)  # those its kernel writes

    def recheck(self) -> None:
        """A place the kernels in `launches` read a value from holds another object: where each such object has the
        text of the one it replaces (a global rebound to an equal value), the launches are kept and the fast path
        serves them while the places hold the new objects; else they are forgotten."""
        with self.guard_lock:
            if unchanged(self.watched):  # another thread rechecked first
                return
            alike = rebound_alike(self.watched, self.watched_texts)
            if alike is None:
                self.forget_launches()
            else:
                self.watched = alike
                self.fast_path.guard_with(alike)

    def keep(self, key: Any, launch: Callable[..., Any], watched: tuple[Watch, ...], texts: tuple[str | None, ...]) -> None:
        """Store `launch` under `key`, its kernel built from the values read from `watched` (their `texts`), and
        serve `launches` while those places hold them. Launches stored before from values rebound meanwhile (by
        another thread, while this kernel was built) are forgotten first: the new guard would serve them."""
        with self.guard_lock:
            if not unchanged(self.watched) and rebound_alike(self.watched, self.watched_texts) is None:
                self.forget_launches()
            self.launches[key] = launch
            self.watched, self.watched_texts = watched, texts
            self.fast_path.guard_with(watched)

    def forget_launches(self) -> None:
        """Empty `launches`, so that each key's next call takes its kernel anew, built from the values as they are."""
        self.launches.clear()
        self.watched, self.watched_texts = (), ()
        self.fast_path.guard_with(())

    def check_pinned(self, args: tuple[Any, ...], pinned: Pin) -> Bound:
        """The call bound, unless its dims, dtypes or layout (its inputs'), or the target of the device it runs on,
        are not the compiled kernel's: refused, naming each difference. Under torch.jit.trace, read with tracing
        paused (`tensors.jit_trace_paused`): the call is the kernel's op, which the trace records alone."""
        with tensors.jit_trace_paused():
            bound = self.binder.bind(args, allow_meta=True)
        called = self.specialization(bound, self.consts(bound))
        inputs = {p.name for p in self.signature.tensors}
        called = dataclasses.replace(called, dtypes={n: d for n, d in called.dtypes.items() if n in inputs})
        differences = pinned.spec.differences(called, bound.dim_origin)
        device = bound.device or (torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else None)
        if device is not None and device.type == "cuda":  # no tensor says where: the current device, as `run` takes
            arch, built = targets.resolve(self.target, device)["arch"], pinned.target["arch"]
            if arch != built:
                differences.append(Difference("target", f"{arch} ({device})", built))
        if differences:
            error = ArgumentTypeError if any(d.subject.endswith("dtype") for d in differences) else ArgumentValueError
            raise error(f"{self.signature.name}: the call is not what this compiled kernel was built for: "
                        + "; ".join(f"{d.subject} {d.called}, built for {d.built}" for d in differences))
        return bound

    def outputs(self, bound: Bound) -> list[torch.Tensor]:
        """The outputs a call allocates and returns, made with no data (on meta, or fake under a tracer), shaped as
        the kernel of the call's specialisation allocates them: a call with meta tensors returns them, and they are
        the fake implementation of the kernel's torch op (torch_op.py)."""
        from tltyped.types.dtypes import as_dtype, packed_output_sizes, to_torch

        return [torch.empty(packed_output_sizes(shape) if is_packed(as_dtype(dtype)) else shape, dtype=to_torch(dtype),
                            device=bound.device)  # a sub-byte output: its packed storage, as the launcher allocates it
                for shape, dtype in self.returned(bound, self.consts(bound))]

    def returned(self, bound: Bound, consts: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
        """The shapes and dtypes the call's kernel returns, read from its elaboration. With tuned consts, the first
        candidate's that elaborates, once every candidate has been seen to return the same (the fake outputs stand
        for the tuner's choice, and a call's result must not depend on timing)."""
        from tltyped.frontend.elaborate import returned_shapes  # imports TileLang

        inputs = sum(p.is_runtime for p in self.signature.params)
        sizes = {d: bound.dims[d] for d in self.signature.dyn_dims}
        scalars = {p.name: bound.values[p.name] for p in self.signature.params if p.kind is Kind.DYN}

        def of(config: dict[str, Hashable]) -> list[tuple[tuple[Any, ...], str]]:
            elaborated = self.builder.checked_elaboration(self.specialization(bound, {**consts, **config}))
            return [(tuple(shape), dtype) for shape, dtype in returned_shapes(self.signature.name, elaborated, inputs, sizes, scalars)]

        configs = candidates(consts)  # [{}] where nothing is tuned
        space = self.specialization(bound, consts)  # the tuned consts are still `Tune`s here
        seen = json.dumps(records.describe(space), sort_keys=True)
        verify = len(configs) > 1 and seen not in self.outputs_agree
        reference: tuple[dict[str, Hashable], list[tuple[tuple[Any, ...], str]]] | None = None
        failure: Exception | None = None
        for config in configs:
            try:
                outputs = of(config)
            except DefinitionError:  # the kernel's definition is wrong, whichever candidate showed it
                raise
            except Exception as error:  # a candidate that cannot be built: the tuner reports it, and never picks it
                failure = failure or error
                continue
            if reference is None:
                reference = config, outputs
                if not verify:
                    break
            elif outputs != reference[1]:
                raise DefinitionError(
                    f"{self.signature.name}: the tuned consts decide what the kernel returns ({reference[0]}: "
                    f"{_shapes(reference[1])}; {config}: {_shapes(outputs)}); a tuning space chooses among "
                    "schedules of one computation: make the value an untuned const"
                )
        if reference is None:
            assert failure is not None
            raise failure
        if verify:
            self.outputs_agree.add(seen)
        return reference[1]

    def stream(self, bound: Bound) -> int:
        """The raw current stream of the call's device, read by the same facts function as the fast path."""
        given = [bound.values[p.name] for p in self.signature.tensors]
        if not given:
            with torch.cuda.device(bound.device):
                return int(torch.cuda.current_stream().cuda_stream)
        ranks = bytes(t.dim() for t in given)
        return int(tensors.tensor_facts()(ranks, *given)[1])

    def make_launch(self, bound: Bound, stream: int) -> Callable[..., Any]:
        """The launch of the call's kernel (`run` keeps it, with where its values were read from)."""
        device = bound.device
        assert device is not None and device.index is not None
        consts = self.consts(bound)
        if tuned(consts):
            consts.update(self.tune(bound, consts, stream))
        return self.kernel(bound, consts, device).launch

    def tune(self, bound: Bound, consts: dict[str, Any], stream: int) -> dict[str, Hashable]:
        """The fastest configuration of the call's tuning spaces: chosen before in this process, saved on disk, or
        searched now."""
        device = bound.device
        assert device is not None and device.index is not None
        name = self.signature.name
        configs = candidates(consts)
        space = self.specialization(bound, consts)  # the tuned consts are still `Tune`s here
        target = targets.resolve(self.target, device)
        gpu = torch.cuda.get_device_name(device)
        chosen = self.kernels.chosen(space, target, gpu, configs)
        if chosen is not None:
            return chosen
        self.returned(bound, consts)  # every candidate returns alike, or the call is refused
        failed: dict[int, Exception] = {}  # candidate index -> why it could not be built
        self.build_candidates(configs, bound, consts, device, failed)

        # Timing runs each candidate many times: it writes copies of the call's tensors the candidate writes (an
        # accumulating or in-place kernel would otherwise add into them each time), and the call's own tensors
        # see one launch, the winner's. (A `ptr` is an address of unknown extent: not copied.)
        copies: dict[str, torch.Tensor] = {}
        tensor_params = {p.name for p in self.signature.params if p.kind is Kind.TENSOR}

        def prepare(config: dict[str, Hashable]) -> Callable[[], float]:
            index = configs.index(config)
            if index in failed:
                raise failed[index]
            kernel = self.kernel(bound, {**consts, **config}, device)
            for name in kernel.written:
                if name in tensor_params and name not in copies:
                    copies[name] = memory_copy(bound.values[name])
            args = self.launch_args(bound, copies)
            return lambda: time_call(lambda: kernel.launch(*args, stream, device.index), device.index)

        return self.kernels.choose(space, target, gpu, configs, search(name, configs, prepare).as_record(configs))

    def chosen_consts(self, args: list[Any], consts: dict[str, Any]) -> dict[str, Any]:
        """The consts of a call of these arguments with each tuned one as the value its tuning chose (the call has
        run, so the search has: `ctx.consts`); as they are where the call's tensors have no data (a tracer's, meta).
        A `torch.func` transform's tensors are the kernel's call's once unwrapped."""
        bound = self.binder.bind([unwrapped(a) for a in args], allow_meta=True)
        if bound.device is None or bound.device.type != "cuda" or any(
                without_data(bound.values[p.name]) for p in self.signature.tensors):
            return dict(consts)
        return {**consts, **self.tune(bound, consts, self.stream(bound))}

    def build_candidates(
        self, configs: list[dict[str, Hashable]], bound: Bound, consts: dict[str, Any], device: torch.device,
        failed: dict[int, Exception],
    ) -> None:
        """Build every candidate at once; record those that fail in `failed` (re-raised when the candidate is
        measured, and reported)."""
        builds = [functools.partial(self.kernel, bound, {**consts, **config}, device) for config in configs]
        results = build_in_parallel(self.signature.name, builds)
        failed.update((index, result) for index, result in enumerate(results) if isinstance(result, Exception))

    def launch_args(self, bound: Bound, instead: Mapping[str, torch.Tensor] | None = None) -> list[Any]:
        """The launch's runtime arguments, a tensor in `instead` launched in place of the call's of that name."""
        instead = instead or {}
        values = [
            instead.get(p.name, bound.values[p.name]).data_ptr() if p.kind is Kind.TENSOR else bound.values[p.name]
            for p in self.signature.params if p.is_runtime
        ]
        return values + [bound.dims[d] for d in self.signature.dyn_dims]

    # -- kernels -------------------------------------------------------------------

    def consts(self, bound: Bound) -> dict[str, Any]:
        return {p.name: bound.values[p.name] for p in self.signature.params if p.kind is Kind.CONST}

    def specialization(self, bound: Bound, consts: dict[str, Any]) -> Specialization:
        """What the call's kernel is built for. A tracer's symbolic size (a SymInt) in a const dim or a stride (a
        non-contiguous view of a tensor with a dynamic size) is specialised on, as `int()` tells the tracer: both
        are static, fixed into the kernel, which TileLang builds from ints."""
        const_dims = {d: int(v) for d, v in bound.dims.items() if not self.signature.dims[d]}
        strides = {name: None if given is None else tuple(int(s) for s in given) for name, given in bound.strides.items()}
        return Specialization(consts, const_dims, dict(bound.dtypes), strides)

    def kernel(self, bound: Bound, consts: dict[str, Any], device: torch.device) -> CompiledKernel[..., Any]:
        """The compiled kernel of one specialisation and target, built or loaded once per process."""
        return self.kernels.get(self.specialization(bound, consts), targets.resolve(self.target, device))

    # -- inspection ----------------------------------------------------------------

    def bind_for_inspection(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Specialization, dict[str, Any]]:
        """The specialisation and target a call with these arguments (meta tensors allowed) would use."""
        return self.inspected(self.binder.bind(inspection_arguments(self.signature, args, kwargs, self.binder.env), allow_meta=True))

    def inspected(self, bound: Bound) -> tuple[Specialization, dict[str, Any]]:
        """The specialisation and target of a bound call, the first candidate of any tuning space standing for all."""
        return self.specialization(bound, first_candidates(self.consts(bound))), targets.resolve(self.target, bound.device)

    def lower(self, *args: Any, **kwargs: Any) -> LoweredKernel:
        return self.builder.lower(*self.bind_for_inspection(args, kwargs))

    def get_tir(self, *args: Any, **kwargs: Any) -> Any:
        """TileLang's PrimFunc of the kernel a call with these arguments runs, elaborated but not lowered."""
        return self.builder.elaborate(self.bind_for_inspection(args, kwargs)[0]).prim_func

    def compile(self, *args: Any, **kwargs: Any) -> CompiledKernel[..., Any]:
        """The kernel a call with these arguments runs, built now or loaded from the disk cache; callable with the
        call's runtime arguments (its consts those given here), as TileLang's compiled kernels are: through a fast
        path of its own, which launches this kernel and no other."""
        self.load_helpers()
        spec, target = self.bind_for_inspection(args, kwargs)
        kernel = self.kernels.load_or_build(spec, target)
        params = self.signature.params
        runtime = [p for p in params if p.is_runtime]
        takes = inspect.Signature([inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY if p.keyword_only else
                                                     inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default)
                                   for p in runtime])  # as the kernel takes them, by position or name
        launches: dict[Any, Callable[..., Any]] = {}
        pin = Pin(spec, target, kernel.launch)
        fast = build_fast_path(self.plan, self.fast_path_source, launches, lambda *given: self.run(given, launches, pin)).call
        functools.update_wrapper(fast, self.fn)
        _hook_dynamo(fast)  # traced as one call, as the jit function's own fast path is
        by_name = any(p.keyword_only for p in runtime)

        def call(*args: Any, **kwargs: Any) -> Any:
            if kwargs or len(args) != len(runtime) or by_name:  # bound as Python binds a call
                try:
                    bound = takes.bind(*args, **kwargs)
                except TypeError as exc:
                    shown = python_parameters(runtime, {})
                    raise ArgumentTypeError(f"{self.signature.name}: the compiled kernel takes ({shown}): {exc}") from None
                bound.apply_defaults()
                args = tuple(bound.arguments.values())
            given = iter(args)
            return call_in_order(fast, params, [next(given) if p.is_runtime else spec.consts[p.name] for p in params])

        def profile(supply: Any) -> Any:
            from tltyped.callpath.profiler import profiler  # imports TileLang

            strided = [f"{name} with strides {strides}" for name, strides in spec.strides.items() if strides is not None]
            if strided:
                raise ArgumentValueError(f"{self.signature.name}: TileLang's Profiler makes contiguous inputs, and this "
                                         f"kernel was built for {', '.join(strided)}; time its call on such tensors")
            return profiler(call, runtime, spec, supply)

        return dataclasses.replace(kernel, call=call, profile=profile)

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self.fast_path.hits(), self.misses, self.kernels.compiles, self.kernels.disk_hits, len(self.launches))

    def register_autograd(self, backward: Callable[..., Any], setup_context: Callable[..., Any] | None = None) -> None:
        """Give the kernel a backward, as `torch.library.register_autograd` takes one: `setup_context(ctx, inputs,
        output)` with the kernel's runtime arguments and its result, `backward(ctx, *grads)` returning a gradient
        (or None) per runtime argument: the backward of the calls autograd records from now on (torch_op.py)."""
        from tltyped.callpath.torch_op import Autograd

        self.autograd = Autograd.of(self.signature.name, backward, setup_context)

    def exposed(self) -> Any:
        """The fast path as users hold it (see `expose`)."""
        return expose(self.fast_path.call, self.fn, self)


class Inspectable(Protocol):
    """What a jit function's fast path carries besides its call: a Dispatcher, or a Router of them."""

    signature: KernelSignature
    fast_path_source: str

    def lower(self, *args: Any, **kwargs: Any) -> LoweredKernel: ...

    def get_tir(self, *args: Any, **kwargs: Any) -> Any: ...

    def compile(self, *args: Any, **kwargs: Any) -> CompiledKernel[..., Any]: ...

    def cache_info(self) -> CacheInfo: ...

    def register_autograd(self, backward: Callable[..., Any], setup_context: Callable[..., Any] | None = None) -> None: ...


def expose(call: Any, fn: Callable[..., Any], owner: Inspectable) -> Any:
    """`call` (the fast path: the C cached call or a generated function) named like `fn`, carrying `owner`'s
    `signature`, `fast_path_source`, `lower`, `compile`, `cache_info`, `register_autograd` and TileLang's
    `get_kernel_source`, `get_tir` and `par_compile` as attributes, so that a cached call costs one call and no
    more; and Dynamo's hook."""
    functools.update_wrapper(call, fn)
    call.signature = owner.signature
    call.fast_path_source = owner.fast_path_source
    call.lower = owner.lower
    call.get_tir = owner.get_tir
    call.compile = owner.compile
    call.par_compile = functools.partial(par_compile, owner.signature.name, owner.compile)
    call.cache_info = owner.cache_info
    call.register_autograd = owner.register_autograd
    call.get_kernel_source = functools.partial(_kernel_source, owner)
    call._dispatcher = owner
    _hook_dynamo(call)
    return call


_SLOW_PATH_ONLY = object()
"""Marks the key of a launch the fast paths must not serve (a packed tensor they would read wrong: plan.py)."""

_EXPOSED: weakref.WeakSet[Any] = weakref.WeakSet()
"""Every exposed jit function, for Dynamo to take as what it is (torch_op.allow_in_graph) once it runs."""


def _hook_dynamo(call: Any) -> None:
    """Let Dynamo trace calls of `call`, which it cannot trace into, as one call in its graph (torch_op.py says how):
    the attributes of torch's script-if-tracing wrappers make Dynamo trace `traced` instead, whose `register`
    Dynamo runs for real, as a function of constant result, before it reaches `entry`. `call` is told apart from
    an lru_cache wrapper before Dynamo first meets it: now if Dynamo is loaded, else as it loads (never imported
    here)."""

    def entry(*args: Any, **kwargs: Any) -> Any:
        return call(*args, **kwargs)

    def register(exposed: Iterable[Any] = _EXPOSED) -> None:
        from tltyped.callpath.torch_op import allow_in_graph

        allow_in_graph(entry, exposed)

    def traced(*args: Any, **kwargs: Any) -> Any:
        register()
        return entry(*args, **kwargs)

    # Dynamo guards a graph traced through `traced` on the code objects of `entry` and `register`, not on the
    # functions: each kernel's `entry` gets a code object of its own, so that a graph traced with one kernel is
    # not replayed for another reached by the same code (two instances of one module class).
    entry.__code__ = entry.__code__.replace()
    _EXPOSED.add(call)
    register._dynamo_marked_constant = True  # type: ignore[attr-defined]  # torch._dynamo.assume_constant_result
    functools.update_wrapper(entry, call)
    setattr(call, "__script_if_tracing_wrapper", True)
    setattr(call, "__original_fn", traced)
    if "torch._dynamo" in sys.modules:
        register((call,))
    else:
        from tltyped.callpath.import_hook import tell_apart_when_dynamo_loads

        tell_apart_when_dynamo_loads(_EXPOSED)


def _shapes(outputs: list[tuple[tuple[Any, ...], str]]) -> str:
    """Returned outputs as an error shows them: `(4, n) float32, (n,) float16`."""
    return ", ".join(f"{shape} {dtype}" for shape, dtype in outputs) or "nothing"


def _kernel_source(owner: Inspectable, *args: Any, **kwargs: Any) -> str:
    """`fn.get_kernel_source(*args)`, as TileLang's jit functions have it: the CUDA of the kernel such a call runs."""
    return owner.compile(*args, **kwargs).cuda_source
