"""Elaboration: run the kernel's Python body once per static signature to build TIR.

TileLang's eager-mode internals (`mutate`, `Builder`, `_patch_prim_func_attrs`
from `tilelang.language.eager`) are used here, and its `OutTensor` in language.py; the backend
uses TileLang's host wrapper (backend/lower.py, backend/launcher.py). Tests in
`tests/unit/test_tilelang_contract.py` fail loudly if an upgrade changes any of them.

TileLang's `mutate` rewrites the body once per jit function (keeping the
user's file and line numbers); each specialisation then runs it through a
Builder with every tensor parameter passed as a TIR buffer (const dims as
ints, each dyn dim as one shared TIR variable) and every const as its Python
value, so Python control flow on consts and on `A.shape` runs as Python.

Outputs are kernel parameters the call allocates: `T.empty` tensors and the
`T.alloc_global` buffers (scratch unless returned) become parameters after
the inputs as the body declares them, `jit(out_idx=...)` tensors are moved
there; `tilelang_out_idx` then names, from the end, the ones returned.

An elaboration that CPython's `ast` failed from another thread is run again
(frontend/ast_race.py).
"""

from __future__ import annotations

import ast
import functools
import inspect
import operator
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import tilelang  # noqa: F401  (first: waits for another thread's import of it; language._tilelang says why)
import tilelang.language as tl_language
import torch
from tilelang import tvm
from tilelang.language.eager import ast as tl_ast
from tilelang.language.eager import builder as tl_builder
from tilelang.language.eager import utils as tl_utils
from tilelang.language.eager.utils import construct_strides

from tltyped import locks
from tltyped.errors import ArgumentTypeError, ArgumentValueError, ElaborationError
from tltyped.frontend.ast_race import surviving_ast_race
from tltyped.frontend.extents import check_grid
from tltyped.frontend.fingerprint import source_digest
from tltyped.frontend.signature import KernelSignature, Kind, Param, Specialization
from tltyped.language import GlobalTensor
from tltyped.provenance import is_users_code
from tltyped.templates.names import c_names, identifier
from tltyped.types.dtypes import DTypeName, argument_dtype, call_with_tilelang_dtypes, tilelang_value, to_tilelang
from tltyped.types.tensor import shape_and_dtype

tirx = tvm.tirx
_INTERNAL_FILES = frozenset({tl_builder.__file__, tl_ast.__file__, __file__})


@dataclass(frozen=True)
class Elaborated:
    """A specialisation's PrimFunc, and the TIR variable standing for each dyn dim in it.

    The body may rename a dyn dim's variable (`(n,) = A.shape` names it `n`),
    so the launcher maps dims to kernel parameters through these objects.
    """

    prim_func: Any
    dyn_vars: Mapping[str, Any]


class _DimValues(dict[str, Any]):
    """The dims' values as `T.const`/`T.dynamic` look them up: "N " (TileLang keeps spaces) finds "N"."""

    def __missing__(self, name: str) -> Any:
        if name.strip() == name:
            raise KeyError(name)
        return self[name.strip()]


