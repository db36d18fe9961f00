"""Call sites of jit functions, checked against the kernel's own signature.

`@tl.jit` gives `JitFunction[P, R]`, whose `__call__(*args: P.args,
**kwargs: P.kwargs) -> R` type checkers without the plugin check as a call of
the kernel itself. With the plugin, a call is checked in two steps:
- the signature hook gives mypy the kernel's parameters (from P), each typed
  `Any`: argument count and names get mypy's usual checks and messages;
- the return hook then checks each argument against its parameter, so that
  every message names the parameter: a tensor parameter takes any torch
  tensor, and an argument typed `tl.Tensor[...]` (each member of a Union of
  them) is bound to it by call_binding.py (dtype, rank, literal dims, dims
  shared between arguments); other arguments are checked by callvalues.py
  (type, hashability, `tl.tune` candidates). Then what bound solves the
  return type's dims and dtypes.
The arguments a `*args` or `**kwargs` holds (a tuple's or NamedTuple's items,
a list's item type) are checked as mypy maps them to the parameters: the
plugin never passes a call that plain mypy, checking `JitFunction[P, R]`,
would flag.
Messages name the parameter, the dim or dtype, the expected and found value.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from mypy import errorcodes
from mypy.argmap import ArgTypeExpander
from mypy.checker import TypeChecker
from mypy.maptype import map_instance_to_supertype
from mypy.nodes import ARG_NAMED, ARG_NAMED_OPT, ARG_OPT, ARG_POS, ARG_STAR, ARG_STAR2, ArgKind, CallExpr, Context
from mypy.plugin import AttributeContext, CheckerPluginInterface, MethodContext, MethodSigContext
from mypy.types import (
    AnyType,
    CallableType,
    FunctionLike,
    Instance,
    Parameters,
    ProperType,
    Type,
    TypeOfAny,
    TypeVarType,
    get_proper_type,
)

from tltyped.mypy_plugin import names
from tltyped.mypy_plugin.annotation_hooks import tensor_parts
from tltyped.mypy_plugin.call_binding import CallBinder, Solution
from tltyped.mypy_plugin.callvalues import check_value
from tltyped.mypy_plugin.parsed import dotted_name
from tltyped.mypy_plugin.typeops import is_unread


@dataclass(frozen=True)
class Kernel:
    """What a `JitFunction[P, R, C]` type says about its kernel; or a `CompiledKernel[C, R]` about the kernel
    `compile` gave, called with the runtime parameters C alone."""

    params: Parameters
    returns: Type
    dyn_scalars: frozenset[str] = frozenset()  # the int, float and bool parameters its compiled kernels take

    @staticmethod
    def of(typ: ProperType) -> Kernel | None:
        if not isinstance(typ, Instance):
            return None
        base = next((b for b in typ.type.mro if b.fullname in (names.JIT_FUNCTION, names.COMPILED_KERNEL)), None)
        if base is None:
            return None
        instance = map_instance_to_supertype(typ, base)
        if len(instance.args) < 2:
            return None
        params = get_proper_type(instance.args[0])
        if not isinstance(params, Parameters) or params.is_ellipsis_args or ARG_STAR in params.arg_kinds:
            return None  # `...` (a compiled kernel's, unless the plugin could tell its parameters): calls unchecked
        runtime = get_proper_type(instance.args[2]) if len(instance.args) > 2 else None
        scalars = frozenset(
            name for name, formal in zip(runtime.arg_names, runtime.arg_types)
            if name is not None and _is_scalar(get_proper_type(formal))
        ) if isinstance(runtime, Parameters) and base.fullname == names.JIT_FUNCTION else frozenset()
        return Kernel(params, instance.args[1], scalars)


def _is_scalar(formal: ProperType) -> bool:
    return isinstance(formal, Instance) and formal.type.fullname in ("builtins.int", "builtins.float", "builtins.bool")


def kernel_name(context: Context) -> str:
    """How messages name the kernel: the expression it was called through (`gemm`)."""
    if isinstance(context, CallExpr):
        spelled = dotted_name(context.callee)
        if spelled is not None:
            return spelled
    return "kernel"


def call_signature(ctx: MethodSigContext, *, returns_result: bool = True) -> FunctionLike:
    """The kernel's parameters, each typed Any (the return hook checks the arguments).

    `returns_result`: the method returns what the kernel returns (`__call__`),
    not its own type (`lower`, `compile`).
    """
    kernel = Kernel.of(ctx.type)
    if kernel is None:
        return ctx.default_signature
    params = kernel.params
    signature = ctx.default_signature
    anything: Type = AnyType(TypeOfAny.special_form)
    kinds, names_, types = list(params.arg_kinds), list(params.arg_names), [anything for _ in params.arg_types]
    if not returns_result:
        dims = _dims_by_name(params)
        if _describes_by_dims(ctx.context, dims):  # the tensors may be left out, and mypy cannot say which
            kinds = [ARG_OPT if k == ARG_POS else ARG_NAMED_OPT if k == ARG_NAMED else k for k in kinds]
        kinds = _dyn_scalars_optional(kinds, names_, kernel.dyn_scalars, _positional_count(ctx.context))
        kinds += [ARG_NAMED_OPT] * len(dims)
        names_ += dims
        types += [ctx.api.named_generic_type("builtins.int", [])] * len(dims)
    return signature.copy_modified(
        arg_types=types,
        arg_kinds=kinds,
        arg_names=names_,
        ret_type=Solution({}, {}).translate(kernel.returns) if returns_result else signature.ret_type,
        variables=[],
        name=kernel_name(ctx.context),
        definition=None,  # not JitFunction.__call__'s: mypy would point notes at tltyped.jit_function
    )


def _dyn_scalars_optional(
    kinds: list[ArgKind], names_: list[str | None], scalars: frozenset[str], positional: int
) -> list[ArgKind]:
    """`lower`/`compile` may leave out a dyn scalar, as the run time lets them (no kernel depends on its value): one
    taken by name, or by position where the call's `positional` arguments stop before it or no required positional
    parameter follows it."""
    optional = list(kinds)
    for index in reversed(range(len(kinds))):
        if names_[index] in scalars and kinds[index] == ARG_NAMED:
            optional[index] = ARG_NAMED_OPT
        elif names_[index] in scalars and kinds[index] == ARG_POS and (
                positional <= index or ARG_POS not in optional[index + 1:]):
            optional[index] = ARG_OPT
    return optional


def _positional_count(context: Context) -> int:
    """How many arguments a call passes by position; as many as can be for one with `*args` (or no call)."""
    if not isinstance(context, CallExpr) or ARG_STAR in context.arg_kinds:
        return sys.maxsize
    return sum(kind == ARG_POS for kind in context.arg_kinds)


def _dims_by_name(params: Parameters) -> list[str]:
    """The dims `lower`/`compile` may be given by name instead of tensors (`gemm.compile(M=1024, N=1024,
    K=512)`): each dim variable a tensor parameter names, unless a parameter has its name. A call that names
    a dim may leave out tensors, which the run time then describes from the dims."""
    dims: list[str] = []
    for formal in params.arg_types:
        parts = tensor_parts(get_proper_type(formal))
        for dim in (parts[1] or []) if parts is not None else []:
            found = get_proper_type(dim)
            if isinstance(found, TypeVarType) and found.name not in dims and found.name not in params.arg_names:
                dims.append(found.name)
    return dims


def _describes_by_dims(context: Context, dims: list[str]) -> bool:
    """Whether a `lower`/`compile` call names a dim: it may then leave out the tensors. All its parameters
    are then optional to mypy, whose message for a missing one would name the first optional parameter
    before it, a tensor; `call_inspection` names the missing others."""
    return isinstance(context, CallExpr) and bool(set(context.arg_names) & set(dims))


def inspection_attribute(ctx: AttributeContext) -> Type:
    """`gemm.lower` (`compile`, `get_kernel_source`) as one function of the kernel's parameters, which
    `call_signature` then gives the dims by name. JitFunction declares it an `Inspection`, whose second
    overload takes the dims for checkers without the plugin: left overloaded, a call that fits neither
    would get mypy's "No overload variant matches" instead of the messages naming the argument."""
    inspection = get_proper_type(ctx.default_attr_type)
    if not isinstance(inspection, Instance) or len(inspection.args) != 3:
        return ctx.default_attr_type
    params = get_proper_type(inspection.args[0])
    if not isinstance(params, Parameters) or params.is_ellipsis_args:
        return ctx.default_attr_type
    return CallableType(
        params.arg_types, params.arg_kinds, params.arg_names, inspection.args[1],
        ctx.api.named_generic_type("builtins.function", []), variables=params.variables,
    )


