"""analyze(fn) -> Analysis: both declaration forms, one KernelSignature.

The in-body form is desugared here exactly as the mypy plugin desugars it
statically: each in-body annotation of a parameter becomes that parameter's
type, and `T.const` / `T.dynamic` names become the dims it may use. An
annotation may also use names the body binds before it; those are evaluated
(frontend/prelude.py). One that depends on const parameters' values (or on a
global not assigned yet) is deferred: the decoration-time signature leaves
that tensor's spec empty, and `Analysis.resolve(consts)` reads every
annotation again with the call's const values.
"""

from __future__ import annotations

import __future__

import ast
import copy
import dataclasses
import functools
import inspect
import sys
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tltyped.errors import Deferred, DefinitionError, UndeclaredDim, Undefined
from tltyped.frontend import dims as dimlib
from tltyped.frontend.annotation import DimReader, is_tensor_annotation, parameter_dtype, parse_param, parse_returns
from tltyped.frontend.body import BodyAnnotation, BodyInfo, ShapeAssert, analyze_body, parse_dim
from tltyped.frontend.const_types import const_problem
from tltyped.frontend.lazy import out_indices
from tltyped.frontend.prelude import AnnotatedSizes, Prelude, module_names, to_dim
from tltyped.frontend.signature import DTypeSpec, Kind, KernelSignature, Param, ShapeCheck, TensorSpec
from tltyped.types import dim_grammar, in_body_grammar as grammar
from tltyped.types.dtypes import UNSTATED_TENSOR_DTYPE, is_dtype_like
from tltyped.types.params import Tune
from tltyped.types.source import environment, parameter_read, shape_reference
from tltyped.types.tensor import Tensor

OutIdx = typing.Union[int, typing.Sequence[int], None]


@dataclass
class _State:
    """What reading one signature collects: the dims, the consts deferred annotations need, scalars used as dims."""

    prelude: Prelude
    consts: Mapping[str, Any] | None
    dim_kinds: dict[str, bool]
    scalars: dict[str, str] = field(default_factory=dict)  # int scalar parameters, which a tensor's dims may name: name -> dtype
    other_scalars: dict[str, str] = field(default_factory=dict)  # the others, which may not: name -> dtype
    scalar_dims: set[str] = field(default_factory=set)  # those some tensor's dims do name
    tensors: dict[str, AnnotatedSizes] = field(default_factory=dict)  # the tensor parameters, their sizes once read
    depends: set[str] = field(default_factory=set)

    def scalar_symbols(self, place: tuple[int, int] | None = None) -> dict[str, dimlib.Dim]:
        """The int scalar parameters as dims; at `place` (line, column), but those the body binds again before it
        (`M = M * 2`: the name is then the body's value, which the prelude reads)."""
        rebound = self.prelude.bound_before(place) if place is not None else set()
        return {name: dimlib.symbol(name) for name in self.scalars if name not in rebound}

    def dim_names(self, place: tuple[int, int]) -> dict[str, dimlib.Dim]:
        """What a dim written at `place` may name besides the body's dims: the int scalar parameters
        (`scalar_symbols`), and the sizes of the tensors annotated before it (`A.shape[1]`, as the dim grammar names
        one), but those the body binds again before it."""
        rebound = self.prelude.bound_before(place)
        sizes = {name: read.dims for name, read in self.tensors.items()
                 if read.place < place and read.dims is not None and name not in rebound}
        return {**self.scalar_symbols(place),
                **{size: dim for name, dims in sizes.items() for size, dim in dim_grammar.shape_sizes(name, dims).items()}}

    def declared(self) -> dict[str, dimlib.Dim]:
        """The dims a size the prelude evaluated may name: its TIR variables are named as the declared dims and the
        int scalar parameters, not as the body's variables for them."""
        return {**{d: dimlib.symbol(d) for d in self.dim_kinds}, **self.scalar_symbols()}

    def note(self, dim: dimlib.Dim) -> dimlib.Dim:
        """Record the scalar parameters `dim` uses as dyn dims."""
        for name in set(dim.symbols) & self.scalars.keys():
            self.scalar_dims.add(name)
            self.dim_kinds[name] = True
        return dim

    def evaluate(self, node: ast.expr, place: tuple[int, int]) -> Any:
        """`node`'s value as written at `place`, the int scalar parameters TIR variables (`K = M * 2`, then `[K]`)."""
        return self.prelude.evaluate(node, place, self.consts, self.scalars, self.tensors)

    def size(self, node: ast.expr, place: tuple[int, int]) -> Any:
        """`evaluate` for a size or shape, where reading a scalar parameter of a dtype no dim has (`K = M * 2` of an
        int8 M) is refused as that scalar used as a dim is."""
        try:
            return self.evaluate(node, place)
        except Undefined as undefined:
            if undefined.name in self.other_scalars:
                raise dimlib.DimSyntaxError(
                    grammar.scalar_of_no_dim_dtype(undefined.name, self.other_scalars[undefined.name])) from None
            raise


