"""A lazy-style jit function: a factory whose calls give kernel objects (see frontend/lazy.py).

    kernel = matmul(1024, 1024, 1024, 128, 128, 32)   # Factory.__call__: the kernel object for these values
    c = kernel(a, b)                                   # the kernel's own fast path, as an eager kernel's

A factory call binds the factory's arguments (consts: hashable, each set of
values one kernel) and returns the kernel object made for those values the
first time, in this process. Making one needs the kernel's signature: from
the disk cache's factory record, keyed like a launch record by the values
the factory reads (its code, closure, globals) and its arguments, or by
running the factory (which imports TileLang) and reading the PrimFunc it
returns, then recording it. So a warm process gets its kernel objects, and
then its kernels (launch records), without running a factory or importing
TileLang.

A factory argument left at a `tl.tune([...])` default (or given one) is
tuned as an eager kernel's const is (dispatcher.py): the kernel object's
first call builds the factory's kernel for every candidate, times each on
that call's tensors and keeps the fastest, saving the result on disk for the
GPU. Its signature, and inspection (`lower`, `compile`), stand on the first
candidate; every candidate's kernel must take and return the same.

The kernel object is a FactoryDispatcher's fast path, carrying what
TileLang's kernel objects offer (`get_kernel_source`, `get_profiler`) beside
tltyped's inspection (`lower`, `compile`, `signature`, `cache_info`). The
factory itself has TileLang's `compile(*arguments)`, `get_tir` and
`par_compile`, and `lower`: each its kernel object's, for those arguments.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tltyped import locks
from tltyped.autotuner import first_candidates
from tltyped.backend import cache, records
from tltyped.backend import target as targets
from tltyped.backend.kernel import CompiledKernel
from tltyped.backend.options import BuildOptions
from tltyped.callpath.dispatcher import CacheInfo, Dispatcher, expose
from tltyped.callpath.parallel import par_compile
from tltyped.errors import Error
from tltyped.frontend.ast_race import surviving_ast_race
from tltyped.frontend.binding import Bound
from tltyped.frontend.fingerprint import Reader, fingerprint
from tltyped.frontend.lazy import bind_factory, out_idx_items, signature_from_json, signature_to_json
from tltyped.frontend.signature import KernelSignature, Specialization

if TYPE_CHECKING:
    from tltyped.backend.compiler import KernelBuilder
    from tltyped.backend.lower import LoweredKernel

logger = logging.getLogger(__name__)

OutIdx = int | Sequence[int] | None


class Factory:
    """What `@tl.jit` returns for a lazy-style function: call it with the factory's arguments for their kernel."""

    def __init__(
        self, fn: Callable[..., Any], out_idx: OutIdx, target: targets.TargetLike, options: BuildOptions, op: str | None = None,
    ) -> None:
        if target is not None:
            targets.normalize(target)  # reject a malformed target at decoration
        if out_idx is not None:
            out_idx_items(fn.__name__, out_idx)  # its form now; its indices against the prim_func's parameters later
        self.fn = fn
        self.op = op  # every kernel object's op is named from it, with the digest of its arguments (torch_op.py)
        self.out_idx = out_idx
        self.target = target
        self.options = options
        self.parameters = inspect.signature(fn)
        self.kernels: dict[tuple[str, ...], Any] = {}  # the factory's arguments, as texts -> their kernel object
        self.backward: tuple[Callable[..., Any], Callable[..., Any] | None] | None = None  # given to every kernel object
        self._lock = locks.Lock()
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arguments = bind_factory(self.fn, self.parameters, args, kwargs)
        key = _kernel_key(arguments)
        kernel = self.kernels.get(key)
        if kernel is None:
            with self._lock:
                kernel = self.kernels.get(key)
                if kernel is None:
                    kernel = self.kernels[key] = self._kernel(arguments)
        return kernel

    def lower(self, *args: Any, **kwargs: Any) -> LoweredKernel:
        """The kernel of these factory arguments, lowered (`factory(*arguments).lower()`), as `compile` builds it."""
        lowered: LoweredKernel = self(*args, **kwargs).lower()
        return lowered

    def compile(self, *args: Any, **kwargs: Any) -> CompiledKernel[..., Any]:
        """TileLang's `factory.compile(*arguments)`: the kernel of these factory arguments, built now or loaded from
        the disk cache (`factory(*arguments).compile()`)."""
        compiled: CompiledKernel[..., Any] = self(*args, **kwargs).compile()
        return compiled

    def get_tir(self, *args: Any, **kwargs: Any) -> Any:
        """TileLang's `factory.get_tir(*arguments)`: the PrimFunc the factory returns for these arguments, as the
        kernel object elaborates it."""
        return self(*args, **kwargs).get_tir()

    def par_compile(
        self, configs: Iterable[Mapping[str, Any] | tuple[Any, ...]], num_workers: int | None = None,
        ignore_error: bool = False,
    ) -> list[CompiledKernel[..., Any] | None]:
        """TileLang's `factory.par_compile(configs)`: `compile` of each set of factory arguments, in parallel
        (callpath/parallel.py)."""
        return par_compile(self.fn.__name__, self.compile, configs, num_workers, ignore_error)

    def _kernel(self, arguments: dict[str, Any]) -> Any:
        # its ops named from the factory's name (torch_op.py), as its siblings' are
        dispatcher = FactoryDispatcher(
            self.fn, self.signature(arguments), self.target, self.options, arguments, self.out_idx, self.op, op_owner=self,
            forget=functools.partial(self._forget, arguments))
        if self.backward is not None:
            dispatcher.register_autograd(*self.backward)
        return dispatcher.exposed()

    def register_autograd(self, backward: Callable[..., Any], setup_context: Callable[..., Any] | None = None) -> None:
        """Dispatcher.register_autograd, for every kernel object the factory has made and makes (the backward gets
        the factory's arguments as `ctx.consts`)."""
        from tltyped.callpath.torch_op import Autograd  # imported by what records or traces a call, not by defining one

        Autograd.of(self.fn.__name__, backward, setup_context)  # refused now, not at a kernel's first call
        with self._lock:
            self.backward = (backward, setup_context)
            for kernel in self.kernels.values():
                kernel.register_autograd(backward, setup_context)

    def _forget(self, arguments: dict[str, Any]) -> None:
        """Drop the kernel object of these arguments, and its factory record: the factory now returns a kernel of
        another signature (a value it reads has changed), and the next call with them runs the factory again."""
        key = self._record_key(arguments)
        if key is not None:
            cache.remove_record(key)
        with self._lock:
            self.kernels.pop(_kernel_key(arguments), None)

    def signature(self, arguments: dict[str, Any]) -> KernelSignature:
        """The signature of the factory's kernel for these arguments: recorded, or read from the PrimFunc it returns
        (for a tuned argument's first candidate: each candidate's kernel must have the same)."""
        key = self._record_key(arguments)
        record = records.read(records.FactoryRecord, key) if key is not None else None
        if record is not None:
            try:
                return surviving_ast_race(lambda: signature_from_json(record.signature))
            except (KeyError, TypeError, ValueError, AttributeError, Error):
                logger.info("%s: factory record %s does not parse; running the factory", self.fn.__qualname__, key)
        from tltyped.frontend.prim_func import run_and_read  # imports TileLang

        _, (signature, _) = surviving_ast_race(lambda: run_and_read(self.fn, first_candidates(arguments), self.out_idx))
        if key is not None:
            records.write(key, records.FactoryRecord(f"{self.fn.__module__}.{self.fn.__qualname__}", signature_to_json(signature)))
        return signature

    def _record_key(self, arguments: dict[str, Any]) -> str | None:
        """The factory record's key: what the factory reads and its arguments, by value; None where one has no stable text."""
        function = fingerprint(self.fn)
        reader = Reader()
        values = {name: reader.text(value) for name, value in arguments.items()}
        if not (function.stable and reader.stable):
            return None
        out_idx = self.out_idx if self.out_idx is None or isinstance(self.out_idx, int) else list(self.out_idx)
        return records.kernel_key(function.digest, {"arguments": values, "out_idx": out_idx}, {}, self.options.describe(), "factory")

    def cache_info(self) -> CacheInfo:
        """The kernels' counts, summed over every kernel object the factory has made."""
        infos = [kernel.cache_info() for kernel in self.kernels.values()]
        return CacheInfo(*(sum(column) for column in zip(*infos))) if infos else CacheInfo(0, 0, 0, 0, 0)


