"""Type-analysis hooks: what tensor, dyn and dtype annotations mean to mypy.

`Tensor[dtype, *dims]` (and TileLang's order `Tensor[[dims], dtype]`) becomes
an instance of `MypyPlugin.Tensor[dtype, *dims]`, which mypy shows as users
write it (tltyped/types/tensor.py), where the dtype is one of tltyped's dtype
classes (TileLang's `T.float16` and `"float16"`, and torch's `torch.float16`, are read as `tl.float16`; a
signature's string dtype comes as a string literal, see rewrite.py), a dtype variable or
Any, and each dim is a TypeVar (a declared dim), `Literal[n]` (a bare `128`
means the same), or a string `Literal` holding a derived dim's expression
(only the in-body rewrite writes those: in_body.py, dimexpr.py). Anything else is an
error on the annotation's own line, with the plugin's codes.

The in-body spelling `T.Tensor[...]` (the kernel language's own class, see
tltyped/_tilelang_language.pyi) is read the same way. `tl.dyn[X]` must be
`dyn[int]` or `dyn[float]`. TileLang's dtype names need no hook as scalar
annotations (`n: T.int32`): the language's stubs make them aliases of the
Python scalar they carry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from mypy.errorcodes import ErrorCode
from mypy.maptype import map_instance_to_supertype
from mypy.nodes import GDEF, LDEF, MypyFile, PlaceholderNode, TypeAlias, TypeInfo, TypeVarExpr, Var
from mypy.plugin import AnalyzeTypeContext
from mypy.semanal import SemanticAnalyzer
from mypy.typeanal import TypeAnalyser
from mypy.types import (
    AnyType,
    Instance,
    LiteralType,
    ProperType,
    RawExpressionType,
    TupleType,
    Type,
    TypeList,
    TypeOfAny,
    UnboundType,
    UnionType,
    UnpackType,
    get_proper_type,
)

from tltyped.mypy_plugin import dtype_params, names
from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin.parsed import ModuleNames, module_names
from tltyped.types import dim_grammar, in_body_grammar as grammar

_TENSOR_FORMS = "Tensor[dtype, *dims] or Tensor[[dims...], dtype]"
_LITERALS = ("typing.Literal", "typing_extensions.Literal")
_UNPACKS = ("typing.Unpack", "typing_extensions.Unpack")
_ANY = ("typing.Any", "builtins.Any")
_DIM_EXAMPLE = "N"
_SUPPORTED = ", ".join(names.dtype_display(names.dtype_class_fullname(c)) for c in names.DTYPE_CLASSES)


def analyze_tensor(ctx: AnalyzeTypeContext) -> Type:
    api = ctx.api
    assert isinstance(api, TypeAnalyser)
    return _TensorAnnotation(api, ctx.type).analyze()


class _TensorAnnotation:
    def __init__(self, api: TypeAnalyser, typ: UnboundType) -> None:
        self.api = api
        self.typ = typ

    def fail(self, message: str, code: ErrorCode, where: Type | None = None) -> None:
        self.api.fail(message, where if where is not None and where.line > 0 else self.typ, code=code)

    def malformed(self, detail: str, where: Type | None = None) -> None:
        self.fail(f"Malformed Tensor annotation: {detail}; expected {_TENSOR_FORMS}", codes.ANNOTATION, where)

    def instance(self, args: list[Type]) -> Instance:
        scope = self.api.lookup_fully_qualified(names.PLUGIN_TENSOR_SCOPE).node
        assert isinstance(scope, TypeInfo)
        tensor = scope.names["Tensor"].node
        assert isinstance(tensor, TypeInfo)
        return Instance(tensor, args, line=self.typ.line, column=self.typ.column)

    def unknown_rank(self) -> Instance:
        """`Tensor` with no arguments: any dtype, any rank."""
        any_tuple = self.api.named_type("builtins.tuple", [AnyType(TypeOfAny.special_form)])
        return self.instance([AnyType(TypeOfAny.special_form), UnpackType(any_tuple)])

    def analyze(self) -> Type:
        args = list(self.typ.args)
        if not args:
            return self.unknown_rank()
        if isinstance(args[0], TypeList) or (isinstance(args[0], TupleType) and args[0].implicit):
            # TileLang's order, its dims in a list or a tuple (`Tensor[(M, N), dtype]`)
            if len(args) != 2:
                self.malformed("TileLang's order takes a dim list and a dtype")
                return self.unknown_rank()
            dtype_arg, dim_args = args[1], list(args[0].items)
        elif len(args) == 2 and self.is_shape_first(*args):
            # TileLang's order with a shape of one dim (`Tensor[n, T.float16]`, a lazy-style factory's `Tensor[n,
            # dtype]`)
            dtype_arg, dim_args = args[1], [args[0]]
        else:
            dtype_arg, dim_args = args[0], args[1:]
        dtype = self.dtype(dtype_arg)
        dims = [self.dim(d) for d in dim_args]
        return self.instance([dtype, *dims])

    # -- dtype ---------------------------------------------------------------------------------

    def dtype(self, arg: Type) -> Type:
        if isinstance(arg, AnyType):
            return arg
        written = _string(arg)
        if written is not None and dtype_params.is_marker(written):  # see dtype_params.py
            return LiteralType(written, self.api.named_type("builtins.str", []), line=arg.line)
        if written in names.LANGUAGE_DTYPE_CLASS:  # `"float16"`
            class_name = names.LANGUAGE_DTYPE_CLASS[written]
            info = self.api.lookup_fully_qualified(names.dtype_class_fullname(class_name)).node
            assert isinstance(info, TypeInfo)
            return Instance(info, [], line=arg.line, column=arg.column)
        if isinstance(arg, UnboundType) and not arg.args:
            found = self.dtype_of_name(arg)
            if found is not None:
                return found
        if isinstance(arg, TypeList):
            self.malformed("a dim list comes first, then the dtype", arg)
            return AnyType(TypeOfAny.from_error)
        if isinstance(arg, UnboundType) and arg.args and all(_is_literal_key(a) for a in arg.args):
            return AnyType(TypeOfAny.special_form)  # a table's entry, `DTYPES["fp16"]`: the runtime reads it, not mypy
        if self.local_value(arg):
            return AnyType(TypeOfAny.special_form)  # a factory's argument or local: its value is the run time's
        self.fail(
            f'Unknown dtype "{_spelling(arg)}" in Tensor annotation; expected one of {_SUPPORTED}',
            codes.DTYPE, arg,
        )
        return AnyType(TypeOfAny.from_error)

    def is_shape_first(self, first: Type, second: Type) -> bool:
        """Whether `Tensor[x, y]` is TileLang's `[shape, dtype]`, by the runtime's rule (in_body_grammar.is_shape_first)
        over what the source shows: `x` reads as a dtype where it is a string, an attribute (`T.float16`), a
        TypeVar or a dtype's name, `y` as a dim where it is an int or a TypeVar; and `y` must show a dtype too, or
        be a factory's value (`dtype`), else the annotation is read in tltyped's order, as it always was."""
        first_is_dtype = self.shows_a_dtype(first) or self.is_typevar(first)
        second_is_dim = (isinstance(second, RawExpressionType) and isinstance(second.literal_value, int)) or self.is_typevar(second)
        return grammar.is_shape_first(first_is_dtype=first_is_dtype, second_is_dim=second_is_dim) and (
            self.shows_a_dtype(second) or self.local_value(second))

    def shows_a_dtype(self, arg: Type) -> bool:
        """Whether an annotation's part is spelled as a dtype: a string, an attribute, or a dtype's own name."""
        if _string(arg) is not None:
            return True
        if not (isinstance(arg, UnboundType) and not arg.args):
            return False
        if "." in arg.name:
            return True
        sym = self.api.lookup_qualified(arg.name, arg, suppress_errors=True)
        return sym is not None and not isinstance(sym.node, PlaceholderNode) and isinstance(self.dtype_of_name(arg), Instance)

    def is_typevar(self, arg: Type) -> bool:
        """Whether an annotation's part names a TypeVar: a signature's dtype or dim."""
        if not (isinstance(arg, UnboundType) and not arg.args):
            return False
        sym = self.api.lookup_qualified(arg.name, arg, suppress_errors=True)
        return sym is not None and isinstance(sym.node, TypeVarExpr)

    def local_value(self, arg: Type) -> bool:
        """Whether an annotation's part is a bare name of a function's parameter or local variable (a lazy-style
        factory's `dtype`): a value only the run time knows."""
        if not (isinstance(arg, UnboundType) and not arg.args and "." not in arg.name):
            return False
        sym = self.api.lookup_qualified(arg.name, arg, suppress_errors=True)
        return sym is not None and sym.kind == LDEF and isinstance(sym.node, Var)

    def not_yet_bound(self) -> bool:
        """A name not found while the module is still being analysed: look again later."""
        semantic = self.api.api
        if isinstance(semantic, SemanticAnalyzer) and not semantic.final_iteration:
            if semantic.is_incomplete_namespace(semantic.cur_mod_id):
                semantic.record_incomplete_ref()
                return True
        return False

    def dtype_of_name(self, arg: UnboundType) -> Type | None:
        sym = self.api.lookup_qualified(arg.name, arg, suppress_errors=True)
        node = None if sym is None else sym.node
        if node is None and self.not_yet_bound():
            return AnyType(TypeOfAny.special_form)
        if isinstance(node, PlaceholderNode):
            return self.api.analyze_type(arg)
        if isinstance(node, TypeVarExpr):
            return self.api.analyze_type(arg)
        if node is not None and node.fullname in _ANY:
            return AnyType(TypeOfAny.explicit)
        if isinstance(node, TypeInfo) and node.has_base(names.DTYPE_BASE) and node.fullname != names.DTYPE_BASE:
            return Instance(node, [], line=arg.line, column=arg.column)
        if isinstance(node, (Var, TypeAlias)):  # a TileLang dtype name, `T.float16`, or torch's, `torch.float16`
            class_name = names.language_dtype_class(node.fullname) or names.torch_dtype_class(node.fullname)
            if class_name is not None:
                info = self.api.lookup_fully_qualified(class_name).node
                assert isinstance(info, TypeInfo)
                return Instance(info, [], line=arg.line, column=arg.column)
        if isinstance(node, TypeAlias):  # `F16 = tl.float16`
            target = get_proper_type(self.api.analyze_type(arg))
            if isinstance(target, Instance) and target.type.has_base(names.DTYPE_BASE):
                return target
        if isinstance(node, (Var, TypeAlias)) and sym is not None and sym.kind == GDEF and "." not in arg.name:  # `DT`
            return self.module_dtype(node, arg)
        if isinstance(node, (Var, TypeAlias)) and sym is not None and sym.kind == GDEF and not names.is_dtype_home(node.fullname):
            # `consts.DT`: another module's name, its value the run time's, unless mypy typed it as no dtype
            return None if _typed_as_no_dtype(node) else AnyType(TypeOfAny.special_form)
        return None

    def module_dtype(self, node: Var | TypeAlias, arg: UnboundType) -> Type | None:
        """The dtype a name of the module's holds (`DT`, bound or imported), by the rule the in-body reading follows
        (`ModuleNames.dtype_constants`): a name the module binds once to a dtype's name (`DT = T.float16`, `DT =
        "float16"`) is that dtype; mypy has not typed the name yet, and sees `T.float16` as an alias of `float`, so
        the module's statements are read. One bound once to a literal of no dtype (`COUNT = 3`) is no dtype (None).
        Another module's name (mypy keeps no statements of a module it has analysed), one bound to a computed
        value (an attribute naming no dtype too: `DT = cfg.dtype`) or more than once, is the value the run time
        finds (Any)."""
        module, _, name = node.fullname.rpartition(".")
        semantic = self.api.api
        if isinstance(semantic, SemanticAnalyzer) and module == semantic.cur_mod_id:
            found = _module_names(semantic.cur_mod_node)
            if name in found.dtype_constants:
                held = self.dtype_of_name(UnboundType(found.dtype_constants[name], line=arg.line, column=arg.column))
                return held if isinstance(held, Instance) else AnyType(TypeOfAny.special_form)
            if name in found.int_constants or name in found.no_dtype_literals:
                return None
        return AnyType(TypeOfAny.special_form)

    # -- dims ------------------------------------------------------------------------------------

    def dim(self, arg: Type) -> Type:
        if isinstance(arg, AnyType):
            return arg
        if isinstance(arg, RawExpressionType):
            return self.literal_dim(arg)
        if isinstance(arg, UnboundType):
            return self.named_dim(arg)
        self.malformed(f'dim "{_spelling(arg)}" must be a dim name, an int or Literal[int]', arg)
        return AnyType(TypeOfAny.from_error)

    def literal_dim(self, arg: RawExpressionType) -> Type:
        value = arg.literal_value
        if isinstance(value, str) and arg.base_type_name == "builtins.str":  # derived: see dimexpr.py
            return self.derived_dim(value, arg)
        if isinstance(value, int) and not isinstance(value, bool) and arg.base_type_name == "builtins.int":
            return self.size(value, arg)
        shown = "an expression" if value is None else repr(value)
        self.malformed(f"a dim must be a dim name, an int or Literal[int], not {shown}", arg)
        return AnyType(TypeOfAny.from_error)

    def derived_dim(self, text: str, arg: RawExpressionType) -> Type:
        """A derived dim's canonical text. Its plain names are the kernel's dims; a dotted one is another module's
        or a class's value (`consts.WIDTH * 2`), which the rewrite, reading the module before any is analysed, left
        as written: each is read as `named_dim` reads it written alone, a size where mypy knows its value
        (`Final`), reported where it names nothing or no int. Where one's value is the run time's only, so is the
        dim's (Any)."""
        unread: list[ProperType] = []  # what `named_dim` read of each dotted name that gives no size

        def resolve(name: str) -> str:
            if "." not in name:
                return name
            read = get_proper_type(self.named_dim(UnboundType(name, line=arg.line, column=arg.column)))
            if isinstance(read, LiteralType):
                return str(read.value)
            unread.append(read)
            return name

        resolved = dim_grammar.normalise_source(text, resolve)
        if unread:
            reported = any(isinstance(a, AnyType) and a.type_of_any == TypeOfAny.from_error for a in unread)
            return AnyType(TypeOfAny.from_error if reported else TypeOfAny.special_form, line=arg.line, column=arg.column)
        if resolved.isdigit():
            return self.size(int(resolved), arg)
        return LiteralType(resolved, self.api.named_type("builtins.str", []), line=arg.line, column=arg.column)

    def size(self, value: int, arg: Type) -> Type:
        """A dim of this size (`128`, `Literal[128]`, a `Final` int), which no tensor has below zero."""
        if value < 0:
            self.malformed(f"a dim size must be non-negative, got {value}", arg)
            return AnyType(TypeOfAny.from_error)
        return LiteralType(value, self.api.named_type("builtins.int", []), line=arg.line, column=arg.column)

    def named_dim(self, arg: UnboundType) -> Type:
        if arg.original_str_expr is not None:  # `"x"`: a string, not a dim name
            self.malformed(f'dim "{arg.original_str_expr}" must be a dim name (a TypeVar), an int or Literal[int]', arg)
            return AnyType(TypeOfAny.from_error)
        sym = self.api.lookup_qualified(arg.name, arg, suppress_errors=True)
        node = None if sym is None else sym.node
        if node is None:
            if self.not_yet_bound():
                return AnyType(TypeOfAny.special_form)
            self.fail(_undefined_dim(arg.name), codes.DIM, arg)
            return AnyType(TypeOfAny.from_error)
        if isinstance(node, (PlaceholderNode, TypeVarExpr)):
            return self.api.analyze_type(arg)
        if node.fullname in _ANY:
            return AnyType(TypeOfAny.explicit)
        if node.fullname in _UNPACKS:
            return self.api.anal_type(arg, allow_unpack=True)
        if node.fullname in _LITERALS or isinstance(node, TypeAlias):  # `Literal[64]`, or `L64` naming it
            literal = get_proper_type(self.api.analyze_type(arg))
            if isinstance(literal, LiteralType) and literal.fallback.type.fullname == "builtins.int":
                assert isinstance(literal.value, int)
                return self.size(literal.value, arg)
            if isinstance(literal, Instance) and literal.type.fullname == "builtins.int":  # `dyn[int, "K"]`
                return AnyType(TypeOfAny.special_form, line=arg.line, column=arg.column)  # a size each call gives
            if isinstance(literal, UnionType):  # `Literal[64, 128]`
                self.malformed("a Literal dim is one int, not one of several (a dim name or Any is a size each call gives)", arg)
            elif not isinstance(literal, AnyType):
                self.malformed("a Literal dim must be an int", arg)
            return AnyType(TypeOfAny.from_error)
        if isinstance(node, Var) and _may_be_int(node) and not arg.args:  # a size the module computes, as at run time
            value = node.final_value if node.is_final else None
            if isinstance(value, int) and not isinstance(value, bool):  # `HIDDEN: Final = 256`: that size
                return self.size(value, arg)
            return AnyType(TypeOfAny.special_form, line=arg.line, column=arg.column)  # known when the kernel is made
        if isinstance(node, TypeInfo) and node.fullname == "builtins.int":  # the seed's anonymous dim: any size
            return AnyType(TypeOfAny.special_form, line=arg.line, column=arg.column)
        if isinstance(node, TypeInfo):  # `float`: a type, not a size
            self.fail(
                f'Dim "{arg.name}" is a type, not a dim: name the dim with a TypeVar '
                f'({_DIM_EXAMPLE} = TypeVar("{_DIM_EXAMPLE}")) or give its size with Literal[n]',
                codes.ANNOTATION, arg,
            )
            return AnyType(TypeOfAny.from_error)
        self.malformed(f'dim "{arg.name}" must be a dim name (a TypeVar), an int or Literal[int]', arg)
        return AnyType(TypeOfAny.from_error)


def _undefined_dim(name: str) -> str:
    """What a dim naming nothing is: a dim to declare, or a misspelt attribute (`consts.WIDHT`, which the run time
    refuses with the same attribute named)."""
    owner, dot, attribute = name.rpartition(".")
    if dot:
        return f'Dim "{name}" is not defined: "{owner}" has no attribute "{attribute}"'
    return f'Dim "{name}" is used but never declared; declare it with {name} = TypeVar("{name}")'


def _is_literal_key(arg: Type) -> bool:
    """A string or number literal in a type's brackets: `DTYPES["fp16"]` is a lookup, not a generic type."""
    return isinstance(arg, RawExpressionType) or (isinstance(arg, UnboundType) and arg.original_str_expr is not None)


def _string(typ: Type) -> str | None:
    """The text of a string in an annotation: a string literal (a signature's string dtype, see rewrite.py, or a
    marker of the in-body rewrite), or a name in quotes elsewhere, which mypy parses as a forward reference."""
    if isinstance(typ, RawExpressionType) and typ.base_type_name == "builtins.str":
        return typ.literal_value if isinstance(typ.literal_value, str) else None
    return typ.original_str_expr if isinstance(typ, UnboundType) else None


def _spelling(typ: Type) -> str:
    written = _string(typ)
    if written is not None:
        return written
    if isinstance(typ, UnboundType):
        return typ.name
    if isinstance(typ, RawExpressionType):
        return "expression" if typ.literal_value is None else repr(typ.literal_value)
    return str(typ)


# -- dyn ---------------------------------------------------------------------------------------


def analyze_dyn(ctx: AnalyzeTypeContext) -> Type:
    """`tl.dyn[int]` is `int` (and `tl.dyn[float]` `float`); nothing else may be dyn. `dyn[int, "K"]`, a named dyn
    dim written where a dim goes (the seed's spelling), is `int` too: as a dim, a size each call gives."""
    args = ctx.type.args
    if len(args) == 2 and _is_name_literal(args[1]):
        args = args[:1]
    if len(args) != 1:
        ctx.api.fail('dyn takes one type, and a dim name: dyn[int], dyn[float] or dyn[int, "K"]', ctx.context,
                     code=codes.ANNOTATION)
        return AnyType(TypeOfAny.from_error)
    inner = ctx.api.analyze_type(args[0])
    proper = get_proper_type(inner)
    if isinstance(proper, AnyType) or (
        isinstance(proper, Instance) and proper.type.fullname in ("builtins.int", "builtins.float")
    ):
        return inner
    ctx.api.fail(
        f"dyn[{_spelling(args[0])}] is not supported; dyn takes int or float (tl.ptr for a device pointer)",
        ctx.context, code=codes.ANNOTATION,
    )
    return inner


def _is_name_literal(typ: Type) -> bool:
    """`"K"` in an annotation: a string that is an identifier."""
    if isinstance(typ, RawExpressionType):
        return isinstance(typ.literal_value, str) and typ.literal_value.isidentifier()
    return isinstance(typ, UnboundType) and typ.original_str_expr is not None and typ.original_str_expr.isidentifier()


def type_analyze_hook(fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
    """The hook for a name an annotation resolved to, if the plugin reads that name."""
    if fullname in (names.TENSOR, names.LANGUAGE_TENSOR):
        return analyze_tensor
    if fullname == names.DYN:
        return analyze_dyn
    return None


def tensor_parts(typ: ProperType) -> tuple[Type, list[Type] | None] | None:
    """(dtype, dims) of an analysed tltyped Tensor; dims None when the rank is unknown."""
    if not isinstance(typ, Instance):
        return None
    base = next((b for b in typ.type.mro if b.fullname == names.PLUGIN_TENSOR), None)
    if base is None:
        return None
    tensor = map_instance_to_supertype(typ, base)
    if not tensor.args:
        return AnyType(TypeOfAny.special_form), None
    dtype, dims = tensor.args[0], list(tensor.args[1:])
    if any(isinstance(d, UnpackType) for d in dims):
        return dtype, None
    return dtype, dims


def _may_be_int(var: Var) -> bool:
    """Whether a variable named as a dim may hold a size: its type is int, or not inferred yet."""
    typ = get_proper_type(var.type)
    return typ is None or isinstance(typ, AnyType) or (isinstance(typ, Instance) and typ.type.fullname == "builtins.int")


_read_module: tuple[MypyFile, ModuleNames] | None = None


def _module_names(file: MypyFile) -> ModuleNames:
    """`module_names` of the module being analysed, read once for all of its annotations."""
    global _read_module
    if _read_module is None or _read_module[0] is not file:
        _read_module = (file, module_names(file))
    return _read_module[1]


_NUMBERS: Final = ("builtins.int", "builtins.float", "builtins.bool")
"""The classes the language stub makes its dtypes aliases of (`T.float16` is `float`, `T.int32` `int`)."""


def _typed_as_no_dtype(node: Var | TypeAlias) -> bool:
    """Whether another module's name is certainly no dtype by its type: a number (`math.pi`, `consts.COUNT = 3`), or
    an alias of a class other than those the language stub makes its dtypes aliases of and `str` (`np.float16`)."""
    typ = get_proper_type(node.target if isinstance(node, TypeAlias) else node.type)
    if isinstance(typ, LiteralType):
        typ = typ.fallback
    if not isinstance(typ, Instance):
        return False
    if isinstance(node, TypeAlias):
        return typ.type.fullname not in (*_NUMBERS, "builtins.str")
    return typ.type.fullname in _NUMBERS