@dataclass(frozen=True)
class _TensorForm:
    """The parts of a tensor annotation, still as source."""

    shape: ast.expr
    strides: ast.expr | None
    dtype: ast.expr | None  # None: TileLang's default, dtypes.UNSTATED_TENSOR_DTYPE
    either_order: bool = False  # `T.Tensor[x, y]`, x no list: TileLang's [shape, dtype] or tltyped's [dtype, dim]


class Analysis:
    """A jit function's parameters as analysed at decoration, resolvable for given const values."""

    def __init__(self, fn: Callable[..., Any], out_idx: OutIdx = None) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.out_idx_given = out_idx
        self.parameters = inspect.signature(fn).parameters
        for p in self.parameters.values():
            if p.kind is p.POSITIONAL_ONLY:
                raise DefinitionError(f"{self.name}: positional-only parameter {p.name!r} is not supported; remove the `/`")
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise DefinitionError(f"{self.name}: variadic parameter {p.name!r} is not supported; name each parameter")
        defaulted: str | None = None  # a call's missing arguments are its last parameters' defaults
        for p in self.parameters.values():
            if p.default is not p.empty:
                defaulted = defaulted or p.name
            elif defaulted is not None:  # only a keyword-only one can: `def f(A, *, block=64, threads)`
                raise DefinitionError(f"{self.name}: {grammar.required_after_default(p.name, defaulted)}")
        self.body = analyze_body(fn, self.parameters)
        self.module_names = module_names(self.body.filename)
        self.env = environment(fn)
        # TileLang's own `T.Tensor[...]` in the signature is read from source, as an in-body annotation is: evaluated
        # it is a TVM buffer that no longer says which names are dims, consts or literals (and under `from __future__
        # import annotations` it may name the kernel's consts, which have no value yet)
        tilelang_tensors = {name: annotation for name, annotation in self.body.signature.items()
                            if self._tensor_kind(annotation.node) not in (None, Tensor)}
        self.hints = _signature_hints(fn, self.env, set(tilelang_tensors))
        self.source_annotations = {**tilelang_tensors, **self.body.annotations}  # those read from source
        self.returns = _return_annotation(fn, self.env)
        self.out_idx = _outputs(self.name, list(self.parameters), out_idx, self.body)
        self.signature = self._read(None)
        for param in self.signature.tensors:
            if param.has_default:  # its default could only be refused at every call that leaves it out
                raise DefinitionError(
                    f"{self.name}: tensor parameter {param.name!r} has a default ({param.default!r}); a kernel's tensors "
                    "are always given: leave it out of the kernel, or make a kernel without it"
                )

    def resolve(self, consts: Mapping[str, Any]) -> KernelSignature:
        """The signature with every annotation read for these values of the consts it depends on (a call must give
        those a value: a tuned one would leave the tensors' shapes to the tuner, whose candidates all take the
        same tensors)."""
        for name in self.signature.depends_on:
            if isinstance(consts[name], Tune):
                raise DefinitionError(
                    f"{self.name}: a tensor annotation depends on {name!r}, so it cannot be tuned: pass a value "
                    f"(got {consts[name]!r})"
                )
            problem = const_problem(self.hints.get(name, inspect.Parameter.empty), consts[name])
            if problem is not None:  # the call's mistake, before the annotation's code runs on it
                raise problem[0](f"{self.name}: const parameter {name!r} {problem[1]}")
        return self._read(consts)

    def reread(self, consts: Mapping[str, Any] | None = None) -> KernelSignature:
        """The signature as the function's annotations read now (resolved for `consts`, where they depend on some):
        a fresh analysis, since a global or closure value they use may have been rebound since this one."""
        fresh = Analysis(self.fn, self.out_idx_given)
        return fresh.signature if consts is None else fresh.resolve(consts)

    # -- reading the parameters --------------------------------------------------

    def _const_params(self) -> list[str]:
        """Parameters an annotation may read as values: the consts (neither annotated in the body nor tensors or scalars)."""
        consts = []
        for p in self.parameters.values():
            if p.name in self.source_annotations:
                continue
            try:
                kind = parse_param(p.name, self.hints.get(p.name, p.empty), p.default, DimReader()).kind
            except DefinitionError:
                continue  # reported when the parameter itself is read
            if kind is Kind.CONST:
                consts.append(p.name)
        return consts

    def _read(self, consts: Mapping[str, Any] | None) -> KernelSignature:
        prelude = Prelude(self.body, environment(self.fn), list(self.parameters), self._const_params(),
                          self.module_names)  # live globals
        state = _State(prelude, consts, dict(self.body.dim_kinds))
        read: dict[str, Param] = {}
        tensors: list[tuple[inspect.Parameter, BodyAnnotation]] = []
        for p in self.parameters.values():
            in_body = self.source_annotations.get(p.name)
            if in_body is None:
                try:
                    read[p.name] = parse_param(p.name, self.hints.get(p.name, p.empty), p.default, DimReader(state.dim_kinds))
                except DefinitionError as exc:
                    raise DefinitionError(f"{self.name}: {exc}") from None
            elif p.name in self.body.signature and p.name in self.body.annotations:
                raise DefinitionError(
                    f"{self.body.where(in_body.line)}: parameter {p.name!r} is annotated both in the signature and in the body"
                )
            elif self._tensor_form(in_body.node) is None:
                self._refuse_reading_parameters(p.name, in_body, state)
                read[p.name] = self._body_param(p, in_body, state)
            else:
                tensors.append((p, in_body))
        # an int scalar parameter of a dim dtype may size a tensor (`M: T.int32` or `M: T.int64`, then `A:
        # T.Tensor[[M, K], ...]`): a dyn dim of its dtype, which it must equal
        state.scalars = {n: str(q.scalar) for n, q in read.items() if q.kind is Kind.DYN and q.scalar in grammar.DIM_DTYPES}
        state.other_scalars = {n: str(q.scalar) for n, q in read.items() if q.kind is Kind.DYN and n not in state.scalars}
        # a statement after a tensor's annotation may read its sizes (`m, k = A.shape`), which another annotation may
        # use: the tensors are read in the order of their annotations, each one's sizes known to those after it
        state.tensors = {name: AnnotatedSizes(self._annotated_at(name), param.tensor.dims)
                         for name, param in read.items() if param.tensor is not None}
        state.tensors.update({p.name: AnnotatedSizes(in_body.place) for p, in_body in tensors})
        for p, in_body in sorted(tensors, key=lambda tensor: tensor[1].place):
            try:
                read[p.name] = self._body_param(p, in_body, state)
                if p.name not in self.body.annotations:
                    read[p.name] = self._as_evaluated(p, read[p.name])
            except Deferred as deferred:
                read[p.name] = Param(p.name, Kind.TENSOR, p.default)
                state.tensors[p.name] = AnnotatedSizes(in_body.place, waits=deferred.consts)
                state.depends |= deferred.consts
                continue
            except DefinitionError as exc:
                if p.name in self.body.annotations:
                    raise
                read[p.name] = self._evaluated(p, in_body, exc)
            spec = read[p.name].tensor
            state.tensors[p.name] = AnnotatedSizes(in_body.place, None if spec is None else spec.dims)
        params = [dataclasses.replace(read[name], keyword_only=True) if p.kind is p.KEYWORD_ONLY else read[name]
                  for name, p in self.parameters.items()]
        outputs = tuple(params[i] for i in self.out_idx)
        for output in outputs:
            if output.kind is not Kind.TENSOR:
                raise DefinitionError(f"{self.name}: out_idx names {output.name!r}, which is not a tensor parameter")
        if outputs and self.returns is not None and len(self.returns) != len(outputs):
            stated = ", ".join(str(spec) for spec in self.returns) or "None"
            raise DefinitionError(f"{self.name}: {grammar.out_idx_against_return([o.name for o in outputs], stated)}")
        signature = KernelSignature(
            self.name, tuple(p for p in params if p not in outputs), state.dim_kinds,
            outputs=outputs, depends_on=tuple(sorted(state.depends)), dim_vars=dict(self.body.dim_vars),
            scalar_dims=tuple(sorted(state.scalar_dims)), returns=self.returns,
            dim_dtypes={**self.body.dim_dtypes, **{n: str(read[n].scalar) for n in state.scalar_dims
                                                   if read[n].scalar != grammar.DIM_DTYPE}},
        )
        if not signature.is_resolved:
            return signature
        _check_dims_bound(signature, self.body)
        checks = tuple(_shape_check(signature, a, self.body) for a in self.body.shape_asserts)
        return dataclasses.replace(signature, checks=checks)

    def _refuse_reading_parameters(self, name: str, ann: BodyAnnotation, state: _State) -> None:
        """A DefinitionError where an annotation other than a tensor form (`B: Bt`, a name bound to a tensor type)
        reads a parameter other than a const (`m, k = A.shape; Bt = T.Tensor[[k, m], T.float16]`): such annotations
        are read first, to know the scalars before the tensor forms (which may name them) and each tensor's sizes
        in the order of their annotations, so neither a tensor's sizes nor a scalar's variable is known to them."""
        found = parameter_read(self.body.statements, ann.node, ann.place, set(self.parameters) - state.prelude.const_params)
        if found is not None:
            read, line = found
            raise DefinitionError(
                f"{self.body.where(ann.line)}: {grammar.computed_type_name(name, read, self.body.where(line))}")

    def _annotated_at(self, name: str) -> tuple[int, int]:
        """The place (line, column) of a parameter's annotation read before the tensor forms: in the body (`B: Bt`,
        a name bound to a tensor type), else in the def, which is before every statement of the body."""
        annotation = self.body.annotations.get(name) or self.body.signature.get(name)
        return (0, 0) if annotation is None else annotation.place

    def _body_param(self, p: inspect.Parameter, ann: BodyAnnotation, state: _State) -> Param:
        where = self.body.where(ann.line)
        try:
            state.prelude.refuse_rebound_by_nested(ann.node, ann.place)
            form = self._tensor_form(ann.node)
            if form is None:
                try:
                    value = state.evaluate(ann.node, ann.place)
                except Deferred:
                    raise DefinitionError(
                        f"the annotation of {p.name!r} is computed from const values; only tensor annotations may be"
                    ) from None
                return self._named_type(p, value, state)
            if form.either_order:
                try:
                    form = self._in_order(form, ann.place, state)
                except Deferred:  # the order waits for const values: the annotation is read once they are given,
                    # so every const any part of it reads keys that reading, not only those the order needs
                    raise Deferred(state.prelude.consts_read(ann.node, ann.place)) from None
            deferred: set[str] = set()

            def part(read: Callable[[], Any]) -> Any:
                try:
                    return read()
                except Deferred as d:
                    deferred.update(d.consts)
                    return None

            dims = self._dims(form.shape, ann.place, state, part)
            strides = None if form.strides is None else self._dims(form.strides, ann.place, state, part)
            dtype = part(lambda: self._dtype(p.name, form.dtype, ann.place, state))
            if deferred or any(d is None for d in (*dims, *(strides or ()))) or dtype is None:
                raise Deferred(frozenset(deferred))
            return Param(p.name, Kind.TENSOR, p.default, tensor=TensorSpec(dtype, dims, strides))
        except (DefinitionError, dimlib.DimSyntaxError) as exc:
            text = str(exc)
            raise DefinitionError(text if text.startswith(self.body.filename) else f"{where}: {text}") from None

    def _named_type(self, p: inspect.Parameter, value: Any, state: _State) -> Param:
        """Parameter `p` annotated in the body with a name the body binds to a type (`Bt = ...; B: Bt`), `value`
        being what the name holds there.

        TileLang's `T.Tensor` and `T.StridedTensor` (either form) evaluate to a TVM buffer, read as a buffer the def
        evaluated is (prim_func.buffer_tensor_spec): its dims over the body's, and its strides where they are not
        the compact ones, so a call is checked against them. Any other value is read as a signature annotation is,
        its sizes of the body's dims (TIR expressions, as `T.const` and `T.dynamic` evaluate) read as the prelude's
        sizes are wherever an annotation in the body states one (`to_dim`), but it may declare no dims of its own
        (module TypeVars, `int`, `tl.dyn[int]`): the body's dims are those it declares, which the signature's dims,
        and a call's plan, would not include.
        """
        if _is_tir_buffer(value):
            from tltyped.frontend.prim_func import buffer_tensor_spec  # TileLang made the buffer: it is imported

            spec = buffer_tensor_spec(value, state.declared())
            for dim in (*spec.dims, *(spec.strides or ())):
                state.note(dim)
            return Param(p.name, Kind.TENSOR, p.default, tensor=spec)
        dims = DimReader(body_size=lambda size: state.note(to_dim(size, state.declared())))
        param = parse_param(p.name, value, p.default, dims)
        if dims.kinds:
            raise DefinitionError(grammar.type_name_declaring_dims(p.name, list(dims.kinds)))
        return param

    def _evaluated(self, p: inspect.Parameter, ann: BodyAnnotation, problem: DefinitionError) -> Param:
        """TileLang's T.Tensor in the signature whose source names what no scope the reading sees (a factory's
        values, which only the annotation uses): read from the buffer the def evaluated, unless it also names the
        kernel's own parameters (whose values the buffer fixed at the factory's)."""
        from tltyped.frontend.prim_func import annotated_tensor  # TileLang made the buffer: it is imported

        named = {node.id for node in ast.walk(ann.node) if isinstance(node, ast.Name)}
        try:
            evaluated = (None if named & set(self.parameters)
                         else annotated_tensor(p.name, self.fn.__annotations__.get(p.name), p.default))
        except DefinitionError as exc:
            raise DefinitionError(f"{self.body.where(ann.line)}: {exc}") from None
        if evaluated is None:
            raise DefinitionError(
                f"{problem} (TileLang's T.Tensor in a kernel's signature is read from its source, with the names of "
                "the kernel's module, its closure, its parameters and its body, or else from the sizes the def "
                "evaluated where each is an int; a factory's names the kernel does not use are not among the first: "
                f"annotate {p.name!r} in the body instead)"
            ) from None
        return evaluated

    def _as_evaluated(self, p: inspect.Parameter, read: Param) -> Param:
        """TileLang's T.Tensor in the signature as the def evaluated it, where every size there is an int and the
        source reads otherwise: only a name bound otherwise in the def's scope than in the module (a factory's
        argument named as a module global) makes them differ, and the def means Python's value."""
        from tltyped.frontend.prim_func import annotated_tensor  # TileLang made the buffer: it is imported

        evaluated = annotated_tensor(p.name, self.fn.__annotations__.get(p.name), p.default)
        if evaluated is None or evaluated.tensor is None or read.tensor is None:
            return read
        source, built = read.tensor, evaluated.tensor
        differs = [str(d) for d in source.dims] != [str(d) for d in built.dims]
        return evaluated if differs or source.dtype.fixed not in (None, built.dtype.fixed) else read

    def _tensor_form(self, node: ast.expr) -> _TensorForm | None:
        """`T.Tensor[[M, K], dt]`, `T.Tensor[dt, M, K]`, `T.Tensor((M, K), dt)`, `T.StridedTensor[[..], [..], dt]`/(...)."""
        kind = self._tensor_kind(node)
        if kind is None:
            return None
        proxy = sys.modules.get("tilelang.language.proxy")
        strided = proxy is not None and isinstance(kind, proxy.StridedTensorProxy)
        name = "T.StridedTensor" if strided else "T.Tensor"
        if isinstance(node, ast.Call):
            names = ("shape", "strides", "dtype") if strided else ("shape", "dtype")
            given = dict(zip(names, node.args))
            given.update({k.arg: k.value for k in node.keywords if k.arg is not None})
            if len(node.args) > len(names) or set(given) - set(names) or "shape" not in given or (strided and "strides" not in given):
                raise DefinitionError(f"expected {name}({', '.join(names)})")
            return _TensorForm(given["shape"], given.get("strides"), given.get("dtype"))
        assert isinstance(node, ast.Subscript)
        elts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if strided:
            if len(elts) not in (2, 3):
                raise DefinitionError("expected T.StridedTensor[[dims...], [strides...], dtype]")
            return _TensorForm(elts[0], elts[1], elts[2] if len(elts) == 3 else None)
        if isinstance(elts[0], (ast.List, ast.Tuple)):
            if len(elts) > 2:
                raise DefinitionError("expected T.Tensor[[dims...], dtype]")
            return _TensorForm(elts[0], None, elts[1] if len(elts) == 2 else None)
        if len(elts) == 2:
            return _TensorForm(elts[0], None, elts[1], either_order=True)
        return _TensorForm(ast.Tuple(elts=elts[1:], ctx=ast.Load()), None, elts[0])

    def _tensor_kind(self, node: ast.expr) -> object | None:
        """What `node`'s head (`T.Tensor` of `T.Tensor[...]` or `T.Tensor(...)`) is where it is a tensor annotation's:
        tltyped's `Tensor`, or TileLang's own `T.Tensor` or `T.StridedTensor` (if anything imported TileLang)."""
        head = node.value if isinstance(node, ast.Subscript) else node.func if isinstance(node, ast.Call) else None
        if head is None:
            return None
        try:
            kind = eval(compile(ast.Expression(head), "<annotation>", "eval"), dict(self.env))  # noqa: S307
        except Exception:
            return None
        proxy = sys.modules.get("tilelang.language.proxy")
        if kind is Tensor or (proxy is not None and isinstance(kind, (proxy.TensorProxy, proxy.StridedTensorProxy))):
            return kind
        return None

    def _in_order(self, form: _TensorForm, place: tuple[int, int], state: _State) -> _TensorForm:
        """`T.Tensor[x, y]` as TileLang's `[shape, dtype]` or as tltyped's `[dtype, dim]`, by the grammar's rule
        (`is_shape_first`), which the mypy plugin shares: TileLang's shape may be a name the body computes
        (`A_shape = (K, M) if trans_A else (M, K)`), so the spelling alone cannot tell. `x` that needs const
        values is read for each of them (`Deferred`).
        """
        x, y = form.shape, form.dtype
        assert y is not None
        try:
            parse_dim(y, self.body, *place, extra=state.dim_names(place))
            second_is_dim = True
        except dimlib.DimSyntaxError:
            second_is_dim = False
        # `x` is evaluated only where `y` leaves the order open, and where it is no dim (a dyn scalar parameter has
        # no value here)
        first_is_dtype = not (second_is_dim or self._is_one_dim(x, place, state)) and is_dtype_like(
            state.evaluate(x, place))
        if grammar.is_shape_first(first_is_dtype=first_is_dtype, second_is_dim=second_is_dim):
            return form
        return _TensorForm(ast.Tuple(elts=[y], ctx=ast.Load()), None, x)

    def _dims(
        self, node: ast.expr, place: tuple[int, int], state: _State, part: Callable[[Callable[[], Any]], Any],
    ) -> tuple[Any, ...]:
        """The dims a shape (or strides) gives; None for each that waits for const values (`part` records why)."""
        if isinstance(node, (ast.List, ast.Tuple)):
            return tuple(part(functools.partial(self._dim, elt, place, state)) for elt in node.elts)
        if self._is_one_dim(node, place, state):  # `T.Tensor[(n), dtype]`: no tuple, one dim (a dyn scalar's too)
            return (part(functools.partial(self._dim, node, place, state)),)
        value = part(lambda: state.size(node, place))
        if value is None:
            return (None,)
        values = list(value) if isinstance(value, (list, tuple)) or _is_tir_array(value) else [value]
        return tuple(state.note(to_dim(v, state.declared())) for v in values)

    def _is_one_dim(self, node: ast.expr, place: tuple[int, int], state: _State) -> bool:
        """Whether a shape that is no list is one dim, as the dim grammar reads it over the declared dims and the
        dyn scalar parameters."""
        try:
            parse_dim(node, self.body, *place, extra=state.dim_names(place))
        except dimlib.DimSyntaxError:
            return False
        return True

    def _dim(self, node: ast.expr, place: tuple[int, int], state: _State) -> dimlib.Dim:
        try:
            return state.note(parse_dim(node, self.body, *place, extra=state.dim_names(place)))
        except dimlib.DimSyntaxError as not_a_dim:
            try:
                value = state.size(node, place)
            except Undefined:  # (a scalar of no dim dtype `size` has named)
                if isinstance(not_a_dim, UndeclaredDim):
                    raise dimlib.DimSyntaxError(grammar.undeclared_dim(not_a_dim.name)) from None
                raise not_a_dim from None
            return state.note(to_dim(value, state.declared()))

    def _dtype(self, name: str, node: ast.expr | None, place: tuple[int, int], state: _State) -> DTypeSpec:
        """Parameter `name`'s fixed dtype, or (when it names const parameters such as `out_dtype`) an expression the binder evaluates."""
        if node is None:
            return DTypeSpec(fixed=UNSTATED_TENSOR_DTYPE)
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if used & set(state.prelude.const_params) and not used & state.prelude.bound_before(place):
            return DTypeSpec(source=ast.unparse(node))
        value = state.evaluate(node, place)
        if not is_dtype_like(value):
            raise DefinitionError(f"`{ast.unparse(node)}` is {value!r}, not a dtype")
        return DTypeSpec(fixed=parameter_dtype(name, value))


