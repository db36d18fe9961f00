"""Call sites of jit functions, checked against the kernel's own signature.

`@tl.jit` gives `JitFunction[P, R]`, whose `__call__` takes `*args: Any` so
that code type-checks without the plugin. With the plugin, a call is checked
in two steps:
- the signature hook gives mypy the kernel's parameters (from P), with each
  tensor parameter widened to `torch.Tensor`: argument count, names and the
  types of scalar parameters get mypy's usual checks and messages, and plain
  torch tensors are accepted;
- the return hook then compares arguments typed `tl.Tensor[...]` with the
  tensor parameters: dtype, rank, literal dims, and dims shared between
  arguments (a K of 512 and one of 256 cannot both bind), then solves the
  return type's dims from what the arguments bound. It also checks that
  const arguments are hashable and that `tl.tune([...])` candidates fit.
Messages name the parameter, the dim or dtype, the expected and found value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mypy.errorcodes import ErrorCode
from mypy.maptype import map_instance_to_supertype
from mypy.messages import format_type
from mypy.nodes import ARG_STAR, ARG_STAR2, CallExpr, Context, Expression, ListExpr, RefExpr, TupleExpr
from mypy.plugin import CheckerPluginInterface, MethodContext, MethodSigContext
from mypy.subtypes import is_subtype
from mypy.type_visitor import TypeTranslator
from mypy.types import (
    AnyType,
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
    get_proper_type,
)

from tltyped.mypy_plugin import dimexpr, names
from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin.annotation_hooks import tensor_parts
from tltyped.mypy_plugin.parsed import dotted_name
from tltyped.mypy_plugin.typeops import expression_type


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
        if not isinstance(params, Parameters):
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
    """The kernel's parameters, tensors widened to `torch.Tensor` (checked in `call_return`).

    `returns_result`: the method returns what the kernel returns (`__call__`),
    not its own type (`lower`, `compile`).
    """
    kernel = Kernel.of(ctx.type)
    if kernel is None:
        return ctx.default_signature
    params = kernel.params
    arg_types = [_widened(t) for t in params.arg_types]
    signature = ctx.default_signature
    return signature.copy_modified(
        arg_types=arg_types,
        arg_kinds=list(params.arg_kinds),
        arg_names=list(params.arg_names),
        ret_type=_Solution({}, {}).translate(kernel.returns) if returns_result else signature.ret_type,
        variables=[],
        name=kernel_name(ctx.context),
        definition=None,  # not JitFunction.__call__'s: mypy would point notes at tltyped.jit
    )


def _widened(typ: Type) -> Type:
    """A tensor parameter accepts any torch tensor at this stage; free dims become Any."""
    proper = get_proper_type(typ)
    if isinstance(proper, Instance) and tensor_parts(proper) is not None:
        torch_tensor = next((b for b in proper.type.mro if b.fullname == names.TORCH_TENSOR), None)
        if torch_tensor is not None:
            return Instance(torch_tensor, [])
    return _Solution({}, {}).translate(typ)


def call_return(ctx: MethodContext) -> Type:
    kernel = Kernel.of(ctx.type)
    if kernel is None:
        return ctx.default_return_type
    binder = CallBinder(ctx.api, kernel_name(ctx.context))
    params = kernel.params
    for index, formal in enumerate(params.arg_types):
        if index >= len(ctx.arg_types):
            break
        name = params.arg_names[index] or f"#{index + 1}"
        formal_tensor = tensor_parts(get_proper_type(formal))
        for actual, expr, kind in zip(ctx.arg_types[index], ctx.args[index], ctx.arg_kinds[index]):
            if kind in (ARG_STAR, ARG_STAR2):
                continue
            if formal_tensor is not None:
                binder.bind_tensor(name, formal_tensor, actual, expr)
            else:
                binder.check_value(name, formal, actual, expr)
    binder.check_derived_dims()
    return binder.solution().translate(kernel.returns)


def call_inspection(ctx: MethodContext) -> Type:
    """`gemm.lower(...)` / `gemm.compile(...)` take the kernel's arguments: check them alike."""
    call_return(ctx)
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

    def bind_dtype(self, name: str, formal: Type, actual: Type, where: Expression) -> None:
        expected, found = get_proper_type(formal), get_proper_type(actual)
        if isinstance(expected, Instance) and isinstance(found, Instance):
            if expected.type.fullname != found.type.fullname:
                self.fail(
                    f"{self.argument(name)} has dtype {_dtype_text(found)}; expected {_dtype_text(expected)}",
                    where, codes.DTYPE,
                )
        elif isinstance(expected, TypeVarType):
            if isinstance(found, Instance):
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
            expected = dimexpr.evaluate(text, known)
            if expected is not None and expected != size:
                self.fail(
                    f"{self.argument(name)} has size {size} at axis {axis}; expected {text} = {expected}",
                    where, codes.SHAPE,
                )

    def solution(self) -> _Solution:
        return _Solution(self.bound, self.known_sizes(), self.api.named_generic_type("builtins.int", []))

    # -- other values -------------------------------------------------------------------------------

    def check_value(self, name: str, formal: Type, actual: Type, where: Expression) -> None:
        if isinstance(where, CallExpr) and isinstance(where.callee, RefExpr) and where.callee.fullname == names.TUNE:
            check_tune_candidates(self.api, name, formal, where)
            return
        if not is_subtype(actual, formal):
            return  # mypy has reported the argument's type already
        hashable = self.api.named_generic_type(names.HASHABLE, [])
        if not is_subtype(actual, hashable):
            self.fail(
                f"{self.argument(name)} must be hashable (const arguments key the kernel cache); "
                f"found {format_type(actual, self.api.options)}",
                where, codes.CONST,
            )


