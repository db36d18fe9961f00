"""Call sites of jit functions, checked against the kernel's own signature.

`@tl.jit` gives `JitFunction[P, R]`, whose `__call__(*args: P.args,
**kwargs: P.kwargs) -> R` type checkers without the plugin check as a call of
the kernel itself. With the plugin, a call is checked in two steps:
- the signature hook gives mypy the kernel's parameters (from P), each typed
  `Any`: argument count and names get mypy's usual checks and messages;
- the return hook then checks each argument against its parameter, so that
  every message names the parameter: a tensor parameter takes any torch
  tensor, and an argument typed `tl.Tensor[...]` (each member of a Union of
  them) is compared with it: dtype (a dtype given by a const parameter,
  `C: T.Tensor[[M, N], out_dtype]`, is the dtype that argument names; a
  caller's dtype variable fits a fixed dtype only if it can be no other, and
  a constrained dtype variable takes only its dtypes), rank, literal dims,
  and dims shared between arguments (a K of 512 and one of 256 cannot both
  bind); other arguments are checked by callvalues.py (type, hashability,
  `tl.tune` candidates). Then it solves the return type's dims and dtypes
  from what the arguments bound.
The arguments a `*args` or `**kwargs` holds (a tuple's or NamedTuple's items,
a list's item type) are checked as mypy maps them to the parameters: the
plugin never passes a call that plain mypy, checking `JitFunction[P, R]`,
would flag.
Messages name the parameter, the dim or dtype, the expected and found value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mypy import errorcodes
from mypy.argmap import ArgTypeExpander
from mypy.checker import TypeChecker
from mypy.errorcodes import ErrorCode
from mypy.maptype import map_instance_to_supertype
from mypy.messages import format_type
from mypy.nodes import ARG_NAMED, ARG_NAMED_OPT, ARG_OPT, ARG_POS, ARG_STAR, ARG_STAR2, CallExpr, Context, Expression
from mypy.plugin import AttributeContext, CheckerPluginInterface, MethodContext, MethodSigContext
from mypy.subtypes import is_subtype
from mypy.type_visitor import TypeTranslator
from mypy.types import (
    AnyType,
    CallableType,
    FunctionLike,
    Instance,
    LiteralType,
    Parameters,
    ProperType,
    Type,
    TypeAliasType,
    TypeOfAny,
    TypeVarId,
    TypeVarType,
    UnionType,
    get_proper_type,
)

from tltyped.mypy_plugin import names
from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin.annotation_hooks import tensor_parts
from tltyped.mypy_plugin.callvalues import check_value
from tltyped.mypy_plugin.dtype_params import parse as dtype_parameter
from tltyped.mypy_plugin.parsed import dotted_name
from tltyped.mypy_plugin.typeops import dtype_class_of, named_instance
from tltyped.types import dim_grammar


@dataclass(frozen=True)
class Kernel:
    """What a `JitFunction[P, R]` type says about its kernel."""

    params: Parameters
    returns: Type

    @staticmethod
    def of(typ: ProperType) -> Kernel | None:
        if not isinstance(typ, Instance):
            return None
        base = next((b for b in typ.type.mro if b.fullname == names.JIT_FUNCTION), None)
        if base is None:
            return None
        instance = map_instance_to_supertype(typ, base)
        if len(instance.args) != 2:
            return None
        params = get_proper_type(instance.args[0])
        if not isinstance(params, Parameters) or params.is_ellipsis_args:  # `...`: parameters unknown, calls unchecked
            return None
        return Kernel(params, instance.args[1])


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
        kinds += [ARG_NAMED_OPT] * len(dims)
        names_ += dims
        types += [ctx.api.named_generic_type("builtins.int", [])] * len(dims)
    return signature.copy_modified(
        arg_types=types,
        arg_kinds=kinds,
        arg_names=names_,
        ret_type=_Solution({}, {}).translate(kernel.returns) if returns_result else signature.ret_type,
        variables=[],
        name=kernel_name(ctx.context),
        definition=None,  # not JitFunction.__call__'s: mypy would point notes at tltyped.jit
    )


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
    if not isinstance(inspection, Instance) or len(inspection.args) != 2:
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
            else:
                check_value(ctx.api, binder.argument(name), name, formal, expr, actual if starred else None)
    binder.check_derived_dims()
    return binder.solution().translate(kernel.returns)


def _star_expander(api: CheckerPluginInterface) -> ArgTypeExpander | None:
    """What maps the items of a call's `*args` (a tuple's, a NamedTuple's, a list's) and `**kwargs` to the
    parameters, as mypy checks them; None outside mypy's own checker."""
    return ArgTypeExpander(api.expr_checker.argument_infer_context()) if isinstance(api, TypeChecker) else None


