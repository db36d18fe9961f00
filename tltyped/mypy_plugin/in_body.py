"""One kernel's desugaring: in-body annotations and dims become its signature.

The runtime reads a kernel the same way at decoration (tltyped.frontend):
- `M, N = T.const("M, N")` / `K = T.dynamic("K")` at the top of the body
  declare dims, in the order the string names them;
- `L = N * 2 + 1` names an expression of dims (a derived dim);
- `m, k = A.shape` (`k = A.shape[1]`), after A's annotation (in the body,
  or in the signature: its TypeVars and ints), names A's dims, as
  `A.shape[1]` written in a dim does (types/source.py's `shape_read`, the
  dim grammar's `shape_size`); before it, the runtime refuses an annotation
  reading them, and so does the rewrite;
- `A: T.Tensor[[M, K], T.float16]` (no value) annotates parameter `A`: the
  statement leaves the body and its type becomes `A`'s; so do TileLang's
  spellings of it: the call form `T.Tensor((M, K), dtype)` (call_form.py),
  a tuple of dims, and `T.StridedTensor[[M, N], [sM, sN], dtype]` (a tensor
  of dims M, N to callers; its stride dims are each call's);
- a const parameter or a name the body computes, used as a dim, is `Any`:
  its value is known per call only; so is a name of the function around a
  kernel that a factory makes (its closure), used as a dim or a dtype; so is
  a dim expression that uses one (`n * 4`, `T.ceildiv(N, block)`);
- but a name the body binds once, to an int literal, before the annotation
  (`block = 64`) is that size, and a constant index of a tuple the body
  binds (`shape[1]` of `shape = (M, N)`) is that item, in a dim expression too
  (`shape[1] * 2`), as the dim grammar's resolver is given it (`item_text`);
- a dim is read with the names as they stand at its place: a computed
  shape's (`shape = (L, 4)`) at its assignment, which the runtime's prelude
  runs there, whatever the body binds its names to before the annotation;
- a module-level name bound once to an int or a dtype (`dtype = T.float16`,
  `accum = "float32"`) is that size or dtype, an int item of a tuple one is
  bound to (`SHAPE[1]` of `SHAPE = (64, 128)`) that size; any other module name used as
  a dim (imported, computed, `consts.WIDTH`) is left to the annotation hook,
  which reads it as mypy types it: an int of unknown size is `Any`, as the
  runtime reads its value only at decoration;
- an unannotated parameter is a const (any hashable value): `Any` here, its
  hashability is checked at call sites; a tensor dtype that names one
  (`C: T.Tensor[[M, N], out_dtype]`) is the dtype each call gives it;
- a dtype written as a name the body binds before the annotation (a const
  parameter too: `dtype = T.float16`, `dt = in_dtype`) is the dtype that
  binding gives it there, as the runtime's prelude runs the body;
- a kernel without a return annotation returns what its `return` names:
  outputs declared with `T.empty` / `T.alloc_global` (outputs.py), or None.
Dims become PEP 695 type parameters of the kernel. Problems are recorded as
`Diagnostic`s (see rewrite.py for why they are not reported here).

The body is read by body_reader.py, into the names of body_names.py; this module writes the kernel's
signature from what was read: each annotation's dims and dtype resolved at its place (moved out of the body,
or the signature's own), the declared dims as type parameters, the return inferred where none is written.
"""

from __future__ import annotations

import ast
import builtins
import functools

from mypy.nodes import MISSING_FALLBACK, TYPE_VAR_KIND, FuncDef, TypeParam
from mypy.types import AnyType, CallableType, Instance, RawExpressionType, Type, TypeList, TypeOfAny, UnboundType

from tltyped.errors import DimSyntaxError, UndeclaredDim
from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin.body_reader import BodyReader
from tltyped.mypy_plugin.dtype_params import parameter_dtype
from tltyped.mypy_plugin.kernel_record import KernelRecord
from tltyped.mypy_plugin.outputs import inferred_return
from tltyped.mypy_plugin.parsed import ModuleNames
from tltyped.mypy_plugin.source_text import SourceText
from tltyped.mypy_plugin.written import (
    LITERALS, dim_list, head_name, is_bare_name, is_dotted_name, written_return, written_tensor_parts,
)
from tltyped.types import dim_grammar, in_body_grammar as grammar