class _Builder(tl_builder.Builder):  # type: ignore[misc]
    """TileLang's Builder, told which names are the signature's dims and tensors.

    In the body (at its top, or re-stated in a frame such as `with
    T.Kernel(...)`), an annotation of a tensor parameter keeps the buffer
    already built from the signature, once checked against it, a dim
    declared with `T.const`/`T.dynamic` takes this specialisation's value (an
    int, or the dim's one TIR variable), a constant bound outside the kernel
    (such as a const dim read off `A.shape`) is a Python int, so plain Python
    can compute with it, and a shape `assert` is left out: every call checks
    it before the launch.
    """

    def __init__(
        self, tensors: frozenset[str], strided: frozenset[str], dims: dict[str, Any], dim_vars: Mapping[str, str],
        c_names: Mapping[str, str], checked_lines: frozenset[int],
    ) -> None:
        super().__init__()
        self.allocates_globals = True  # `T.alloc_global` declares a parameter the call allocates (language.py)
        self.eager_jit = "phase2"
        self.eager_jit_subs = _DimValues(dims)
        self._tensors = tensors
        self._strided = strided  # the tensors whose annotation states strides (`T.StridedTensor`)
        self._dims = dims
        self._dim_vars = dim_vars
        self._c_names = c_names
        self._checked_lines = checked_lines
        self.globals: list[Any] = []  # the T.alloc_global buffers, in declaration order
        self.returned: list[Any] = []  # the buffers the kernel returns, in return order

    def prim_func_arg(self, name: str, value: Any) -> Any:
        """A kernel parameter, named in TIR (and so in the CUDA and host code) by its safe C name."""
        return super().prim_func_arg(self._c_names.get(name, name), value)

    def get_parent_locals(self) -> dict[str, Any]:
        """The locals of the kernel body being run (the first frame outside the builder)."""
        return self._body_frame().f_locals

    def _body_frame(self) -> FrameType:
        """The frame of the kernel body being run (the first outside the builder)."""
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename in _INTERNAL_FILES:
            frame = frame.f_back
        assert frame is not None
        return frame

    def bind(self, name: str, value: Any, annot: Any = tl_ast.BaseBuilder.empty, *, loop_target: bool = False) -> Any:
        if value is self.empty and name in self._tensors and self.find_frame_idx(tl_builder.MacroFrame) is None:
            # a tensor parameter's annotation, at the body's top or re-stated in a frame (`with T.Kernel(...)`, where
            # TileLang would ignore tltyped's `T.Tensor[...]` and fail on a buffer, `T.StridedTensor`, with
            # "Unexpected type for TIR MatchBuffer"): the built buffer, which the kernel's code indexes, once checked
            # against it; a macro's own annotations are TileLang's
            body = self._body_frame()
            buffer = body.f_locals[name]
            _check_as_read(name, _unquoted(annot, body), buffer, name in self._strided)
            return buffer
        if isinstance(self.frames[-1], tl_builder.tirx.frame.PrimFuncFrame):
            dim = self._dim_vars.get(name, name)
            known = self._dims.get(dim)
            if isinstance(known, tirx.Var) and isinstance(value, tirx.Var) and value.name in (dim, known.name):
                return known  # `M = T.dynamic("m")`: the dim's one variable (named by its safe C name)
            if isinstance(value, tirx.IntImm) and value.dtype == "int32":
                return int(value)  # `(m, k) = A.shape` gives Python ints for const dims
        return super().bind(name, value, annot, loop_target=loop_target)

    def resolve_call(self, func: Any) -> Any:
        """A call the body makes into TileLang or TVM (`T.infinity(tl.float32)`, `x.astype(tl.float16)`, `T.Cast`)
        takes tltyped's dtype classes; the user's own functions get the arguments as the body passes them."""
        resolved = super().resolve_call(func)
        module = getattr(func, "__module__", None)
        if isinstance(module, str) and module.partition(".")[0] in ("tilelang", "tvm", "tvm_ffi"):
            return functools.partial(call_with_tilelang_dtypes, resolved)
        return resolved

    def assert_expr(self, cond: Any, msg: Any = None) -> Any:
        """A shape `assert` that every call checks before the launch is no check in the kernel, but a fact for it.

        Over dyn dims (`assert X.shape[1] // 8 * 8 == X.shape[1]`) it becomes
        `T.assume(cond)`, which TVM's analysis uses (the vectorizer may then
        load 8 fp16 at once from a row of dyn width); an Assert, TileLang's
        reading, would open a frame around the rest of the body, and T.empty
        must stay at the function's top. Over const dims it is already True.
        """
        if self.current_line in self._checked_lines and isinstance(self.frames[-1], tl_builder.tirx.frame.PrimFuncFrame):
            cond = tl_builder.unwrap_cond(cond)
            if isinstance(cond, tirx.PrimExpr):
                self.eval(tl_language.assume(_as_fact(cond)))
            return None
        return super().assert_expr(cond, msg)

    def bind_immutable(self, name: str, value: Any) -> Any:
        if isinstance(value, GlobalTensor):
            buffer = tl_builder.tirx.arg(
                name, tl_builder.tirx.buffer(shape=value.shape, dtype=value.dtype, strides=construct_strides(tuple(value.shape)))
            )
            self.globals.append(buffer)
            return buffer
        return super().bind_immutable(name, value)

    def ret(self, value: Any = None) -> Any:
        """The kernel's `return`: T.empty tensors (all of them) and T.alloc_global buffers it wants back."""
        if self.find_frame_idx(tl_builder.MacroFrame) is not None:
            return super().ret(value)
        self.check_continue_break()
        values = () if value is None else value if isinstance(value, tuple) else (value,)
        for v in (self.unwrap_value(v) for v in values):
            is_global = any(v is g for g in self.globals)
            if not isinstance(v, tirx.Buffer) or not (hasattr(v, "_out_idx") or is_global):
                raise ElaborationError(f"Only tensor allocated from `T.empty` can be returned in a prim_func, got {v}({type(v)})")
            if any(v is r for r in self.returned):  # one output, one tensor: return it once
                raise ElaborationError(f"the kernel returns `{v.name}` twice; a call returns each output once")
            if not is_global:
                self.out_idx.append(len(self.returned))  # counted against the T.empty tensors when the function ends
            self.returned.append(v)
        return NotImplemented