def call_inspection(ctx: MethodContext) -> Type:
    """`gemm.lower(...)` / `gemm.compile(...)` take the kernel's arguments: check them alike."""
    call_return(ctx)
    kernel = Kernel.of(ctx.type)
    if kernel is not None and _describes_by_dims(ctx.context, _dims_by_name(kernel.params)):
        params, called = kernel.params, kernel_name(ctx.context)
        missing = [(name, kind) for index, (name, kind, formal) in enumerate(zip(params.arg_names, params.arg_kinds,
                                                                                params.arg_types))
                   if kind in (ARG_POS, ARG_NAMED) and not ctx.args[index] and tensor_parts(get_proper_type(formal)) is None]
        positional = [f'"{name}"' for name, kind in missing if kind == ARG_POS]
        if positional:  # in mypy's words for a call that gives no dims
            plural = "s" if len(positional) > 1 else ""
            ctx.api.fail(f"Missing positional argument{plural} {', '.join(positional)} in call to \"{called}\"",
                         ctx.context, code=errorcodes.CALL_ARG)
        for name, kind in missing:
            if kind == ARG_NAMED:
                ctx.api.fail(f'Missing named argument "{name}" for "{called}"', ctx.context, code=errorcodes.CALL_ARG)
    return ctx.default_return_type


@dataclass
class _DimBinding:
    size: int
    origin: str  # "A, axis 1"


