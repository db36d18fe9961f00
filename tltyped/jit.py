"""`@tl.jit`: the call path from a Python call to a launched kernel.

    jitfn(*args) -> generated fast path (codegen/fastpath.py): unpack tensors,
        build the static key, look it up
      hit  -> launch the compiled kernel with data pointers, dyn values and the
              raw current CUDA stream
      miss -> Dispatcher.slow: validate (frontend/binding.py), tune if asked,
              elaborate -> lower -> build (or load from the disk cache), store
              under the key, launch

What `jit` returns is the generated fast-path function itself, carrying
`lower`, `compile`, `cache_info`, `signature` and `fast_path_source` as
attributes, so a cached call costs one Python call and no more.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar, overload, runtime_checkable

import torch
from typing_extensions import ParamSpec

from tltyped.backend import lower as lowering
from tltyped.backend import target as targets
from tltyped.backend.launcher import CompiledKernel, compile_kernel
from tltyped.codegen.fastpath import build_fast_path, build_kernel_call, render_fast_path
from tltyped.frontend.analyze import analyze
from tltyped.frontend.binding import Binder, Bound
from tltyped.frontend.elaborate import Elaborator, Specialization
from tltyped.frontend.signature import KernelSignature, Kind
from tltyped.autotune import candidates, search, time_call

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class CacheInfo(NamedTuple):
    hits: int  # calls served by a kernel already in memory
    misses: int  # calls that took the slow path
    compiles: int  # kernels built in this process (elaborated, lowered, nvcc or disk cache)
    size: int  # static signatures in the in-memory cache


@runtime_checkable
class JitFunction(Protocol[P, R_co]):
    """What `@tl.jit` returns: callable like the kernel, plus inspection."""

    signature: KernelSignature
    fast_path_source: str
    __name__: str
    __qualname__: str

    @property
    def __wrapped__(self) -> Callable[P, R_co]: ...

    def __call__(self, *args: Any, **kwargs: Any) -> R_co: ...

    def lower(self, *args: Any, **kwargs: Any) -> lowering.LoweredKernel: ...

    def compile(self, *args: Any, **kwargs: Any) -> CompiledKernel: ...

    def cache_info(self) -> CacheInfo: ...


@dataclass
class _Counters:
    misses: int = 0
    compiles: int = 0


class Dispatcher:
    """The state behind one jit function: caches, locks and the slow path."""

    def __init__(self, fn: Callable[..., Any], target: targets.TargetLike) -> None:
        if target is not None:
            targets.normalize(target)  # reject a malformed target at decoration
        self.fn = fn
        self.target = target
        self.signature = analyze(fn)
        env = dict(fn.__globals__)
        self.binder = Binder(self.signature, env)
        self.elaborator = Elaborator(fn, self.signature)
        self.cache: dict[Any, Callable[..., Any]] = {}
        self.kernels: dict[tuple[Any, ...], CompiledKernel] = {}
        self.locks: dict[Any, threading.Lock] = {}
        self.counters = _Counters()
        self.hits = itertools.count()
        self.fast_path_source = render_fast_path(self.signature)
        self.key, self.fast = build_fast_path(
            self.signature, self.fast_path_source, self.cache, self.slow, self.hits.__next__
        )

    # -- the slow path -------------------------------------------------------------

    def slow(self, *args: Any) -> Any:
        self.counters.misses += 1
        bound = self.binder.bind(args)
        if bound.device is None:  # no tensor says where: the current device, as the fast path's facts say
            if not torch.cuda.is_available():
                raise RuntimeError(f"{self.signature.name}: no CUDA device is available to run the kernel on")
            bound.device = torch.device("cuda", torch.cuda.current_device())
        key = self.key(*args)
        launch = self.cache.get(key)
        if launch is None:
            with self.locks.setdefault(key, threading.Lock()):
                launch = self.cache.get(key)
                if launch is None:
                    launch = self.cache[key] = self.entry(bound)
        assert bound.device is not None and bound.device.index is not None
        device = bound.device.index
        return launch(*self.launch_args(bound), torch._C._cuda_getCurrentRawStream(device), device)

    def entry(self, bound: Bound) -> Callable[..., Any]:
        device = bound.device
        assert device is not None and device.index is not None
        consts = self.consts(bound)
        if bound.tuned:
            consts.update(self.tune(bound, consts))
        kernel = self.kernel(bound, consts, device)
        return build_kernel_call(self.signature, kernel, device)

    def tune(self, bound: Bound, consts: dict[str, Any]) -> dict[str, Hashable]:
        device = bound.device
        assert device is not None
        configs = candidates(bound.tuned)
        failed: dict[int, Exception] = {}  # id(config) -> why it could not be built

        def prepare(config: dict[str, Hashable]) -> None:
            try:
                self.kernel(bound, {**consts, **config}, device)
            except Exception as exc:  # noqa: BLE001 - re-raised by measure(), which search() reports
                failed[id(config)] = exc

        with ThreadPoolExecutor(max_workers=min(len(configs), os.cpu_count() or 1)) as pool:
            list(pool.map(prepare, configs))  # nvcc runs outside the GIL: build every candidate at once

        def measure(config: dict[str, Hashable]) -> float:
            if id(config) in failed:
                raise failed[id(config)]
            kernel = self.kernel(bound, {**consts, **config}, device)
            launch = build_kernel_call(self.signature, kernel, device)
            args = self.launch_args(bound)
            stream = torch._C._cuda_getCurrentRawStream(device.index)
            return time_call(lambda: launch(*args, stream, device.index), device)

        return search(configs, measure)

    def launch_args(self, bound: Bound) -> list[Any]:
        values = [
            bound.values[p.name].data_ptr() if p.kind is Kind.TENSOR else bound.values[p.name]
            for p in self.signature.params if p.is_runtime
        ]
        return values + [bound.dims[d] for d in self.signature.dyn_dims]

    # -- building kernels ----------------------------------------------------------

    def consts(self, bound: Bound) -> dict[str, Any]:
        return {p.name: bound.values[p.name] for p in self.signature.params if p.kind is Kind.CONST}

    def specialization(self, bound: Bound, consts: dict[str, Any]) -> Specialization:
        const_dims = {d: v for d, v in bound.dims.items() if not self.signature.dims[d]}
        return Specialization(consts, const_dims, dict(bound.dtypes), dict(bound.strides))

    def lowered(self, spec: Specialization, target: dict[str, Any]) -> lowering.LoweredKernel:
        return lowering.lower(self.signature.name, self.elaborator.elaborate(spec), target)

    def kernel(self, bound: Bound, consts: dict[str, Any], device: torch.device) -> CompiledKernel:
        """The compiled kernel of one specialisation and target, built once per process."""
        spec = self.specialization(bound, consts)
        target = targets.resolve(self.target, device)
        identity = (_freeze(spec.consts), _freeze(spec.dims), _freeze(spec.dtypes), _freeze(spec.strides), target["arch"])
        kernel = self.kernels.get(identity)
        if kernel is None:
            kernel = compile_kernel(self.lowered(spec, target), self.signature)
            self.kernels[identity] = kernel
            self.counters.compiles += 1
        return kernel

    # -- inspection ----------------------------------------------------------------

    def bind_for_inspection(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Bound, dict[str, Any]]:
        try:
            call = inspect.signature(self.fn).bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.signature.name}: {exc}") from None
        call.apply_defaults()
        bound = self.binder.bind(tuple(call.arguments.values()), allow_meta=True)
        consts = self.consts(bound)
        for name, space in bound.tuned.items():
            consts[name] = space.values[0]  # inspection shows the first candidate of a tuning space
        return bound, consts

    def lower(self, *args: Any, **kwargs: Any) -> lowering.LoweredKernel:
        bound, consts = self.bind_for_inspection(args, kwargs)
        return self.lowered(self.specialization(bound, consts), targets.resolve(self.target, bound.device))

    def compile(self, *args: Any, **kwargs: Any) -> CompiledKernel:
        return compile_kernel(self.lower(*args, **kwargs), self.signature)

    def cache_info(self) -> CacheInfo:
        hits = int(repr(self.hits)[len("count(") : -1])  # the counter's value, without advancing it
        return CacheInfo(hits, self.counters.misses, self.counters.compiles, len(self.cache))


def _freeze(mapping: Any) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(mapping.items()))


@overload
def jit(fn: Callable[P, R], /) -> JitFunction[P, R]: ...


@overload
def jit(*, target: targets.TargetLike = None) -> Callable[[Callable[P, R]], JitFunction[P, R]]: ...


def jit(fn: Callable[..., Any] | None = None, /, *, target: targets.TargetLike = None) -> Any:
    """Make a kernel: `@tl.jit` or `@tl.jit(target="sm_90a")`."""

    def decorate(fn: Callable[..., Any]) -> Any:
        dispatcher = Dispatcher(fn, target)
        fast: Any = functools.update_wrapper(dispatcher.fast, fn)
        fast.signature = dispatcher.signature
        fast.fast_path_source = dispatcher.fast_path_source
        fast.lower = dispatcher.lower
        fast.compile = dispatcher.compile
        fast.cache_info = dispatcher.cache_info
        fast._dispatcher = dispatcher
        return fast

    return decorate if fn is None else decorate(fn)