def _check_as_read(name: str, annotation: Any, buffer: Any, strided: bool) -> None:
    """An in-body annotation of tensor parameter `name` as the body's run evaluates it, against the buffer built from
    the signature, which every call is checked and allocated for. The signature was read from the body's source at
    decoration, without running it (frontend/body.py, prelude.py); where that reading and this run differ (a size
    or stride a function the body calls changes: `widen(shape)`), the kernel would index the tensor as one size
    while calls are checked as another, so it is not built. Strides are compared where the signature states them
    (`strided`: read from a `T.StridedTensor`) or this annotation does (one re-stated in a frame as a
    `T.StridedTensor`, of a tensor the signature reads as a `T.Tensor`); a `T.Tensor` states none, and is built
    with a non-contiguous call's strides. A size or stride of no kind the reading at decoration takes (a float, a bool, a NumPy int) is refused,
    not compared."""
    stated = _stated(annotation)
    if stated is None:
        return
    dims, stated_strides, dtype = stated
    compared = strided or bool(stated_strides)
    strides, built_strides = (stated_strides, list(buffer.strides)) if compared else (None, None)
    odd = [size for size in (*dims, *(strides or ())) if not _is_size(size)]
    analyzer = tvm.arith.Analyzer()
    if not odd and _same_sizes(analyzer, dims, list(buffer.shape)) and _same_sizes(
            analyzer, strides, built_strides) and dtype in (None, str(buffer.dtype)):
        return
    run = _described(dtype or buffer.dtype, dims, strides)
    if odd:
        run += f" ({odd[0]!r}, of type {type(odd[0]).__name__}, is neither an int nor an integer expression of dims)"
    read = _described(buffer.dtype, list(buffer.shape), built_strides)
    raise ElaborationError(
        f"parameter {name!r} is {run} as the body runs, but was read as {read} from its source when the kernel was "
        "decorated, and every call is checked against that reading; compute the size in the body's own statements "
        "before the annotation (the kernel is not built)"
    )


def _unquoted(annotation: Any, body: FrameType) -> Any:
    """A quoted annotation (`A: "T.Tensor(shape, T.float16)"`) as the expression it holds evaluates where the body's
    run stands, as decoration read it (types/source.py's `unquoted`); any other as it is."""
    if not isinstance(annotation, str):
        return annotation
    return eval(annotation.strip(), body.f_globals, body.f_locals)  # noqa: S307 (the kernel's own source)