def analyze(fn: Callable[..., Any], out_idx: OutIdx = None) -> Analysis:
    return Analysis(fn, out_idx)


def _is_tir_buffer(value: object) -> bool:
    """Whether `value` is a TVM buffer, what TileLang's `T.Tensor(...)` and `T.StridedTensor` evaluate to (TVM is
    imported wherever one exists)."""
    tirx = getattr(sys.modules.get("tvm"), "tirx", None)
    return tirx is not None and isinstance(value, tirx.Buffer)


def _is_tir_array(value: object) -> bool:
    from tilelang import tvm

    return isinstance(value, tvm.ffi.Array)


def _outputs(name: str, parameters: list[str], out_idx: OutIdx, body: BodyInfo) -> tuple[int, ...]:
    """`jit(out_idx=...)`: the indices (into the parameters) of the tensors the kernel allocates and returns."""
    indices = out_indices(name, len(parameters), out_idx)
    if indices and body.returns:
        raise DefinitionError(
            f"{name}: out_idx is given and the kernel returns T.empty tensors; use one or the other"
        )
    return indices


def _shape_check(signature: KernelSignature, relation: ShapeAssert, body: BodyInfo) -> ShapeCheck:
    """`assert B.shape[0] == 2 * A.shape[0] + 1` -> a check between the parameters' dims. The build leaves the
    asserts of its line out of the kernel (elaborate.py's `assert_expr`: TileLang's run tells statements apart by
    their line only), so another assert on that line (`...; assert flag`) is refused rather than never run."""
    where = body.where(relation.line)
    if any(isinstance(stmt, ast.Assert) and stmt.lineno == relation.line for stmt in body.statements):
        raise DefinitionError(f"{where}: {grammar.ASSERT_ON_SHAPE_ASSERT_LINE}")
    params = {p.name: p for p in signature.params}

    class _Dims(ast.NodeTransformer):
        def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
            ref = shape_reference(node, params)
            param = params.get(ref[0]) if ref else None
            if ref is None or param is None or param.tensor is None or not 0 <= ref[1] < len(param.tensor.dims):
                raise DefinitionError(f"{where}: `{ast.unparse(node)}` is not a dim of a tensor parameter")
            return ast.parse(f"({param.tensor.dims[ref[1]].text})", mode="eval").body

        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            """`a % b` in the dim grammar's terms: `a - a // b * b`."""
            self.generic_visit(node)
            if not isinstance(node.op, ast.Mod):
                return node
            quotient = ast.BinOp(ast.BinOp(node.left, ast.FloorDiv(), node.right), ast.Mult(), copy.deepcopy(node.right))
            return ast.BinOp(copy.deepcopy(node.left), ast.Sub(), quotient)

    declared = {d: dimlib.symbol(d) for d in signature.dims}
    written = (ast.unparse(relation.left), ast.unparse(relation.right))
    try:
        sides = [dimlib.from_ast(_Dims().visit(copy.deepcopy(side)), declared) for side in (relation.left, relation.right)]
    except UndeclaredDim as exc:  # a const parameter, a global: the check is over a call's dims alone
        raise DefinitionError(
            f"{where}: `assert {' == '.join(written)}` is checked at each call against the tensors' dims, and "
            f"{exc.name!r} is not a dim of the kernel: a shape assert at the top of the body relates dims and int "
            "literals only"
        ) from None
    return ShapeCheck(sides[0], sides[1], " == ".join(written), relation.line, written, relation.message)