@dataclass
class CallBinder:
    """Binds one call's dims and dtype variables, reporting what cannot bind."""

    api: CheckerPluginInterface
    kernel: str
    given: dict[str, Expression]  # parameter -> the one expression the call gives it
    bound: dict[TypeVarId, Type] = field(default_factory=dict)  # what the return type gets
    sizes: dict[TypeVarId, _DimBinding] = field(default_factory=dict)
    dim_names: dict[str, TypeVarId] = field(default_factory=dict)
    dtypes: dict[TypeVarId, tuple[str, str]] = field(default_factory=dict)  # dtype var -> (dtype, from)
    derived: list[tuple[str, int, str, int, Expression]] = field(default_factory=list)

    def fail(self, message: str, where: Context, code: ErrorCode) -> None:
        self.api.fail(message, where, code=code)

    def argument(self, name: str) -> str:
        return f'Argument "{name}" to "{self.kernel}"'

    # -- tensors ------------------------------------------------------------------------------

    def bind_argument(
        self, name: str, formal_parts: tuple[Type, list[Type] | None], actual: Type, where: Expression
    ) -> None:
        """A tensor parameter's argument: a torch tensor, checked further when typed `tl.Tensor[...]`."""
        if not is_subtype(actual, named_instance(self.api, names.TORCH_TENSOR)):
            dtype, dims = formal_parts
            self.fail(
                f"{self.argument(name)} has incompatible type {format_type(actual, self.api.options)}; "
                f"expected a tensor ({_tensor_text(dtype, dims) if dims is not None else 'Tensor'})",
                where, errorcodes.ARG_TYPE,
            )
            return
        proper = get_proper_type(actual)
        if not isinstance(proper, UnionType):
            self.bind_tensor(name, formal_parts, proper, where)
            return
        for member in proper.items:  # each must fit what the other arguments bound; none binds for them
            self.scratch().bind_tensor(name, formal_parts, member, where)

    def scratch(self) -> CallBinder:
        """A binder that starts from this one's bindings and keeps its own."""
        return CallBinder(
            self.api, self.kernel, self.given, dict(self.bound), dict(self.sizes), dict(self.dim_names), dict(self.dtypes),
        )

    def bind_tensor(self, name: str, formal: tuple[Type, list[Type] | None], actual: Type, where: Expression) -> None:
        actual_parts = tensor_parts(get_proper_type(actual))
        if actual_parts is None:  # a plain torch tensor (or Any): its dtype and dims are checked at run time
            return
        formal_dtype, formal_dims = formal
        actual_dtype, actual_dims = actual_parts
        self.bind_dtype(name, formal_dtype, actual_dtype, where)
        if formal_dims is None or actual_dims is None:
            return
        if len(formal_dims) != len(actual_dims):
            self.fail(
                f"{self.argument(name)} has rank {len(actual_dims)}; expected rank {len(formal_dims)} "
                f"({_tensor_text(formal_dtype, formal_dims)})",
                where, codes.SHAPE,
            )
            return
        for axis, (formal_dim, actual_dim) in enumerate(zip(formal_dims, actual_dims)):
            self.bind_dim(name, axis, formal_dim, actual_dim, where)

    def dtype_argument(self, marker: str) -> Type:
        """The dtype a const parameter names at this call (`out_dtype=T.float16`), else its default's; or Any."""
        param, default = dtype_parameter(marker)
        given = self.given.get(param)
        if given is not None:
            return dtype_class_of(self.api, given)
        if default is not None:
            return named_instance(self.api, names.dtype_class_fullname(default))
        return AnyType(TypeOfAny.special_form)

    def bind_dtype(self, name: str, formal: Type, actual: Type, where: Expression) -> None:
        expected, found = get_proper_type(formal), get_proper_type(actual)
        if isinstance(expected, LiteralType) and isinstance(expected.value, str):  # given by a const parameter
            param = dtype_parameter(expected.value)[0]
            expected = get_proper_type(self.dtype_argument(expected.value))
            if isinstance(expected, Instance) and isinstance(found, Instance):
                if expected.type.fullname != found.type.fullname:
                    self.fail(
                        f"{self.argument(name)} has dtype {_dtype_text(found)}; "
                        f"expected {_dtype_text(expected)} (the dtype {param} names)",
                        where, codes.DTYPE,
                    )
            return
        if isinstance(expected, Instance) and isinstance(found, (Instance, TypeVarType)):
            if _dtypes_of(found) != [expected.type.fullname]:  # a caller's dtype variable fits if it can be nothing else
                self.fail(
                    f"{self.argument(name)} has dtype {_dtype_text(found)}; expected {_dtype_text(expected)}",
                    where, codes.DTYPE,
                )
        elif isinstance(expected, TypeVarType):
            allowed = _dtypes_of(expected)  # a constrained dtype variable's dtypes
            can_be = _dtypes_of(found) if isinstance(found, (Instance, TypeVarType)) else None
            if allowed and can_be is not None and not (can_be and set(can_be) <= set(allowed)):
                self.fail(
                    f"{self.argument(name)} has dtype {_dtype_text(found)}; expected one of "
                    f"{', '.join(names.dtype_display(d) for d in allowed)} (dtype {expected.name})",
                    where, codes.DTYPE,
                )
            elif isinstance(found, Instance):
                seen = self.dtypes.get(expected.id)
                if seen is None:
                    self.dtypes[expected.id] = (_dtype_text(found), name)
                    self.bound[expected.id] = found
                elif seen[0] != _dtype_text(found):
                    self.fail(
                        f"{self.argument(name)} has dtype {_dtype_text(found)}; expected {seen[0]} "
                        f"(dtype {expected.name}, from {seen[1]})",
                        where, codes.DTYPE,
                    )
            elif isinstance(found, TypeVarType):
                self.bound.setdefault(expected.id, found)

    def bind_dim(self, name: str, axis: int, formal: Type, actual: Type, where: Expression) -> None:
        expected, found = get_proper_type(formal), get_proper_type(actual)
        size = _size(found)
        if isinstance(expected, LiteralType) and isinstance(expected.value, int):
            if size is not None and size != expected.value:
                self.fail(
                    f"{self.argument(name)} has size {size} at axis {axis}; expected {expected.value}",
                    where, codes.SHAPE,
                )
        elif isinstance(expected, LiteralType) and isinstance(expected.value, str):
            if size is not None:
                self.derived.append((name, axis, expected.value, size, where))
        elif isinstance(expected, TypeVarType):
            self.dim_names[expected.name] = expected.id
            if size is None:
                if isinstance(found, TypeVarType):
                    self.bound.setdefault(expected.id, found)
                return
            seen = self.sizes.get(expected.id)
            if seen is None:
                self.sizes[expected.id] = _DimBinding(size, f"{name}, axis {axis}")
                self.bound[expected.id] = found
            elif seen.size != size:
                self.fail(
                    f"{self.argument(name)} has size {size} for dim {expected.name} (axis {axis}); "
                    f"expected {seen.size} (from {seen.origin})",
                    where, codes.SHAPE,
                )

    def known_sizes(self) -> dict[str, int]:
        return {dim: self.sizes[var].size for dim, var in self.dim_names.items() if var in self.sizes}

    def check_derived_dims(self) -> None:
        known = self.known_sizes()
        for name, axis, text, size, where in self.derived:
            expected = dim_grammar.evaluate_int(text, known)
            if expected is not None and expected != size:
                self.fail(
                    f"{self.argument(name)} has size {size} at axis {axis}; expected {text} = {expected}",
                    where, codes.SHAPE,
                )

    def solution(self) -> _Solution:
        int_type = self.api.named_generic_type("builtins.int", [])
        return _Solution(self.bound, self.known_sizes(), int_type, self.dtype_argument)