def _stated(annotation: Any) -> tuple[list[Any], list[Any] | None, str | None] | None:
    """The sizes, strides and dtype a tensor annotation states: tltyped's `Tensor[...]` (no strides) or TileLang's
    buffer (`T.StridedTensor`; strides computed for a contiguous one), the dtype as a tensor argument's (`tfloat32`
    is a float32 tensor, as the signature reads it; None where it is none); None for any other annotation."""
    if isinstance(annotation, tirx.Buffer):
        dims, strides, dtype = list(annotation.shape), list(annotation.strides), str(annotation.dtype)
    elif (read := shape_and_dtype(annotation)) is not None:
        (dims, dtype), strides = read, None
    else:
        return None
    try:
        return dims, strides, str(to_tilelang(argument_dtype(dtype)))
    except (ArgumentTypeError, TypeError, ValueError, AttributeError):
        return dims, strides, None


def _is_size(value: Any) -> bool:
    """Whether a size or stride as the body's run states it is of a kind the reading at decoration takes
    (prelude.py's `to_dim`): an int, or an integer TIR expression (a dim's variable, arithmetic of them)."""
    if isinstance(value, tirx.PrimExpr):
        return value.dtype.type_code in (tvm.DataTypeCode.INT, tvm.DataTypeCode.UINT)
    return isinstance(value, int) and not isinstance(value, bool)


def _same_sizes(analyzer: Any, stated: list[Any] | None, built: list[Any] | None) -> bool:
    """Whether sizes (or strides) an annotation states are provably the built buffer's, one by one: ints or TIR
    expressions over the same dim variables (None: none stated, or none built)."""
    if stated is None or built is None:
        return stated is built
    as_int64 = [[tirx.IntImm("int64", x) if isinstance(x, int) else tirx.Cast("int64", x) for x in sizes]
                for sizes in (stated, built)]
    return len(stated) == len(built) and all(analyzer.can_prove_equal(a, b) for a, b in zip(*as_int64))


def _described(dtype: Any, dims: list[Any], strides: list[Any] | None) -> str:
    """`float16[N, 4]`, with `strides [4, 1]` where they are stated."""
    text = f"{dtype}[{', '.join(map(str, dims))}]"
    return text if strides is None else f"{text} with strides [{', '.join(map(str, strides))}]"


def _as_fact(relation: Any) -> Any:
    """`a == b` as TVM's analysis reads it: `a - b == 0`, simplified, so `n // 8 * 8 == n` becomes `n % 8 == 0`."""
    return tvm.arith.Analyzer().simplify(relation.a - relation.b == 0) if isinstance(relation, tirx.EQ) else relation