def call_return(ctx: MethodContext) -> Type:
    kernel = Kernel.of(ctx.type)
    if kernel is None:
        return ctx.default_return_type
    return _bound_call(ctx, kernel).translate(kernel.returns)


def _bound_call(ctx: MethodContext, kernel: Kernel) -> Solution:
    """The call's arguments checked against the kernel's parameters, and what binding them solved."""
    params = kernel.params
    given = {
        params.arg_names[index]: exprs[0]
        for index, exprs in enumerate(ctx.args[: len(params.arg_types)])
        if len(exprs) == 1 and ctx.arg_kinds[index][0] not in (ARG_STAR, ARG_STAR2)
    }
    binder = CallBinder(ctx.api, kernel_name(ctx.context), {n: e for n, e in given.items() if n is not None})
    expander = _star_expander(ctx.api)
    for index, formal in enumerate(params.arg_types):
        if index >= len(ctx.arg_types):
            break
        name = params.arg_names[index] or f"#{index + 1}"
        formal_tensor = tensor_parts(get_proper_type(formal))
        for actual, expr, kind in zip(ctx.arg_types[index], ctx.args[index], ctx.arg_kinds[index]):
            starred = kind in (ARG_STAR, ARG_STAR2)
            if starred:  # `*args` / `**kwargs`: this parameter's item of it, as mypy maps them
                if expander is None:
                    continue
                actual = expander.expand_actual_type(actual, kind, params.arg_names[index], params.arg_kinds[index])
            if formal_tensor is not None:
                binder.bind_argument(name, formal_tensor, actual, expr)
            elif not is_unread(formal):
                check_value(ctx.api, binder.argument(name), name, formal, expr, actual if starred else None)
    binder.check_derived_dims()
    return binder.solution()