class _Solution(TypeTranslator):
    """A return type with the call's bindings put in: solved dims and dtypes, the rest Any."""

    def __init__(
        self,
        bound: dict[TypeVarId, Type],
        sizes: dict[str, int],
        int_type: Instance | None = None,
        dtype_argument: Callable[[str], Type] | None = None,
    ) -> None:
        super().__init__()
        self.bound = bound
        self.sizes = sizes
        self.int_type = int_type
        self.dtype_argument = dtype_argument

    def translate(self, typ: Type) -> Type:
        return typ.accept(self)

    def visit_type_var(self, t: TypeVarType) -> Type:
        return self.bound.get(t.id, AnyType(TypeOfAny.special_form))

    def visit_type_alias_type(self, t: TypeAliasType) -> Type:
        return get_proper_type(t).accept(self)

    def visit_instance(self, t: Instance) -> Type:
        translated = super().visit_instance(t)
        if not (isinstance(translated, Instance) and translated.type.fullname == names.PLUGIN_TENSOR and translated.args):
            return translated
        return translated.copy_modified(args=[self.dtype(translated.args[0]), *(self.dim(d) for d in translated.args[1:])])

    def dtype(self, dtype: Type) -> Type:
        """A dtype given by a const parameter (a string Literal, see in_body.py) becomes the one the call names."""
        proper = get_proper_type(dtype)
        if not (isinstance(proper, LiteralType) and isinstance(proper.value, str)):
            return dtype
        return self.dtype_argument(proper.value) if self.dtype_argument is not None else AnyType(TypeOfAny.special_form)

    def dim(self, dim: Type) -> Type:
        """A derived dim (a string Literal, see in_body.py) becomes its size once its dims are known."""
        proper = get_proper_type(dim)
        if not (isinstance(proper, LiteralType) and isinstance(proper.value, str)):
            return dim
        size = dim_grammar.evaluate_int(proper.value, self.sizes)
        if size is None or self.int_type is None:
            return AnyType(TypeOfAny.special_form)
        return LiteralType(size, self.int_type)


def _size(typ: ProperType) -> int | None:
    if isinstance(typ, LiteralType) and isinstance(typ.value, int) and not isinstance(typ.value, bool):
        return typ.value
    return None


def _dtypes_of(typ: Instance | TypeVarType) -> list[str]:
    """The dtypes a dtype type can be: a dtype class itself; a TypeVar's values (none: any dtype)."""
    if isinstance(typ, Instance):
        return [typ.type.fullname]
    return [value.type.fullname for value in map(get_proper_type, typ.values) if isinstance(value, Instance)]


def _dtype_text(typ: ProperType) -> str:
    if isinstance(typ, Instance):
        return names.dtype_display(typ.type.fullname)
    if isinstance(typ, LiteralType) and isinstance(typ.value, str):  # given by a const parameter: named by it
        return dtype_parameter(typ.value)[0]
    return str(typ)


def _tensor_text(dtype: Type, dims: list[Type]) -> str:
    parts = [_dtype_text(get_proper_type(dtype))]
    for dim in dims:
        proper = get_proper_type(dim)
        if isinstance(proper, LiteralType):
            parts.append(str(proper.value))
        elif isinstance(proper, TypeVarType):
            parts.append(proper.name)
        else:
            parts.append("Any")
    return f"Tensor[{', '.join(parts)}]"