class Elaborator:
    """Builds the PrimFunc of one specialisation of a jit function."""

    def __init__(
        self, fn: Callable[..., Any], signature: KernelSignature, reread: Callable[[], KernelSignature] | None = None
    ) -> None:
        self._fn = fn
        self._signature = signature
        self._reread = reread  # the signature as the annotations read now (Analysis.reread)
        self._symbol = identifier(signature.name)  # the kernel's name in TIR, CUDA and the host code
        runtime = [p.name for p in signature.params if p.is_runtime]
        safe = c_names(  # the names of kernel parameters and dyn dims in TIR, CUDA and the host code
            runtime + list(signature.dyn_dims),
            reserved=[f"{self._symbol}_kernel", *(f"{p.name}_desc" for p in signature.tensors)],  # TileLang's own
        )
        self._c_names = dict(zip(runtime, safe))
        self._dim_c_names = dict(zip(signature.dyn_dims, safe[len(runtime) :]))
        self._generator: Any = None
        self._cells: tuple[object, ...] = ()  # what the closure cells held when the generator was made
        self._code: object = None  # the function's code then (a hot patcher, `%autoreload`, swaps it in place)
        self._text = ""  # the digest of the file's text it was parsed from (fingerprint.source_digest)
        self._lock = locks.Lock()

    def _ir_generator(self) -> Any:
        """TileLang's rewrite of the body, made again whenever a closure cell holds another object than when it was
        made, the process has read the body's file anew, or the function was given other code in place (IPython's
        `%autoreload`): `mutate` binds the cells' values into the rewrite and parses the body from the file's text
        where the code says it is, and a build must use the values and the text its record is keyed on (a
        factory's `nonlocal` rebound is read again, as a rebound global is)."""
        with self._lock:
            _materialize_dtype_names(self._fn)
            cells = _cell_contents(self._fn)
            code = self._fn.__code__
            text = source_digest(code.co_filename)
            if (self._generator is None or text != self._text or code is not self._code
                    or any(now is not then for now, then in zip(cells, self._cells, strict=True))):
                self._generator = _rewrite(self._fn)
                self._cells, self._text, self._code = cells, text, code
            return self._generator

    def arguments(self, spec: Specialization) -> tuple[dict[str, Any], dict[str, Any]]:
        """The body's keyword arguments and the dims' values (a fresh TIR variable per dyn dim)."""
        dyn = {name: tirx.Var(self._dim_c_names[name], self._signature.dim_dtype(name)) for name in self._signature.dyn_dims}
        dims: dict[str, Any] = {**spec.dims, **dyn}
        kwargs: dict[str, Any] = {}
        for p in (*self._signature.params, *self._signature.outputs):
            if p.kind is Kind.TENSOR:
                kwargs[p.name] = _buffer(p, spec, dims)
            elif p.name in self._signature.scalar_dims:
                kwargs[p.name] = dims[p.name]  # a scalar that sizes a tensor is that dyn dim's variable
            elif p.kind in (Kind.DYN, Kind.PTR):
                assert p.scalar is not None
                kwargs[p.name] = tirx.Var(self._c_names[p.name], p.scalar)
            else:
                kwargs[p.name] = tilelang_value(spec.consts[p.name])
        return kwargs, dims

    def elaborate(self, spec: Specialization) -> Elaborated:
        return surviving_ast_race(lambda: self._elaborate(spec))

    def _elaborate(self, spec: Specialization) -> Elaborated:
        if self._reread is not None and (now := self._reread()) != self._signature:
            # the body would read the new value, the call path checks and allocates for the old: refused, not built
            raise ElaborationError(
                f"{self._signature.name}: its annotations now read {now}, not {self._signature} as when its calls "
                "were set up (a global or closure value they use has changed); decorate the function again, or make "
                "the value a const parameter"
            )
        generator = self._ir_generator()
        kwargs, dims = self.arguments(spec)
        tensors = (*self._signature.tensors, *self._signature.outputs)
        strided = frozenset(p.name for p in tensors if p.tensor is not None and p.tensor.strides is not None)
        checked_lines = frozenset(c.line for c in self._signature.checks)
        builder = _Builder(frozenset(p.name for p in tensors), strided, dims, self._signature.dim_vars, self._c_names,
                           checked_lines)
        try:
            with builder.prim_func(self._symbol):
                generator.gen(builder)(**kwargs)
            prim_func = outputs_last(builder.get(), [p.name for p in self._signature.outputs])
            builder.out_idx = _returned_indices(prim_func, builder.returned)
            prim_func = tl_builder._patch_prim_func_attrs(prim_func, builder)
        except Exception as exc:
            # inside a T.macro the builder's line is the macro's; its stack keeps the body's file it was called from
            file = next((f for f, line, _ in builder.macro_fileline_stack if line > 0), builder.current_file)
            where = (failure_site(exc, file, builder.current_line) if builder.current_line
                     else self._signature.name)
            raise ElaborationError(f"{self._signature.name}: building the kernel failed at {where}: {_describe(exc)}") from exc
        _check_returns(self._signature, prim_func, dims)
        dyn_vars = {name: dims[name] for name in self._signature.dyn_dims}
        return Elaborated(prim_func, dyn_vars)