def _star_expander(api: CheckerPluginInterface) -> ArgTypeExpander | None:
    """What maps the items of a call's `*args` (a tuple's, a NamedTuple's, a list's) and `**kwargs` to the
    parameters, as mypy checks them; None outside mypy's own checker."""
    return ArgTypeExpander(api.expr_checker.argument_infer_context()) if isinstance(api, TypeChecker) else None


def call_inspection(ctx: MethodContext) -> Type:
    """`gemm.lower(...)` / `gemm.compile(...)` take the kernel's arguments: check them alike. What `compile`
    returns, a `CompiledKernel[C, R]`, gets the dtypes the call's consts name (`out_dtype=T.float16`); a
    lazy-style factory's `compile` gives its kernel object compiled, called with the prim_func's tensors."""
    kernel = Kernel.of(ctx.type)
    if kernel is None:
        return ctx.default_return_type
    solution = _bound_call(ctx, kernel)
    if _describes_by_dims(ctx.context, _dims_by_name(kernel.params)):
        params, called = kernel.params, kernel_name(ctx.context)
        missing = [(name, kind) for index, (name, kind, formal) in enumerate(zip(params.arg_names, params.arg_kinds,
                                                                                params.arg_types))
                   if kind in (ARG_POS, ARG_NAMED) and not ctx.args[index] and tensor_parts(get_proper_type(formal)) is None
                   and name not in kernel.dyn_scalars]
        positional = [f'"{name}"' for name, kind in missing if kind == ARG_POS]
        if positional:  # in mypy's words for a call that gives no dims
            plural = "s" if len(positional) > 1 else ""
            ctx.api.fail(f"Missing positional argument{plural} {', '.join(positional)} in call to \"{called}\"",
                         ctx.context, code=errorcodes.CALL_ARG)
        for name, kind in missing:
            if kind == ARG_NAMED:
                ctx.api.fail(f'Missing named argument "{name}" for "{called}"', ctx.context, code=errorcodes.CALL_ARG)
    returned = get_proper_type(ctx.default_return_type)
    if isinstance(returned, Instance) and returned.type.fullname == names.COMPILED_KERNEL:
        made = get_proper_type(kernel.returns)
        if isinstance(made, Instance) and made.type.fullname == names.KERNEL_OBJECT:
            return returned.copy_modified(args=made.args[:2])  # a factory's: its kernel object's, compiled
        return returned.accept(solution.for_compiled_kernel())
    return ctx.default_return_type