def _signature_hints(fn: Callable[..., Any], env: dict[str, Any], from_source: set[str]) -> dict[str, Any]:
    """The evaluated annotations of the parameters (strings under `from __future__ import annotations`) but those
    read `from_source`.

    Evaluated here rather than by `typing.get_type_hints`, which would read a
    TileLang dtype (a `str` subclass such as `T.float32`) as another forward
    reference; for the same reason only a plain `str` is source to evaluate.
    As in Python's typing, a quoted annotation (`M: "T.int32"`) is a forward
    reference, under postponed annotations too, where it reads twice.
    """
    postponed = bool(getattr(getattr(fn, "__code__", None), "co_flags", 0) & __future__.annotations.compiler_flag)
    hints = {}
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        if name == "return" or name in from_source:
            continue
        for _ in range(2 if postponed else 1):
            if type(annotation) is not str:
                break
            try:
                annotation = eval(annotation, env)  # noqa: S307
            except Exception as exc:
                raise DefinitionError(f"{fn.__name__}: cannot evaluate the annotation of {name!r}: {exc}") from exc
        hints[name] = annotation
    return hints


def _return_annotation(fn: Callable[..., Any], env: dict[str, Any]) -> tuple[TensorSpec, ...] | None:
    """The tensors the return annotation states (annotation.py's `parse_returns`); None without one, or where it
    cannot be evaluated here (a name only a type checker knows)."""
    annotation = getattr(fn, "__annotations__", {}).get("return", inspect.Parameter.empty)
    if annotation is inspect.Parameter.empty:
        return None
    if type(annotation) is str:
        try:
            annotation = eval(annotation, env)  # noqa: S307
        except Exception:  # noqa: BLE001 - `TYPE_CHECKING` imports, forward references: left to the type checker
            return None
    items = typing.get_args(annotation) if typing.get_origin(annotation) is tuple else ()
    if len(items) == 1 and is_tensor_annotation(items[0]):
        raise DefinitionError(f"{fn.__name__}: {grammar.ONE_TENSOR_TUPLE}")
    return parse_returns(annotation)


def _check_dims_bound(signature: KernelSignature, body: BodyInfo) -> None:
    """Every dim must be read off some input tensor's shape or strides (or solved from an affine size), or its
    value is unknowable."""
    bound = signature.bound_dims()
    for dim in signature.dims:
        if dim not in bound:
            line = body.dim_lines.get(dim)
            where = signature.name if line is None else body.where(line)  # an in-body dim: its declaration
            raise DefinitionError(f"{where}: {grammar.undetermined_dim(dim)}")
