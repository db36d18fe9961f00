"""`@tl.jit`: make a kernel from a Python function.

What `jit` returns is the fast path itself (see tltyped/callpath): the
cached call in C where the signature allows, else the generated Python
function; it carries `lower`, `compile`, `cache_info`, `signature` and
`fast_path_source` as attributes (and TileLang's `get_kernel_source`,
`get_tir`, `par_compile`), so a cached call costs one call and no more.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, overload, runtime_checkable

from typing_extensions import ParamSpec

from tltyped.backend import target as targets
from tltyped.backend.kernel import CompiledKernel
from tltyped.backend.options import BuildOptions
from tltyped.callpath.dispatcher import CacheInfo, Dispatcher, expose
from tltyped.callpath.factory import Factory
from tltyped.callpath.router import Router
from tltyped.errors import DefinitionError
from tltyped.frontend.analyze import analyze
from tltyped.frontend.lazy import is_factory
from tltyped.frontend.signature import KernelSignature
from tltyped.types.source import refuse_other_than_plain_def

if TYPE_CHECKING:
    from tltyped.backend import lower as lowering

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
ByDims_co = TypeVar("ByDims_co", covariant=True)
C = ParamSpec("C", default=...)
Runtime = ParamSpec("Runtime")


class Inspection(Protocol[P, R_co, ByDims_co]):
    """`fn.lower`, `fn.compile` and `fn.get_kernel_source`: called with the kernel's arguments, or with its dims
    by name instead of tensors (`gemm.compile(M=1024, N=1024, K=512)`).

    P cannot name the dims, so the second overload takes int keywords: what a type checker without the plugin
    can check of that form. It returns ByDims, not R: R's dims are the kernel's TypeVars, which only a call
    through P solves (elsewhere they would leak into the caller's types as they are). The mypy plugin checks
    either form against the kernel's own parameters and dims (callsite.py), from the first overload alone.
    """

    @overload
    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    @overload
    def __call__(self, **dims: int) -> ByDims_co: ...


@runtime_checkable
class JitFunction(Protocol[P, R_co, C]):
    """What `@tl.jit` returns: callable like the kernel, plus inspection.

    Generic over the kernel's parameters (P) and result (R), so a type checker
    checks each call, and `lower` / `compile`, against the kernel's own
    signature, and infers the returned tensor's dims from the arguments; and
    over its runtime parameters (C: P without the consts), which the kernel
    `compile` returns takes. Only the mypy plugin can tell them from P
    (`tl.dyn[int]` and a const `int` are both `int`); elsewhere C is `...`.
    """

    signature: KernelSignature
    fast_path_source: str
    __name__: str
    __qualname__: str

    @property
    def __wrapped__(self) -> Callable[P, R_co]: ...

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    @property
    def lower(self) -> Inspection[P, lowering.LoweredKernel, lowering.LoweredKernel]: ...

    @property
    def compile(self) -> Inspection[P, CompiledKernel[C, R_co], CompiledKernel[C, Any]]: ...

    @overload
    def par_compile(
        self, configs: Iterable[Mapping[str, Any] | tuple[Any, ...]], num_workers: int | None = None,
        ignore_error: Literal[False] = False,
    ) -> list[CompiledKernel[C, Any]]: ...

    @overload
    def par_compile(
        self, configs: Iterable[Mapping[str, Any] | tuple[Any, ...]], num_workers: int | None = None, *,
        ignore_error: bool,
    ) -> list[CompiledKernel[C, Any] | None]: ...

    def cache_info(self) -> CacheInfo: ...

    @property
    def get_kernel_source(self) -> Inspection[P, str, str]: ...

    @property
    def get_tir(self) -> Inspection[P, Any, Any]: ...

    def register_autograd(self, backward: Callable[..., Any], setup_context: Callable[..., Any] | None = None) -> None: ...


class KernelObject(JitFunction[P, R_co], Protocol):
    """What a lazy-style factory's call returns: its kernel for those values, called like a JitFunction, with the
    methods of TileLang's kernel objects. It has one specialisation per target, so `lower()` and `compile()` need no
    arguments."""

    arguments: dict[str, Any]  # the factory's, by name

    @property
    def lower(self) -> Callable[..., lowering.LoweredKernel]: ...

    @property
    def compile(self) -> Callable[..., CompiledKernel[P, R_co]]: ...

    @property
    def get_kernel_source(self) -> Callable[..., str]: ...

    def get_profiler(self, tensor_supply_type: Any = None) -> Any: ...


class RuntimeParameters(Protocol[Runtime]):
    """What `runtime_parameters(runtime)` returns: a class generic in Runtime, not a generic callable, of which
    mypy and pyright would solve Runtime at once, the runtime function's dim TypeVars to nothing (mypy: `Need type
    annotation`, pyright: `Unknown`). Kept in Runtime, they are solved by each call of a compiled kernel."""

    def __call__(self, kernel: JitFunction[P, R, ...], /) -> JitFunction[P, R, Runtime]: ...


def runtime_parameters(runtime: Callable[Runtime, Any]) -> RuntimeParameters[Runtime]:
    """Give a jit function's type the parameters its compiled kernels take (`JitFunction`'s C), for type checkers
    that run no plugin: generated stubs write it above `@tl.jit`, with a function of the kernel's runtime
    parameters (templates/stub.pyi.j2). It changes nothing at run time."""

    def typed(kernel: JitFunction[P, R, ...]) -> JitFunction[P, R, Runtime]:
        return cast("JitFunction[P, R, Runtime]", kernel)

    return typed


@overload
def jit(fn: Callable[P, R], /) -> JitFunction[P, R]: ...


@overload
def jit(
    *,
    target: targets.TargetLike = None,
    pass_configs: Mapping[str, Any] | None = None,
    compile_flags: str | Sequence[str] | None = None,
    out_idx: None = None,
    op: str | None = None,
) -> Callable[[Callable[P, R]], JitFunction[P, R]]: ...


@overload
def jit(
    *,
    target: targets.TargetLike = None,
    pass_configs: Mapping[str, Any] | None = None,
    compile_flags: str | Sequence[str] | None = None,
    out_idx: int | Sequence[int] | None,
    op: str | None = None,
) -> Callable[[Callable[..., Any]], JitFunction[..., Any]]:
    """With `out_idx` (one that may be None too: a value not written literally), a call takes the parameters but the
    out_idx ones and returns those: no type can say so of the function's own (a ParamSpec loses only leading
    parameters, through Concatenate), so to a checker reading the kernel's source its calls are unchecked, never
    a false error. The generated stubs (tltyped/stubs) spell its true signature, and the mypy plugin gives it the
    function's own parameters, then takes the out_idx ones out (mypy_plugin/out_idx.py)."""


def jit(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    target: targets.TargetLike = None,
    pass_configs: Mapping[str, Any] | None = None,
    compile_flags: str | Sequence[str] | None = None,
    out_idx: int | Sequence[int] | None = None,
    op: str | None = None,
    **unknown: Any,
) -> Any:
    """Make a kernel: `@tl.jit`, or with TileLang's keywords `@tl.jit(target="sm_90a", pass_configs={...},
    compile_flags=[...], out_idx=[-1])` (`out_idx`: the tensor parameters the kernel allocates and returns
    rather than takes); `op="mylib::rms_norm"` names the torch op tracers see (callpath/torch_op.py)."""
    if unknown:  # most often TileLang's own keywords, carried over from `@tilelang.jit(...)`
        raise DefinitionError(
            f"tl.jit() got the keyword {', '.join(map(repr, unknown))}; it takes target, pass_configs, compile_flags, "
            "out_idx and op (TileLang's execution_backend, target_host, verbose and debug_root_path choose its own "
            "launcher and logs: tltyped compiles and launches through its own, with its log on TLTYPED_LOG=info)"
        )
    decoration = Decoration(targets.explicit(target), BuildOptions.of(pass_configs, compile_flags), out_idx, op)
    return decoration if fn is None else decoration(fn)


@dataclass(frozen=True)
class Decoration:
    """One `@tl.jit(...)`'s arguments: applied to a function, its kernel; kept on it, so `autotune` can make the
    same kernel of the function with other defaults."""

    target: targets.TargetLike
    options: BuildOptions
    out_idx: int | Sequence[int] | None
    op: str | None

    def __call__(self, fn: Callable[..., Any]) -> Any:
        refuse_other_than_plain_def(fn)
        _refuse_methods(fn)
        if is_factory(fn):
            made: Any = Factory(fn, self.out_idx, self.target, self.options, self.op)
        else:
            analysis = analyze(fn, self.out_idx)
            if analysis.signature.is_resolved:
                made = Dispatcher(fn, analysis.signature, self.target, self.options, self.op, reread=analysis.reread).exposed()
            else:
                router = Router(analysis, self.target, self.options, self.op)
                made = expose(router.call, fn, router)
        made._decoration = self
        return made


def _refuse_methods(fn: Callable[..., Any]) -> None:
    """A kernel is a function of its tensors and consts: a method's `self` would be taken for a const (and never
    be given, a jit function being no descriptor). A function of a class body is one when its first parameter is
    `self` or `cls` (a `@staticmethod` above `@tl.jit` is not)."""
    scope = fn.__qualname__.split(".")[:-1]
    first = next(iter(inspect.signature(fn).parameters), None)
    if scope and scope[-1] != "<locals>" and first in ("self", "cls"):
        raise DefinitionError(
            f"{fn.__qualname__}: @tl.jit makes a kernel of a function, not a method (its {first!r}); define the kernel "
            "at module level, or as a @staticmethod above @tl.jit, and call it from the method"
        )


def register_autograd(
    kernel: JitFunction[P, R], backward: Callable[..., Any], setup_context: Callable[..., Any] | None = None,
) -> None:
    """`kernel.register_autograd(backward, setup_context=...)`, as `torch.library.register_autograd(op, ...)` is
    spelled: calls that autograd records then go through the kernel's torch op, and its backward."""
    kernel.register_autograd(backward, setup_context)
