"""`@tl.autotune(configs=[...])` above `@tl.jit`: the parameters the configurations set may be left out of a call.

At run time autotune remakes the kernel from a copy of its function whose
configured parameters default to their tuning spaces (tltyped/autotune_configs.py):
tuned consts, each with a default. Its declared type, `Callable[[J], J]`,
keeps the kernel as `@tl.jit` typed it, each of those parameters required
where the `def` gives it no default. So:
- the call `tl.autotune(configs=...)` returns its decorator named
  `AUTOTUNE_APPLIED`, so that mypy calls the plugin again when it is applied
  (as plugin.check_jit does for jit's);
- applied to a kernel (or a lazy-style factory), the `JitFunction[P, R, C]`
  it returns has the configured parameters optional in P, its call and
  inspection (`lower`, `compile`), and none of them in C, the compiled
  kernel's parameters (a tuned parameter is a const).
The configured names are read from the autotune call's source: `configs` a
list or tuple of dict literals with string-literal keys. Any other `configs`
(`configs=get_configs()`) names its parameters only at run time: any const
parameter may be among them, so each may be left out (a call that leaves out
one the configurations do not set fails at run time). What the runtime refuses of literal configs is
reported as a `tl.tune` default's is: a name that is no parameter of the
kernel, a parameter passed at run time, a value that does not fit the
parameter's type.
"""

from __future__ import annotations

from mypy.nodes import (
    ARG_NAMED,
    ARG_NAMED_OPT,
    ARG_OPT,
    ARG_POS,
    CallExpr,
    Context,
    Decorator,
    DictExpr,
    Expression,
    FuncDef,
    ListExpr,
    RefExpr,
    StrExpr,
    TupleExpr,
)
from mypy.plugin import CheckerPluginInterface, FunctionContext
from mypy.types import AnyType, CallableType, Instance, Parameters, Type, TypeOfAny, get_proper_type

from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin import names, runtime_params
from tltyped.mypy_plugin.callvalues import check_tuned_value

_OPTIONAL = {ARG_POS: ARG_OPT, ARG_NAMED: ARG_NAMED_OPT}


def named_decorator(ctx: FunctionContext) -> Type:
    """`tl.autotune(configs=...)`: its decorator, named so that its application reaches `with_configured_defaults`."""
    returned = get_proper_type(ctx.default_return_type)
    return returned.copy_modified(name=names.AUTOTUNE_APPLIED) if isinstance(returned, CallableType) else returned


def with_configured_defaults(ctx: FunctionContext) -> Type:
    """The autotuned kernel: its `JitFunction[P, R, C]` with the configured parameters optional in P and not in C."""
    configs = _configs(ctx.context)
    func = _kernel_def(ctx.context)
    if configs is None:  # named at run time: any const may be among them
        configured = _consts(ctx.api, func) if func is not None else set()
    else:
        if func is not None:
            _check_configs(ctx.api, func, configs)
        configured = {name for config in configs for name, _ in config}
    kernel = get_proper_type(ctx.default_return_type)
    if not configured or not (isinstance(kernel, Instance) and len(kernel.args) == 3):
        return ctx.default_return_type
    params, runtime = (get_proper_type(arg) for arg in (kernel.args[0], kernel.args[2]))
    if not isinstance(params, Parameters) or params.is_ellipsis_args:
        return ctx.default_return_type
    params = params.copy_modified(arg_kinds=[
        _OPTIONAL.get(kind, kind) if name in configured else kind for name, kind in zip(params.arg_names, params.arg_kinds)
    ])
    if isinstance(runtime, Parameters) and not runtime.is_ellipsis_args:
        kept = [i for i, name in enumerate(runtime.arg_names) if name not in configured]
        runtime = runtime.copy_modified(
            arg_types=[runtime.arg_types[i] for i in kept],
            arg_kinds=[runtime.arg_kinds[i] for i in kept],
            arg_names=[runtime.arg_names[i] for i in kept],
        )
    return kernel.copy_modified(args=[params, kernel.args[1], runtime])


def _configs(context: Context) -> list[list[tuple[str, Expression]]] | None:
    """The configurations of the autotune call applied here, each as (parameter, value expression) pairs; None when
    they are not written literally. The call is one of the decorators (`@tl.autotune(configs=...)`), or the callee
    of the application (`tl.autotune(configs=...)(fn)`)."""
    calls = context.decorators if isinstance(context, Decorator) else [context.callee] if isinstance(
        context, CallExpr) else []
    call = next((c for c in calls if isinstance(c, CallExpr) and isinstance(c.callee, RefExpr)
                 and c.callee.fullname == names.AUTOTUNE), None)
    configs = None if call is None else next(
        (arg for arg, name in zip(call.args, call.arg_names) if name == "configs"), None)
    if call is None:
        return []
    if not isinstance(configs, (ListExpr, TupleExpr)):
        return None
    found = []
    for config in configs.items:
        if not isinstance(config, DictExpr) or not all(isinstance(key, StrExpr) for key, _ in config.items):
            return None  # a `**spread` has no key
        found.append([(key.value, value) for key, value in config.items if isinstance(key, StrExpr)])
    return found


def _kernel_def(context: Context) -> FuncDef | None:
    """The function the autotune call is applied to, where the source shows it (`tl.autotune(...)(tl.jit(fn))` too)."""
    if isinstance(context, Decorator):
        return context.func
    target = context.args[0] if isinstance(context, CallExpr) and context.args else None
    while isinstance(target, CallExpr) and target.args:  # jit applied by a call
        target = target.args[0]
    node = target.node if isinstance(target, RefExpr) else None
    return node.func if isinstance(node, Decorator) else node if isinstance(node, FuncDef) else None


def _consts(api: CheckerPluginInterface, func: FuncDef) -> set[str]:
    """The parameters of `func` a configuration may set: those not passed at run time."""
    return {arg.variable.name for index, arg in enumerate(func.arguments)
            if not runtime_params.annotated_runtime(func, index, _declared(func, index), api)}


def _declared(func: FuncDef, index: int) -> Type:
    """The declared type of the parameter at `index` (Any where the function is not annotated)."""
    return func.type.arg_types[index] if isinstance(func.type, CallableType) else AnyType(TypeOfAny.special_form)


def _check_configs(api: CheckerPluginInterface, func: FuncDef, configs: list[list[tuple[str, Expression]]]) -> None:
    """What the runtime refuses of literal configurations: a name that is no parameter, a parameter passed at run
    time (a tensor, dyn scalar or pointer: configurations set consts), a value of the wrong type."""
    parameters = [arg.variable.name for arg in func.arguments]
    for config in configs:
        for name, value in config:
            if name not in parameters:
                api.fail(f'autotune: "{func.name}" has no parameter "{name}"', value, code=codes.TUNE)
                continue
            index = parameters.index(name)
            declared = _declared(func, index)
            if runtime_params.annotated_runtime(func, index, declared, api):
                api.fail(f'Parameter "{name}" is passed at run time (a tensor, dyn scalar or pointer): an autotune '
                         "configuration sets consts", value, code=codes.TUNE)
                continue
            check_tuned_value(api, "Autotune value", name, declared, value)
