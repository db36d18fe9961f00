"""`@tl.jit`: make a kernel from a Python function.

What `jit` returns is the fast path itself (see tltyped/callpath): the
cached call in C where the signature allows, else the generated Python
function; it carries `lower`, `compile`, `cache_info`, `signature` and
`fast_path_source` as attributes, so a cached call costs one call and no more.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload, runtime_checkable

from typing_extensions import ParamSpec

from tltyped.backend import target as targets
from tltyped.backend.kernel import CompiledKernel
from tltyped.callpath.dispatcher import CacheInfo, Dispatcher
from tltyped.callpath.router import Router
from tltyped.frontend.analyze import analyze
from tltyped.backend.options import BuildOptions
from tltyped.frontend.signature import KernelSignature

if TYPE_CHECKING:
    from tltyped.backend import lower as lowering

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


@runtime_checkable
class JitFunction(Protocol[P, R_co]):
    """What `@tl.jit` returns: callable like the kernel, plus inspection.

    Generic over the kernel's parameters (P) and result (R), so a type checker
    checks each call, and `lower` / `compile`, against the kernel's own
    signature, and infers the returned tensor's dims from the arguments.
    """

    signature: KernelSignature
    fast_path_source: str
    __name__: str
    __qualname__: str

    @property
    def __wrapped__(self) -> Callable[P, R_co]: ...

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def lower(self, *args: P.args, **kwargs: P.kwargs) -> lowering.LoweredKernel: ...

    def compile(self, *args: P.args, **kwargs: P.kwargs) -> CompiledKernel: ...

    def cache_info(self) -> CacheInfo: ...


@overload
def jit(fn: Callable[P, R], /) -> JitFunction[P, R]: ...


@overload
def jit(
    *,
    target: targets.TargetLike = None,
    pass_configs: Mapping[str, Any] | None = None,
    compile_flags: str | Sequence[str] | None = None,
    out_idx: int | Sequence[int] | None = None,
) -> Callable[[Callable[P, R]], JitFunction[P, R]]: ...


def jit(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    target: targets.TargetLike = None,
    pass_configs: Mapping[str, Any] | None = None,
    compile_flags: str | Sequence[str] | None = None,
    out_idx: int | Sequence[int] | None = None,
) -> Any:
    """Make a kernel: `@tl.jit`, or with TileLang's keywords `@tl.jit(target="sm_90a", pass_configs={...},
    compile_flags=[...], out_idx=[-1])` (`out_idx`: the tensor parameters the kernel allocates and returns
    rather than takes)."""
    options = BuildOptions.of(pass_configs, compile_flags)

    def decorate(fn: Callable[..., Any]) -> Any:
        analysis = analyze(fn, out_idx)
        dispatcher: Dispatcher | Router
        if analysis.signature.is_resolved:
            dispatcher = Dispatcher(fn, analysis.signature, target, options)
            call = dispatcher.fast_path.call
        else:
            dispatcher = Router(analysis, target, options)
            call = dispatcher.call
        fast: Any = functools.update_wrapper(call, fn)
        fast.signature = dispatcher.signature
        fast.fast_path_source = dispatcher.fast_path_source
        fast.lower = dispatcher.lower
        fast.compile = dispatcher.compile
        fast.cache_info = dispatcher.cache_info
        fast._dispatcher = dispatcher
        return fast

    return decorate if fn is None else decorate(fn)