def _check_returns(signature: KernelSignature, prim_func: Any, dims: Mapping[str, Any]) -> None:
    """The tensors the kernel returns, against what its return annotation states: a call's result is what the
    annotation tells the caller (and their type checker) it is, or the kernel is not built."""
    if signature.returns is None:
        return
    params = list(prim_func.params)
    returned = [prim_func.buffer_map[params[i]] for i in _out_idx(prim_func)]
    stated = ", ".join(map(str, signature.returns)) or "None"
    found = ", ".join(f"{b.dtype}[{', '.join(map(str, b.shape))}]" for b in returned) or "nothing"
    problem = None
    if len(returned) != len(signature.returns):
        problem = f"{len(returned)} returned, {len(signature.returns)} stated"
    analyzer = tvm.arith.Analyzer()
    for index, (buffer, spec) in enumerate(zip(returned, signature.returns)):
        what = f"tensor {index}" if len(returned) > 1 else "the tensor"
        if spec.dtype.fixed is not None and to_tilelang(spec.dtype.fixed) != str(buffer.dtype):
            problem = problem or f"{what} is {buffer.dtype}, not {spec.dtype.fixed.name}"
        elif len(buffer.shape) != len(spec.dims):
            problem = problem or f"{what} has rank {len(buffer.shape)}, not {len(spec.dims)}"
        else:
            for axis, (size, dim) in enumerate(zip(buffer.shape, spec.dims)):
                if all(s in dims for s in dim.symbols) and not analyzer.can_prove_equal(size, dim.evaluate(dims)):
                    problem = problem or f"{what}'s axis {axis} is {size}, not {dim}"
    if problem is not None:
        raise ElaborationError(
            f"{signature.name}: returns {found}, but its return annotation states {stated}: {problem}"
        )


