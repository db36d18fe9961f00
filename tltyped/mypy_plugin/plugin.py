"""The plugin class: which mypy hook does what, and the supported mypy range.

Hooks, in the order mypy calls them:
- `get_additional_deps` (after parsing): desugar the in-body form (rewrite.py);
- `get_type_analyze_hook` (semantic analysis): read Tensor (`tl.Tensor`,
  `T.Tensor`) and dyn annotations (annotation_hooks.py);
- `get_function_hook("tltyped.jit_function.jit")`, and the same on each stored
  decorator (`hopper = tl.jit(...)`) (type checking): definition checks of
  each kernel (definition.py), its `out_idx` outputs (out_idx.py) and the
  parameters its compiled kernel takes (runtime_params.py);
- `get_function_hook` on `tl.autotune(configs=...)` and on applying what it
  returns (type checking, after `tl.jit`'s, the decorator below it): the
  parameters the configurations set may be left out (autotune.py);
- `get_method_signature_hook` / `get_method_hook` on `JitFunction.__call__`
  (and `CompiledKernel.__call__`): call sites (callsite.py); `lower`, `compile` and `get_kernel_source` alike,
  once `get_attribute_hook` has made each a plain function of the kernel's parameters;
- function hooks on `T.const`, `T.dynamic`, `T.empty`, `T.alloc_global` and
  `tl.tune` (language_hooks.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Final

from mypy.checker import TypeChecker
from mypy.nodes import ARG_STAR, ARG_STAR2, Decorator, MypyFile
from mypy.options import Options
from mypy.plugin import (
    AnalyzeTypeContext,
    AttributeContext,
    CheckerPluginInterface,
    FunctionContext,
    FunctionSigContext,
    MethodContext,
    MethodSigContext,
    Plugin,
    ReportConfigContext,
)
from mypy.types import (
    AnyType,
    CallableType,
    FunctionLike,
    Instance,
    Overloaded,
    Parameters,
    Type,
    TypeOfAny,
    get_proper_type,
)

from tltyped.errors import UnsupportedSetup
from tltyped.mypy_plugin import annotation_hooks, autotune, callsite, language_hooks, names
from tltyped.mypy_plugin.cache_record import CacheRecord
from tltyped.mypy_plugin.definition import check_definition
from tltyped.mypy_plugin.kernel_record import KernelRecord
from tltyped.mypy_plugin.lazy import kernel_objects
from tltyped.mypy_plugin.out_idx import returning_outputs
from tltyped.mypy_plugin.rewrite import rewrite_module
from tltyped.mypy_plugin.runtime_params import with_runtime_params

SUPPORTED_MYPY: Final = ((2, 0), (2, 5))
"""mypy versions the plugin is tested with: >=2.0,<2.5 (it relies on how mypy
parses annotations and checks overloaded decorators, which change between releases)."""


def _source_digest() -> str:
    """A digest of the plugin's code, and of the modules it reads (the dtype table, the dim and in-body
    grammars, the prim_func reader it shares with the stubs, the errors it raises): mypy's cache of checked
    modules is kept only while those are unchanged (mypy itself tracks only the plugin's entry module)."""
    digest = hashlib.sha256()
    package = Path(__file__).parent.parent
    read = [*sorted((package / "types").glob("*.py")), package / "stubs" / "prim_func.py", package / "errors.py"]
    for path in [*sorted(Path(__file__).parent.glob("*.py")), *read]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


class TLTypedPlugin(Plugin):
    """tltyped's mypy plugin; `kernels` keeps what the rewrite found, by FuncDef, for later hooks."""

    def __init__(self, options: Options) -> None:
        if options.num_workers > 0:
            raise UnsupportedSetup(
                "--num-workers (parallel checking) is not supported: the plugin rewrites each module's AST "
                "after parsing, and mypy's parallel workers parse modules again without that step. "
                "Run mypy without --num-workers (and unset MYPY_NUM_WORKERS)."
            )
        super().__init__(options)
        self.kernels: dict[int, KernelRecord] = {}  # by id of a decorated kernel's FuncDef, or of a call applying jit
        self.kernel_modules: set[str] = set()  # modules parsed this run that define kernels
        self.parsed_modules: set[str] = set()  # modules parsed this run (their after-parse hook ran)
        self.stored_decorators: set[str] = set()  # full names of `hopper = tl.jit(...)`
        self.cache_record = CacheRecord.load(options, _source_digest())

    # -- after parsing -------------------------------------------------------------------------

    def get_additional_deps(self, file: MypyFile) -> list[tuple[int, str, int]]:
        self.parsed_modules.add(file.fullname)
        records, stored = rewrite_module(file, self.kernels, self.options)
        self.stored_decorators |= stored
        self.kernels.update(records)
        if records:
            self.kernel_modules.add(file.fullname)
        return []

    def report_config_data(self, ctx: ReportConfigContext) -> Any:
        """What mypy stores with each module's cache entry, and compares on the next run: the plugin's
        own code, and for a module that defines kernels a mark kept only while nothing it could depend on
        changed (cache_record.py)."""
        return self.cache_record.config_data(
            ctx.id,
            ctx.path,
            is_check=ctx.is_check,
            parsed=ctx.id in self.parsed_modules,
            defines_kernels=ctx.id in self.kernel_modules,
        )

    # -- semantic analysis -----------------------------------------------------------------------

    def get_type_analyze_hook(self, fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
        return annotation_hooks.type_analyze_hook(fullname)

    # -- type checking ---------------------------------------------------------------------------

    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        if fullname == names.JIT or fullname in self.stored_decorators:
            return self.check_jit
        if fullname == names.AUTOTUNE:
            return autotune.named_decorator
        if fullname == names.AUTOTUNE_APPLIED:
            return autotune.with_configured_defaults
        if fullname in names.LANGUAGE_DIM_DECLARATIONS:
            return language_hooks.declared_dims
        if fullname in names.LANGUAGE_OUTPUTS or fullname in (names.TILELANG_OUTPUT, names.LANGUAGE_TENSOR):
            return language_hooks.described_tensor
        return None

    def get_function_signature_hook(self, fullname: str) -> Callable[[FunctionSigContext], FunctionLike] | None:
        if fullname == names.TUNE:
            return language_hooks.tune_signature
        if fullname == names.LANGUAGE_TENSOR:
            return language_hooks.tensor_call_signature
        return None

    def get_attribute_hook(self, fullname: str) -> Callable[[AttributeContext], Type] | None:
        if fullname in names.JIT_INSPECTION_METHODS:
            return callsite.inspection_attribute
        return None

    def get_method_signature_hook(self, fullname: str) -> Callable[[MethodSigContext], FunctionLike] | None:
        if fullname in names.JIT_CALLS:
            return callsite.call_signature
        if fullname in names.JIT_INSPECTION_METHODS:
            return partial(callsite.call_signature, returns_result=False)
        return None

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        if fullname in names.JIT_CALLS:
            return callsite.call_return
        if fullname in names.JIT_INSPECTION_METHODS:
            return callsite.call_inspection
        return None

    def check_jit(self, ctx: FunctionContext) -> Type:
        """`tl.jit(...)` and the application of its result to a kernel (as a decorator, or by a call).

        The rewrite turned every `@tl.jit` into `@tl.jit()`, and `tl.jit(fn)` into `tl.jit()(fn)`. Calling `tl.jit()`
        returns the decorator, which is named here after `jit` so that mypy
        calls this hook again when the decorator is applied: that call has the
        decorated function (or the applying call) as its context, and is not one of the speculative
        evaluations mypy makes while choosing among `jit`'s overloads (errors
        reported during those are discarded). The kernel it makes takes and
        returns its `out_idx` tensors as out_idx.py says; a lazy-style
        factory makes kernel objects (lazy.py).
        """
        site = ctx.context
        record = self.kernels.get(id(site.func if isinstance(site, Decorator) else site))
        func = site.func if isinstance(site, Decorator) else record.func if record is not None else None
        if func is not None:
            if check_definition(func, record, ctx.api):
                return _unchecked(ctx.default_return_type)
            if record is None:
                return ctx.default_return_type
            if record.factory_kernel is not None:
                return kernel_objects(ctx.default_return_type, record.factory_kernel, record.out_idx, ctx.api, site)
            kernel = returning_outputs(ctx.default_return_type, record.out_idx, ctx.api, site)
            return with_runtime_params(kernel, func, ctx.api)
        returned = get_proper_type(ctx.default_return_type)
        if isinstance(returned, CallableType):
            return (_typed_decorator(ctx.api) or returned).copy_modified(name=names.JIT)
        return ctx.default_return_type


def _typed_decorator(api: CheckerPluginInterface) -> CallableType | None:
    """What `jit` applied to a function makes, its first overload (`jit(fn) -> JitFunction[P, R]`): the type of every
    decorator `tl.jit(...)` returns here, so that the kernel has the function's own parameters, from which
    `returning_outputs` takes the out_idx ones. jit's overload for `out_idx` itself makes `JitFunction[..., Any]`,
    for checkers that run no plugin (no type can drop a ParamSpec's last parameters)."""
    module = api.modules.get(names.JIT_MODULE) if isinstance(api, TypeChecker) else None
    symbol = module.names.get(names.JIT.rpartition(".")[2]) if module is not None else None
    overloads = get_proper_type(symbol.type) if symbol is not None and symbol.type is not None else None
    return overloads.items[0] if isinstance(overloads, Overloaded) else None


def _unchecked(kernel: Type) -> Type:
    """A kernel whose definition has an error, with its calls left unchecked: what they would report would follow
    from that error (a parameter the body failed to annotate reads as a const, and every tensor passed to it as
    unhashable)."""
    jit_function = get_proper_type(kernel)
    if not (isinstance(jit_function, Instance) and len(jit_function.args) == 3):
        return kernel
    anything = AnyType(TypeOfAny.from_error)
    params = Parameters([anything, anything], [ARG_STAR, ARG_STAR2], [None, None], is_ellipsis_args=True)
    return jit_function.copy_modified(args=[params, anything, params])


def _version_tuple(version: str) -> tuple[int, int]:
    major, _, rest = version.partition(".")
    minor = "".join(c for c in rest.partition(".")[0] if c.isdigit())
    return int(major), int(minor or 0)


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point: `plugins = tltyped.mypy_plugin`."""
    low, high = SUPPORTED_MYPY
    if not low <= _version_tuple(version) < high:
        raise UnsupportedSetup(
            f"this is mypy {version}; the plugin supports mypy >={low[0]}.{low[1]},<{high[0]}.{high[1]}"
        )
    return TLTypedPlugin