def check_tune_candidates(api: CheckerPluginInterface, name: str, declared: Type, call: CallExpr) -> None:
    """Each candidate of `tl.tune([...])` must fit the parameter's type, and there must be one."""
    if not call.args or not isinstance(call.args[0], (ListExpr, TupleExpr)):
        return
    candidates = call.args[0].items
    if not candidates:
        api.fail("tl.tune() needs at least one candidate", call, code=codes.TUNE)
        return
    if isinstance(get_proper_type(declared), AnyType):
        return
    for item in candidates:
        found = expression_type(api, item)
        if not is_subtype(found, declared):
            api.fail(
                f'Tune candidate for "{name}" has type {format_type(found, api.options)}; '
                f"expected {format_type(declared, api.options)}",
                item, code=codes.TUNE,
            )


class _Solution(TypeTranslator):
    """A return type with the call's bindings put in: solved dims and dtypes, the rest Any."""

    def __init__(self, bound: dict[TypeVarId, Type], sizes: dict[str, int], int_type: Instance | None = None) -> None:
        super().__init__()
        self.bound = bound
        self.sizes = sizes
        self.int_type = int_type

    def translate(self, typ: Type) -> Type:
        return typ.accept(self)

    def visit_type_var(self, t: TypeVarType) -> Type:
        return self.bound.get(t.id, AnyType(TypeOfAny.special_form))

    def visit_type_alias_type(self, t: TypeAliasType) -> Type:
        return get_proper_type(t).accept(self)

    def visit_instance(self, t: Instance) -> Type:
        translated = super().visit_instance(t)
        if not (isinstance(translated, Instance) and translated.type.fullname == names.TENSOR):
            return translated
        return translated.copy_modified(args=[translated.args[0], *(self.dim(d) for d in translated.args[1:])])

    def dim(self, dim: Type) -> Type:
        """A derived dim (a string Literal, see dimexpr.py) becomes its size once its dims are known."""
        proper = get_proper_type(dim)
        if not (isinstance(proper, LiteralType) and isinstance(proper.value, str)):
            return dim
        size = dimexpr.evaluate(proper.value, self.sizes)
        if size is None or self.int_type is None:
            return AnyType(TypeOfAny.special_form)
        return LiteralType(size, self.int_type)


def _size(typ: ProperType) -> int | None:
    if isinstance(typ, LiteralType) and isinstance(typ.value, int) and not isinstance(typ.value, bool):
        return typ.value
    return None


def _dtype_text(typ: ProperType) -> str:
    if isinstance(typ, Instance):
        return names.dtype_display(typ.type.fullname)
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