def failure_site(exc: BaseException, file: str, line: int) -> str:
    """`file:line` (the kernel's or factory's line that failed), and the innermost line of the user's own code that
    `exc` passed through below it: a helper of another module the body called, or a `T.macro` (of any module).

    Where the failure is inside a `T.macro`, `file:line` is the line of `file` that called the macro (the
    builder's own line is the macro's then): the kernel's line first, the macro's in parentheses, as for a
    helper, so that a macro called twice says which call failed."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    entered = next((i for i, frame in enumerate(frames) if _enters_a_macro(frame.tb_frame)), None)
    if entered is None:
        below = [frame for frame in frames if frame.tb_frame.f_code.co_filename != file]
    else:
        callers = [frame.tb_lineno for frame in frames[:entered] if frame.tb_frame.f_code.co_filename == file]
        line = callers[-1] if callers else line
        below = frames[entered + 1:]
    inner = None
    for frame in below:  # TVM adds frames of its C++ (`op.cc`), of no module
        code, module = frame.tb_frame.f_code, frame.tb_frame.f_globals.get("__name__")
        if isinstance(module, str) and is_users_code(code.co_filename, module):
            inner = frame
    site = f"{file}:{line}"
    if inner is None:
        return site
    return f"{site} (in {inner.tb_frame.f_code.co_name} at {inner.tb_frame.f_code.co_filename}:{inner.tb_lineno})"


def _enters_a_macro(frame: FrameType) -> bool:
    """Whether a traceback's frame is TileLang's call of a `T.macro` (`Macro.__call__`), below which the macro's body
    runs."""
    return frame.f_code.co_name == "__call__" and isinstance(frame.f_locals.get("self"), tl_builder.Macro)


def outputs_last(prim_func: Any, outputs: list[str]) -> Any:
    """The `out_idx` tensors (by name) moved behind every other parameter, in `out_idx` order, and returned."""
    if not outputs:
        return prim_func
    by_name = {prim_func.buffer_map[var].name if var in prim_func.buffer_map else var.name: var for var in prim_func.params}
    params = [var for name, var in by_name.items() if name not in outputs] + [by_name[name] for name in outputs]
    moved = tirx.PrimFunc(params, prim_func.body, prim_func.ret_type, prim_func.buffer_map, prim_func.attrs)
    return moved.with_attr("tilelang_out_idx", [i - len(outputs) for i in range(len(outputs))])


def returned_shapes(
    name: str, elaborated: Elaborated, inputs: int, sizes: Mapping[str, Any], scalars: Mapping[str, Any]
) -> list[tuple[tuple[Any, ...], str]]:
    """The shape and dtype of each output the kernel `name` returns, in return order, for these dyn dims' sizes
    and dyn scalars' values (`T.empty((n,), ...)` of a parameter `n: T.int32`, sized as the launcher sizes it).

    The outputs are the parameters after the `inputs` runtime ones; `tilelang_out_idx` says, from the end,
    which are returned (what the launcher returns, and a call with meta tensors gives back). A size is an
    int, or torch's symbolic size where the dyn dims' are (a traced call): each output's shape is evaluated
    over them, so it stays symbolic. A negative size is refused as the launcher refuses it, and a grid beyond
    CUDA's limits at these sizes as a launch would be.
    """
    prim_func = elaborated.prim_func
    params = list(prim_func.params)
    returned = _out_idx(prim_func)
    values = {elaborated.dyn_vars[name].name: size for name, size in sizes.items() if name in elaborated.dyn_vars}
    values.update((var.name, scalars[var.name]) for var in params if var not in prim_func.buffer_map and var.name in scalars)
    shapes = []
    for index in returned:
        buffer = prim_func.buffer_map[params[len(params) + index]]
        shape = tuple(_evaluate(size, values) for size in buffer.shape)
        for dim, size in enumerate(shape):
            if isinstance(size, int) and size < 0:
                raise ArgumentValueError(f"{name}: output {buffer.name!r} would have size {size} in dim {dim} "
                                         f"(its shape is {tuple(buffer.shape)})")
        shapes.append((shape, str(buffer.dtype)))
    assert all(len(params) + i >= inputs for i in returned), "an input is never returned"
    check_grid(name, prim_func, lambda extent: _evaluate(extent, values))
    return shapes


_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "Add": operator.add, "Sub": operator.sub, "Mul": operator.mul, "FloorDiv": operator.floordiv,
    "FloorMod": operator.mod, "Min": torch.sym_min, "Max": torch.sym_max,  # symbolic, not a guard on the sizes
}


def _evaluate(expr: Any, values: Mapping[str, Any]) -> Any:
    """An integer TIR expression over dyn dims' variables (by name), evaluated on their sizes (ints or SymInts)."""
    kind = type(expr).__name__
    if kind == "IntImm":
        return int(expr.value)
    if kind == "Var":
        return values[expr.name]
    if kind == "Cast":
        return _evaluate(expr.value, values)
    if kind in _ARITHMETIC:
        return _ARITHMETIC[kind](_evaluate(expr.a, values), _evaluate(expr.b, values))
    raise ArgumentValueError(f"an output's size `{expr}` is not integer arithmetic of dims")


def _buffer(p: Param, spec: Specialization, dims: Mapping[str, Any]) -> Any:
    """A tensor parameter's buffer: its annotation's shape (and strides), this specialisation's dtype and layout."""
    assert p.tensor is not None
    shape = [d.evaluate(dims) for d in p.tensor.dims]
    dtype = to_tilelang(spec.dtypes[p.name])
    if p.tensor.strides is not None:
        return tl_language.StridedTensor(shape, [d.evaluate(dims) for d in p.tensor.strides], dtype)
    strides = spec.strides.get(p.name)
    return tl_language.Tensor(shape, dtype) if strides is None else tl_language.StridedTensor(shape, strides, dtype)


