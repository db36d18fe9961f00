"""The Dispatcher: the state behind one jit function and its slow path.

    jitfn(*args) -> the generated fast path (fastpath.py): read the tensors'
        facts, build the static key, look it up in `launches`
      hit  -> launch the compiled kernel with data pointers, dyn values and the
              raw current CUDA stream
      miss -> Dispatcher.slow: validate (frontend/binding.py), tune if asked,
              elaborate -> lower -> build (or load from the disk cache), store
              the launch under the key, launch
"""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import torch

from tltyped.autotune import candidates, search, time_call
from tltyped.backend import lower as lowering
from tltyped.backend import target as targets
from tltyped.backend.facts import tensor_facts
from tltyped.backend.launcher import CompiledKernel, compile_kernel
from tltyped.callpath.fastpath import build_fast_path, build_kernel_call, render_fast_path
from tltyped.frontend.analyze import analyze
from tltyped.frontend.binding import Binder, Bound
from tltyped.frontend.elaborate import Elaborator, KernelBuildError, Specialization
from tltyped.frontend.extents import check_extents
from tltyped.frontend.signature import Kind
from tltyped.types.values import describe, typed_key


class CacheInfo(NamedTuple):
    hits: int  # calls served by a kernel already in memory
    misses: int  # calls that took the slow path
    compiles: int  # kernels built in this process (elaborated, lowered, nvcc or disk cache)
    size: int  # static signatures in the in-memory cache


class Dispatcher:
    """One jit function: its analysed signature, fast path, launches, compiled kernels and the slow path.

    `launches` maps a fast-path key to the launch of its kernel; `compiled`
    maps a specialisation (consts, const dims, dtypes, strides, arch) to its
    compiled kernel, shared by every key and tuning candidate that needs it.
    """

    def __init__(self, fn: Callable[..., Any], target: targets.TargetLike) -> None:
        if target is not None:
            targets.normalize(target)  # reject a malformed target at decoration
        self.fn = fn
        self.target = target
        self.signature = analyze(fn)
        self.binder = Binder(self.signature, dict(fn.__globals__))
        self.elaborator = Elaborator(fn, self.signature)
        self.launches: dict[Any, Callable[..., Any]] = {}
        self.compiled: dict[tuple[Any, ...], CompiledKernel] = {}
        self.building: dict[Any, threading.Lock] = {}  # key -> the lock of the thread building its launch
        self.misses = 0
        self.compiles = 0
        self.fast_path_source = render_fast_path(self.signature)
        self.fast_path = build_fast_path(self.signature, self.fast_path_source, self.launches, self.slow)
        self.key = self.fast_path.key

    # -- the slow path -------------------------------------------------------------

    def slow(self, *args: Any) -> Any:
        self.misses += 1
        bound = self.binder.bind(args)
        if bound.device is None:  # no tensor says where: the current device, as the fast path's facts say
            if not torch.cuda.is_available():
                raise RuntimeError(f"{self.signature.name}: no CUDA device is available to run the kernel on")
            bound.device = torch.device("cuda", torch.cuda.current_device())
        device = bound.device.index
        assert device is not None
        stream = self.stream(bound)
        key = self.key(*args)
        launch = self.launches.get(key)
        if launch is None:
            with self.building.setdefault(key, threading.Lock()):
                try:
                    launch = self.launches.get(key)
                    if launch is None:
                        launch = self.launches[key] = self.make_launch(bound, stream)
                finally:
                    self.building.pop(key, None)  # threads still waiting hold the lock object itself
        return launch(*self.launch_args(bound), stream, device)

    def stream(self, bound: Bound) -> int:
        """The raw current stream of the call's device, read by the same facts function as the fast path."""
        tensors = [bound.values[p.name] for p in self.signature.tensors]
        if not tensors:
            with torch.cuda.device(bound.device):
                return int(torch.cuda.current_stream().cuda_stream)
        ranks = bytes(t.dim() for t in tensors)
        return int(tensor_facts(ranks, *tensors)[1])

    def make_launch(self, bound: Bound, stream: int) -> Callable[..., Any]:
        device = bound.device
        assert device is not None and device.index is not None
        consts = self.consts(bound)
        if bound.tuned:
            consts.update(self.tune(bound, consts, stream))
        return build_kernel_call(self.signature, self.kernel(bound, consts, device), device)

    def tune(self, bound: Bound, consts: dict[str, Any], stream: int) -> dict[str, Hashable]:
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
        """Elaborate, check the extents, lower; a failure notes the consts and tensors it was specialised on."""
        try:
            elaborated = self.elaborator.elaborate(spec)
            check_extents(self.signature.name, elaborated.prim_func)
            return lowering.lower(self.signature.name, elaborated, target)
        except (KernelBuildError, lowering.LoweringError) as exc:
            exc.add_note(f"{self.signature.name} was specialised on {self.specialised_on(spec)}")
            raise

    def specialised_on(self, spec: Specialization) -> str:
        """`block=int 0, A: float32[M=256, K]`: the consts and tensors a kernel was built from."""
        parts = [f"{name}={describe(value)}" for name, value in spec.consts.items()]
        for p in self.signature.tensors:
            assert p.tensor is not None
            dims = ", ".join(f"{d.text}={spec.dims[d.text]}" if d.text in spec.dims else d.text for d in p.tensor.dims)
            strides = spec.strides[p.name]
            parts.append(f"{p.name}: {spec.dtypes[p.name].name}[{dims}]" + (f" strides {strides}" if strides else ""))
        return ", ".join(parts)

    def kernel(self, bound: Bound, consts: dict[str, Any], device: torch.device) -> CompiledKernel:
        """The compiled kernel of one specialisation and target, built once per process."""
        spec = self.specialization(bound, consts)
        target = targets.resolve(self.target, device)
        typed = {name: typed_key(value) for name, value in spec.consts.items()}  # 2, 2.0 and True apart
        identity = (_freeze(typed), _freeze(spec.dims), _freeze(spec.dtypes), _freeze(spec.strides), target["arch"])
        kernel = self.compiled.get(identity)
        if kernel is None:
            kernel = compile_kernel(self.lowered(spec, target), self.signature)
            self.compiled[identity] = kernel
            self.compiles += 1
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
        return CacheInfo(self.fast_path.hits(), self.misses, self.compiles, len(self.launches))


def _freeze(mapping: Any) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(mapping.items()))