class KernelRewrite(BodyReader):
    """Desugar one kernel in place: read its body (`BodyReader`), then write its signature from what was read."""

    def __init__(
        self, func: FuncDef, found: ModuleNames, source: SourceText, module_bound: set[str] | None,
        closure: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(func, found, source, module_bound, closure)
        self.plain_dims: set[str] = set()  # dims some tensor annotation binds directly
        self.signature_dims: list[str] = []  # TypeVar dims of annotations written in the signature
        self.signature_changed = False

    def run(self) -> KernelRecord:
        self.annotate_signature_sizes()
        annotations = self.scan_body()
        self.report_asserts_on_shape_assert_lines()
        moved = self.move_annotations(annotations)
        for dim in self.determined - self.plain_dims:  # known to each call, unknown statically: Any, not a TypeVar
            self.dims.pop(dim, None)
        for dim, line in self.dims.items():
            if dim in self.unbound_checked and dim not in self.plain_dims and not self.shape_unread:
                self.fail(
                    line, 0,
                    codes.sentence(grammar.undetermined_dim(dim)),
                    codes.DIM,
                )
        self.rebuild_type(moved)
        return self.record

    # -- annotations -----------------------------------------------------------------------------

    def move_annotations(self, annotations: dict[str, tuple[Type, int]]) -> bool:
        moved = False
        for arg in self.func.arguments:
            name = arg.variable.name
            if arg.type_annotation is not None:
                arg.type_annotation = self.signature_annotation(arg.type_annotation)
            if name not in annotations:
                continue
            typ, line = annotations[name]
            if arg.type_annotation is not None:
                self.fail(line, 0, f'Parameter "{name}" is annotated both in the signature and in the body', codes.KERNEL)
                continue
            arg.type_annotation = self.body_annotation(typ)
            moved = True
        return moved

    def signature_annotation(self, typ: Type) -> Type:
        """A signature annotation, with its never-declared dims reported and made Any.

        mypy would only say `Name "Q" is not defined`. The same object comes back
        when nothing changed.
        """
        if not isinstance(typ, UnboundType) or not typ.args:
            return typ
        if not self.found.is_tensor(typ.name):
            args = [self.signature_annotation(a) for a in typ.args]
            return typ if all(a is b for a, b in zip(args, typ.args)) else typ.copy_modified(args=args)
        dtype, dims = written_tensor_parts(typ)
        consts = self.found.reads_consts(typ.name)
        checked = [self.signature_dim(d, consts) for d in dims]
        read_dtype = self.signature_dtype(dtype, consts)
        if read_dtype is dtype and all(a is b for a, b in zip(checked, dims)):
            return typ
        first = dim_list(typ.args[0])
        if isinstance(first, TypeList):
            dims_list = TypeList(checked, line=first.line, column=first.column)
            return typ.copy_modified(args=[dims_list, *([] if read_dtype is None else [read_dtype]), *typ.args[2:]])
        return typ.copy_modified(args=[read_dtype or first, *checked])

    def signature_dtype(self, dtype: Type | None, consts: bool = False) -> Type | None:
        """A signature's dtype written as a name of the function around the kernel (a factory's parameter or
        local, hiding the module's names) is Any, the dtype each factory call gives, as `named_dtype` reads such a
        name in the body: the signature is evaluated when the factory runs. Left as written, the annotation hook
        would find the factory's variable, which is no dtype class, and report an unknown dtype.

        Where the annotation may name the kernel's consts (`consts`: TileLang's Tensor under postponed annotations,
        `ModuleNames.reads_consts`), a const parameter's name is the dtype each call gives it, as in the body;
        left as written, mypy would find no such name."""
        if consts and isinstance(dtype, UnboundType) and is_bare_name(dtype) and dtype.name in self.params:
            self.signature_changed = True
            return parameter_dtype(self.func, dtype.name, dtype.line, dtype.column)
        if isinstance(dtype, UnboundType) and is_bare_name(dtype) and dtype.name in self.closure:
            self.signature_changed = True
            return AnyType(TypeOfAny.special_form, line=dtype.line, column=dtype.column)
        return dtype

    def signature_dim(self, dim: Type, consts: bool = False) -> Type:
        """A signature's dim written as a name: a declared dim, a module's name, or (where the annotation may name
        the kernel's consts, as `signature_dtype` says) a parameter, whose size each call gives (Any, as
        `body_dim` reads it); else a dim never declared."""
        if not is_bare_name(dim):
            return dim
        assert isinstance(dim, UnboundType)
        if dim.name in self.dims:
            self.plain_dims.add(dim.name)
            return dim
        if consts and dim.name in self.params:
            self.signature_changed = True
            return self.per_call_dim(dim)
        if dim.name in self.found.other_values or hasattr(builtins, dim.name):
            return dim  # a module-level alias (`L64 = Literal[64]`) or a builtin (`int`): the hook reads it
        if self.module_bound is None or dim.name in self.module_bound:
            if dim.name not in self.signature_dims:
                self.signature_dims.append(dim.name)
            return dim
        self.fail(
            dim.line, dim.column,
            f'Dim "{dim.name}" is used but never declared; declare it with {dim.name} = TypeVar("{dim.name}")',
            codes.DIM,
        )
        self.signature_changed = True
        return AnyType(TypeOfAny.from_error, line=dim.line, column=dim.column)

    def body_annotation(self, typ: Type) -> Type:
        """An in-body annotation as a parameter type: dims resolved, a dtype parameter made Any."""
        if isinstance(typ, UnboundType) and self.found.is_strided_tensor(typ.name) and len(typ.args) == 3:
            typ = self.strided(typ)
        if not (isinstance(typ, UnboundType) and self.found.is_tensor(typ.name) and typ.args):
            return typ
        first = dim_list(typ.args[0])
        if isinstance(first, TypeList):
            dims = TypeList([self.body_dim(d) for d in first.items], line=first.line, column=first.column)
            return typ.copy_modified(args=[dims, *(self.body_dtype(a) for a in typ.args[1:])])
        return typ.copy_modified(args=[self.body_dtype(first), *(self.body_dim(d) for d in typ.args[1:])])

    def strided(self, typ: UnboundType) -> Type:
        """`T.StridedTensor[[N, M], [N_, M_], dtype]` is a `T.Tensor[[N, M], dtype]` to callers (a tensor's type
        has no strides); each stride dim is the call's, read from the tensor's strides. The Tensor is the one of the
        same module (`T.Tensor`), or for a StridedTensor imported by name whichever spelling of tltyped's Tensor the
        module has (with none, the annotation is left as written)."""
        shape, strides, dtype = typ.args
        language, dot, _ = typ.name.rpartition(".")
        tensor = f"{language}.Tensor" if dot else self.found.tensor_spelling()
        if not (isinstance(shape, TypeList) and isinstance(strides, TypeList)) or tensor is None:
            return typ
        self.plain_dims.update(d.name for d in strides.items if is_bare_name(d) and isinstance(d, UnboundType))
        return UnboundType(tensor, [shape, dtype], line=typ.line, column=typ.column)

    def body_dtype(self, typ: Type) -> Type:
        """A dtype written as a bare name (`out_dtype`, `dtype`) is the one `named_dtype` reads."""
        if is_bare_name(typ):
            assert isinstance(typ, UnboundType)
            return self.named_dtype(typ.name, typ.line, typ.column) or typ
        return typ

    def body_dim(self, typ: Type) -> Type:
        """An in-body annotation's dim, read with the names as they stand at its place (`standing_at`)."""
        with self.standing_at((typ.line, typ.column)):
            return self.standing_dim(typ)

    def standing_dim(self, typ: Type) -> Type:
        """`body_dim` with the names as they stand."""
        if is_bare_name(typ):
            assert isinstance(typ, UnboundType)
            if typ.name in self.dims and typ.name not in self.rebound_dims:
                self.plain_dims.add(typ.name)
                return typ
            if self.aliases.get(typ.name) in self.dims:  # `KH = K`: another name for a declared dim, plain as it
                alias = self.aliases[typ.name]  # is (the runtime determines K from a tensor that has KH)
                self.plain_dims.add(alias)
                return UnboundType(alias, line=typ.line, column=typ.column)
            if self.aliases.get(typ.name) in self.found.typevars:  # `m, k = A.shape` of `A: tl.Tensor[dt, M, K]`
                return UnboundType(self.aliases[typ.name], line=typ.line, column=typ.column)
            if typ.name in self.aliases:
                return self.derived(self.aliases[typ.name], typ.line, typ.column)
            literal = self.body_int(typ.name)
            if literal is not None:
                return RawExpressionType(literal, "builtins.int", line=typ.line, column=typ.column)
            if self.is_per_call(typ.name):
                self.report_sizes_read_early(typ.name, (typ.line, typ.column))
                self.determined.update(self.dims_read(typ.name, (typ.line, typ.column)))
                return self.per_call_dim(typ)
            if typ.name in self.found.int_constants:  # a module-level constant: its value, as a literal dim
                return RawExpressionType(self.found.int_constants[typ.name], "builtins.int", line=typ.line, column=typ.column)
            if self.is_module_name(typ.name):  # imported, or computed (`int(os.environ[...])`): the annotation hook
                return typ  # reads it as mypy types it, a `Final` int's size or an int of unknown size
            self.fail(
                typ.line, typ.column,
                codes.sentence(grammar.undeclared_dim(typ.name)),
                codes.DIM,
            )
            return AnyType(TypeOfAny.from_error, line=typ.line, column=typ.column)
        if isinstance(typ, AnyType) or (isinstance(typ, RawExpressionType) and isinstance(typ.literal_value, int)):
            return typ
        if isinstance(typ, UnboundType) and typ.name in LITERALS:
            return typ
        if is_dotted_name(typ):  # `consts.WIDTH`, `cfg.block`
            assert isinstance(typ, UnboundType)
            if self.is_per_call(head_name(typ.name)):
                return AnyType(TypeOfAny.special_form, line=typ.line, column=typ.column)
            if self.is_module_name(head_name(typ.name)):  # another module's int: the annotation hook reads it, as a bare name
                return typ
        item = self.tuple_item(typ)
        if item is not None:
            return item
        return self.expression_dim(typ)

    def tuple_item(self, typ: Type) -> Type | None:
        """A dim written as a constant index of a name whose value is per call (`shape[1]` after `shape = (M, N)`),
        as the runtime's prelude evaluates it: the item of the tuple or list the body's binding in force assigns it,
        read at the item's own place; the call's size (Any) where the plugin does not read that binding. None for any
        other dim."""
        for text in self.source.span(typ.line, typ.column, typ.end_line, typ.end_column):
            try:
                node = ast.parse(text.strip(), mode="eval").body
            except SyntaxError:
                continue
            read = dim_grammar.item_index(node)
            if read is None or not self.is_per_call(read[0]):
                return None
            item = self.body_item(*read)
            return AnyType(TypeOfAny.special_form, line=typ.line, column=typ.column) if item is None else self.body_dim(item)
        return None

    def per_call_dim(self, dim: UnboundType) -> Type:
        """A dim whose size each call gives (Any), unless it is a scalar parameter of a dtype no dim has (`M:
        T.int8`) or a name the body computes from one (`K = M * 2`), which the runtime refuses at decoration: said
        here with the runtime's message."""
        scalar = self.no_dim_scalar(dim.name, (dim.line, dim.column))
        if scalar is None:
            return AnyType(TypeOfAny.special_form, line=dim.line, column=dim.column)
        self.fail(dim.line, dim.column, codes.sentence(grammar.scalar_of_no_dim_dtype(*scalar)), codes.DIM)
        return AnyType(TypeOfAny.from_error, line=dim.line, column=dim.column)

    def expression_dim(self, typ: Type) -> Type:
        """A dim written as an expression (`N * 2`), read back from the source."""
        candidates = self.source.span(typ.line, typ.column, typ.end_line, typ.end_column)
        if not candidates:
            self.fail(typ.line, typ.column, "Cannot read this dim: write it on one line", codes.DIM)
            return AnyType(TypeOfAny.from_error, line=typ.line, column=typ.column)
        problem = ""
        for text in candidates:
            unknown: set[str] = set()
            try:
                normalised = dim_grammar.normalise_source(text, functools.partial(self.resolve_in_expression, unknown))
            except UndeclaredDim as exc:
                problem = problem or grammar.undeclared_dim(exc.name)
                continue
            except DimSyntaxError as exc:
                problem = problem or str(exc)
                continue
            if unknown:  # `n * 4`, `T.ceildiv(N, block)`: a size known per call (or at decoration), as at run time;
                # its dims may be what a call determines
                self.determined.update(set(dim_grammar.symbols(normalised)) & set(self.dims))
                if all("." in name and not self.is_per_call(head_name(name)) for name in unknown):
                    # `consts.WIDTH * 2`, `N * Cfg.WIDTH`: values of other modules or classes, which the annotation
                    # hook reads as it reads one written alone as a dim (a dotted name is never the kernel's dim)
                    return derived_dim(normalised, typ.line, typ.column)
                return AnyType(TypeOfAny.special_form, line=typ.line, column=typ.column)
            if normalised.isdigit():
                return RawExpressionType(int(normalised), "builtins.int", typ.line, typ.column)
            if normalised in self.dims:
                self.plain_dims.add(normalised)
                return UnboundType(normalised, line=typ.line, column=typ.column)
            if normalised in self.found.typevars:  # `A.shape[1]` of `A: tl.Tensor[dt, M, K]`: the signature's K
                return UnboundType(normalised, line=typ.line, column=typ.column)
            return self.derived(normalised, typ.line, typ.column)
        self.fail(typ.line, typ.column, codes.sentence(problem), codes.DIM)
        return AnyType(TypeOfAny.from_error, line=typ.line, column=typ.column)

    def derived(self, normalised: str, line: int, column: int) -> Type:
        """A derived dim, written inline (`[N * 4]`) or through a name (`L = N * 4`, `[L]`): an affine one is how a
        call's size gives its dim, as at run time."""
        affine = dim_grammar.affine(normalised)
        if affine is not None and affine[0] in self.dims:
            self.determined.add(affine[0])
        return derived_dim(normalised, line, column)

    def resolve_in_expression(self, unknown: set[str], name: str) -> str | None:
        """`resolve_dim` inside a dim expression, where the names `body_dim` reads also count: a module's int
        literal is its value; a name whose value is known only per call or to the runtime (`is_per_call`,
        `is_module_name`) is kept and added to `unknown`. A dotted name (`consts.WIDTH`, `cfg.block`) is read by
        the name it starts with, as `body_dim` reads one written alone."""
        resolved = self.resolve_dim(name)
        if resolved is not None:
            return resolved
        module_int = None if self.is_per_call(head_name(name)) else self.module_int(name)
        if module_int is not None:
            return str(module_int)
        if self.is_per_call(head_name(name)) or self.is_module_name(head_name(name)):
            unknown.add(name)
            return name
        return None

    # -- the new signature ---------------------------------------------------------------------------

    def rebuild_type(self, moved: bool) -> None:
        func = self.func
        ret = written_return(func)
        if ret is not None:
            ret = self.signature_annotation(ret)
        unannotated = any(arg.type_annotation is None for arg in func.arguments)
        if not (moved or self.dims or unannotated or ret is None or self.signature_changed):
            return
        if self.dims:
            # Once a function has PEP 695 type parameters mypy wants all of them declared, so the
            # signature's TypeVar dims (`A: tl.Tensor[tl.float16, N]` beside `M = T.const("M")`) join.
            declared = [*self.signature_dims, *self.dims]
            func.type_args = [
                *(func.type_args or []),
                *(TypeParam(name, TYPE_VAR_KIND, None, [], None) for name in declared),
            ]
        arg_types: list[Type] = [
            # An unannotated kernel parameter is a const: any hashable value, checked at call sites.
            arg.type_annotation if arg.type_annotation is not None else AnyType(TypeOfAny.explicit)
            for arg in func.arguments
        ]
        returns = ret if ret is not None else inferred_return(func, self.found, self.resolve_dim, self.resolve_dtype)
        typ = CallableType(
            arg_types,
            [arg.kind for arg in func.arguments],
            [None if arg.pos_only else arg.variable.name for arg in func.arguments],
            returns,
            func.unanalyzed_type.fallback if isinstance(func.unanalyzed_type, CallableType) else Instance(MISSING_FALLBACK, []),
        )
        typ.set_line(func)
        typ.definition = func
        func.type = typ
        func.unanalyzed_type = typ.copy_modified()


def derived_dim(text: str, line: int, column: int) -> Type:
    """A derived dim as the annotation hook reads it: its expression as a string (dimexpr.py)."""
    return RawExpressionType(text, "builtins.str", line, column)