def _out_idx(prim_func: Any) -> list[int]:
    """The parameters the kernel returns, in return order, counted from the end (`tilelang_out_idx`)."""
    attrs = prim_func.attrs
    return [int(i) for i in attrs["tilelang_out_idx"]] if attrs and "tilelang_out_idx" in attrs else []


def _returned_indices(prim_func: Any, returned: list[Any]) -> list[int]:
    """Each returned buffer's parameter, counted from the end (TileLang's `tilelang_out_idx`)."""
    params = list(prim_func.params)
    data = [prim_func.buffer_map[var].data if var in prim_func.buffer_map else None for var in params]
    indices = []
    for buffer in returned:
        index = next(i for i, d in enumerate(data) if d is not None and d.same_as(buffer.data))
        indices.append(index - len(params))
    return indices


def _describe(exc: Exception) -> str:
    text = str(exc).strip()
    if "Only tensor allocated from `T.empty` can be returned" in text:
        return "a kernel returns global buffers (T.empty / T.alloc_global) only; " + text
    if "Not all tensor allocated from `T.empty` are returned" in text:
        return text + " (use T.alloc_global for scratch memory the kernel does not return)"
    return failure_text(exc)


def failure_text(exc: BaseException) -> str:
    """`Type: message`. An exception with no message is described by the line that raised it: TileLang's bare
    `assert`s (`assert len(obj.indices) == len(exts)` in tilelang/utils/language.py) say what they checked no
    other way."""
    text = str(exc).strip()
    frames = traceback.extract_tb(exc.__traceback__)
    if not text and frames:
        filename = frames[-1].filename.split("site-packages/", 1)[-1]
        text = f"`{frames[-1].line}` failed" if frames[-1].line else "raised"
        text += f" ({filename}:{frames[-1].lineno})"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_EMPTY_CELL = object()


def _cell_contents(fn: Callable[..., Any]) -> tuple[object, ...]:
    """The objects the function's closure cells hold now (`_EMPTY_CELL` for a variable not assigned yet)."""
    contents = []
    for cell in fn.__closure__ or ():
        try:
            contents.append(cell.cell_contents)
        except ValueError:
            contents.append(_EMPTY_CELL)
    return tuple(contents)


def _rewrite(fn: Callable[..., Any]) -> Any:
    """TileLang's rewrite of the body (`tl_ast.mutate`), with the parameters' defaults left out of the function it
    defines again: every build passes each argument, and a default naming a variable of the function that made
    the kernel (`block=threads` in a factory) names nothing where the rewrite is defined (its module's globals,
    the kernel's closure cells). TileLang parses the body from its file as it is on disk now."""
    tree = tl_utils.get_ast(fn)
    definition = tree.body[0]
    definition.args.defaults, definition.args.kw_defaults = [], [None] * len(definition.args.kwonlyargs)
    filename = str(Path(inspect.getsourcefile(fn) or inspect.getfile(fn)).absolute())
    cells = tl_utils.get_func_nonlocals(fn)
    mutator = tl_ast.DSLMutator(cells, fn.__globals__, filename)
    tree = mutator.visit(tree)
    make_closure = tl_utils.get_compiled_object(tree, "make_closure", filename, fn.__globals__)
    return tl_ast.IRGenerator(gen=make_closure(**cells), source=ast.unparse(tree), extra_type_hints=mutator.extra_type_hints)


def _materialize_dtype_names(fn: Callable[..., Any]) -> None:
    """Give the body TileLang's dtype objects where its module and closure hold `DTypeName`s.

    A dtype named through `tltyped.language` before TileLang was imported
    (`DTYPE = T.float16` at module level) is a `DTypeName`; it equals the
    dtype, and is replaced by it, once, before the body first runs.
    """
    module = fn.__globals__
    for name, value in list(module.items()):
        if isinstance(value, DTypeName):
            module[name] = tilelang_value(value)
    for cell in fn.__closure__ or ():
        try:
            if isinstance(cell.cell_contents, DTypeName):
                cell.cell_contents = tilelang_value(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