def _kernel_key(arguments: dict[str, Any]) -> tuple[str, ...]:
    """The factory's arguments as `Factory.kernels` keys them: equal values (two `T.dynamic("m")`s too) make one
    kernel; others by identity, held by the Reader's texts."""
    reader = Reader()
    return tuple(reader.text(value) for value in arguments.values())


class FactoryDispatcher(Dispatcher):
    """The Dispatcher of one kernel a factory made: its consts are the factory's arguments, and
    elaborating it runs the factory (frontend/prim_func.py)."""

    def __init__(
        self, fn: Callable[..., Any], signature: KernelSignature, target: targets.TargetLike, options: BuildOptions,
        arguments: dict[str, Any], out_idx: OutIdx, op: str | None = None, op_owner: object | None = None,
        forget: Callable[[], None] = lambda: None,
    ) -> None:
        self.arguments = arguments
        self.out_idx = out_idx
        self.forget = forget
        super().__init__(fn, signature, target, options, op, op_owner)

    @functools.cached_property
    def builder(self) -> KernelBuilder:
        from tltyped.backend.compiler import KernelBuilder
        from tltyped.frontend.prim_func import FactoryElaboration

        elaboration = FactoryElaboration(self.fn, self.arguments, self.out_idx, self.signature, self.forget)
        return KernelBuilder(self.signature, self.options, elaboration)

    def consts(self, bound: Bound) -> dict[str, Any]:
        return dict(self.arguments)

    def bind_for_inspection(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Specialization, dict[str, Any]]:
        """`kernel.lower()` / `kernel.compile()` with no arguments: a factory's kernel has one specialisation per
        target (its dims are literal or dyn, its dtypes fixed), for `TLTYPED_TARGET` or the current GPU."""
        if args or kwargs:
            return super().bind_for_inspection(args, kwargs)
        dtypes = {p.name: p.tensor.dtype.fixed for p in (*self.signature.params, *self.signature.outputs)
                  if p.tensor is not None and p.tensor.dtype.fixed is not None}
        spec = Specialization(first_candidates(self.arguments), {}, dtypes, {p.name: None for p in self.signature.tensors})
        return spec, targets.resolve(self.target, None)

    def get_profiler(self, tensor_supply_type: Any = None) -> Any:
        """TileLang's Profiler of this kernel (`assert_allclose`, `do_bench`), calling it through its fast path."""
        return self.compile().get_profiler(tensor_supply_type)

    def exposed(self) -> Any:
        kernel = expose(self.fast_path.call, self.fn, self)  # its get_kernel_source() compiles the one specialisation
        kernel.get_profiler = self.get_profiler
        kernel.arguments = self.arguments
        return kernel

