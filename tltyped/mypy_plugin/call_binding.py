"""One call's arguments bound to its kernel's tensor parameters: dims, dtypes, and the result they solve.

A call site (callsite.py) hands each tensor argument to a `CallBinder`,
which compares it with its parameter and reports, naming the parameter, what
cannot bind: a dtype (a dtype given by a const parameter,
`C: T.Tensor[[M, N], out_dtype]`, is the dtype that argument names; a
caller's dtype variable fits a fixed dtype only if it can be no other, and a
dtype variable takes only the dtypes of its constraints or bound), a rank, a literal dim, a
dim shared between arguments (a K of 512 and one of 256 cannot both bind),
a derived dim. What bound then solves the kernel's return type (`Solution`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mypy import errorcodes
from mypy.errorcodes import ErrorCode
from mypy.messages import format_type
from mypy.nodes import Context, Expression
from mypy.plugin import CheckerPluginInterface
from mypy.subtypes import is_subtype
from mypy.type_visitor import TypeTranslator
from mypy.types import (
    AnyType,
    Instance,
    LiteralType,
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
from tltyped.mypy_plugin.dtype_params import parse as dtype_parameter
from tltyped.mypy_plugin.typeops import dtype_class_of, named_instance
from tltyped.types import dim_grammar


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
    symbols: dict[TypeVarId, tuple[TypeVarType, str]] = field(default_factory=dict)  # dim -> caller's dim var, from
    dtypes: dict[TypeVarId, tuple[str, str]] = field(default_factory=dict)  # dtype var -> (dtype, from)
    derived: list[tuple[str, int, str, int, Expression]] = field(default_factory=list)
    solved: dict[str, int] = field(default_factory=dict)  # a dim no tensor has plainly -> what an affine size gives

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
            self.api, self.kernel, self.given, dict(self.bound), dict(self.sizes), dict(self.dim_names),
            dict(self.symbols), dict(self.dtypes),
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
            allowed = _allowed_dtypes(expected)
            can_be = _dtypes_of(found) if isinstance(found, Instance) else None
            can_be = _allowed_dtypes(found) if isinstance(found, TypeVarType) else can_be
            if allowed and can_be is not None and not (can_be and set(can_be) <= set(allowed)):
                shown = ", ".join(names.dtype_display(d) for d in allowed)
                self.fail(
                    f"{self.argument(name)} has dtype {_dtype_text(found)}; expected "
                    f"{'one of ' if len(allowed) > 1 else ''}{shown} (dtype {expected.name})",
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
                if isinstance(found, TypeVarType):  # the caller's own dim variable: one per dim, as mypy infers
                    symbol = self.symbols.setdefault(expected.id, (found, f"{name}, axis {axis}"))
                    if symbol[0].id != found.id:
                        self.fail(
                            f"{self.argument(name)} has dim {found.name} for dim {expected.name} (axis {axis}); "
                            f"expected {symbol[0].name} (from {symbol[1]})",
                            where, codes.SHAPE,
                        )
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
        plain = {dim: self.sizes[var].size for dim, var in self.dim_names.items() if var in self.sizes}
        return {**self.solved, **plain}

    def check_derived_dims(self) -> None:
        """Each derived size against its dims, in argument order; a dim no tensor gives plainly is solved from its
        first affine size (`n * 4`), as the runtime's binder solves it."""
        known = self.known_sizes()
        for name, axis, text, size, where in self.derived:
            affine = dim_grammar.affine(text)
            if affine is not None and affine[0] not in known:
                solved = dim_grammar.solve(affine, size)
                if solved is None:
                    self.fail(f"{self.argument(name)} has size {size} at axis {axis}, which is {text} for no {affine[0]} >= 0",
                              where, codes.SHAPE)
                    continue
                known[affine[0]] = self.solved[affine[0]] = solved
            expected = dim_grammar.evaluate_int(text, known)
            if expected is not None and expected != size:
                self.fail(
                    f"{self.argument(name)} has size {size} at axis {axis}; expected {text} = {expected}",
                    where, codes.SHAPE,
                )

    def solution(self) -> Solution:
        int_type = self.api.named_generic_type("builtins.int", [])
        return Solution(self.bound, self.known_sizes(), int_type, self.dtype_argument)


class Solution(TypeTranslator):
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

    def for_compiled_kernel(self) -> Solution:
        """What the kernel `compile` gave is typed with: the dtypes its consts name put in, its dims left for each
        of its calls to bind (the plugin cannot tell an in-body `T.dynamic` dim from a const one, and a const
        dim's size, fixed by the build, is checked by the kernel's launcher)."""
        return _OpenDims(self.bound, self.sizes, self.int_type, self.dtype_argument)

    def dim(self, dim: Type) -> Type:
        """A derived dim (a string Literal, see in_body.py) becomes its size once its dims are known."""
        proper = get_proper_type(dim)
        if not (isinstance(proper, LiteralType) and isinstance(proper.value, str)):
            return dim
        size = dim_grammar.evaluate_int(proper.value, self.sizes)
        if size is None or self.int_type is None:
            return AnyType(TypeOfAny.special_form)
        return LiteralType(size, self.int_type)


class _OpenDims(Solution):
    def visit_type_var(self, t: TypeVarType) -> Type:
        return t

    def dim(self, dim: Type) -> Type:
        return dim


def _size(typ: ProperType) -> int | None:
    if isinstance(typ, LiteralType) and isinstance(typ.value, int) and not isinstance(typ.value, bool):
        return typ.value
    return None


def _dtypes_of(typ: Instance | TypeVarType) -> list[str]:
    """The dtypes a dtype type can be: a dtype class itself; a TypeVar's values (none: any dtype)."""
    if isinstance(typ, Instance):
        return [typ.type.fullname]
    return [value.type.fullname for value in map(get_proper_type, typ.values) if isinstance(value, Instance)]


def _allowed_dtypes(var: TypeVarType) -> list[str]:
    """The dtypes a dtype variable may be, as mypy's own check of a type variable limits it: its values
    (`TypeVar("DT", tl.float16, tl.bfloat16)`), else the dtypes its bound names (`bound=tl.float16 | tl.bfloat16`,
    `bound=tl.float32`); none (any dtype) where the bound names no dtype of its own (`tl.DType`, `object`)."""
    if var.values:
        return _dtypes_of(var)
    bound = get_proper_type(var.upper_bound)
    items = [get_proper_type(item) for item in bound.items] if isinstance(bound, UnionType) else [bound]
    if all(isinstance(i, Instance) and i.type.has_base(names.DTYPE_BASE) and i.type.fullname != names.DTYPE_BASE
           for i in items):
        return [i.type.fullname for i in items if isinstance(i, Instance)]
    return []


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
