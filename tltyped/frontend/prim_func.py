"""A TileLang PrimFunc read as a KernelSignature: the kernels lazy-style factories return.

The PrimFunc a factory returns fixes everything a signature states: each
buffer parameter is a tensor of a fixed dtype whose dims are ints (literal
dims), TIR variables (`T.dynamic("m")`: dyn dims, named as the variable is)
or expressions of them (derived dims); a buffer declared with strides other
than the compact ones (`T.StridedTensor`) binds its strides as dims too; a
scalar parameter is a dyn scalar (`T.int32`, `T.float32`) or a raw pointer
(`T.handle`), and one annotated with a dim variable (`n: n`) is that dim: the
call's value of it sizes the tensors naming it, outputs alone included;
`out_idx` names the tensors the call allocates and returns.

`FactoryElaboration` is how a factory's kernels are elaborated: by running
the factory with its arguments at the true miss that builds a kernel
(TileLang parses a body in milliseconds, next to seconds of nvcc), so a
kernel is always built from the values the factory reads now. A
`T.alloc_global` workspace the PrimFunc allocates at its top level (as
flash decoding's split results) becomes a parameter the call allocates, as
eager `T.alloc_global` scratch is, so the launcher passes it. If the
factory's kernel no longer has the signature its kernel object was made
with (a global it reads was rebound since), the build is refused rather
than launched with a mismatched layout.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tilelang import tvm

from tltyped.abi import check_host_scalar
from tltyped.autotuner import first_candidates, tuned
from tltyped.errors import ArgumentValueError, DefinitionError, DimSyntaxError, ElaborationError
from tltyped.frontend import dims as dimlib
from tltyped.frontend.ast_race import surviving_ast_race
from tltyped.frontend.elaborate import Elaborated, failure_site, failure_text, outputs_last
from tltyped.frontend.lazy import out_indices
from tltyped.frontend.prelude import to_dim
from tltyped.frontend.signature import DTypeSpec, Kind, KernelSignature, Param, Specialization, TensorSpec
from tltyped.frontend.tir_nodes import tir_nodes
from tltyped.types import in_body_grammar as grammar
from tltyped.types.dtypes import as_dtype
from tltyped.types.values import describe

tirx = tvm.tirx


_BUILDER_LOG = logging.getLogger("tilelang.language.eager.builder")


class _WithoutTheBuildersDump(logging.Filter):
    """TileLang logs, as CRITICAL, the whole builder source of a `@T.prim_func` that fails to build; the error
    run_factory raises names the factory's line and arguments instead, and keeps TileLang's as its cause."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Failed to build prim_func")


def run_factory(fn: Callable[..., Any], arguments: Mapping[str, Any]) -> Any:
    """The PrimFunc the factory returns for these arguments; a failure names them, and the factory's line it
    reached (TileLang's own error, often TVM's, says little about which argument it could not take)."""
    quiet = _WithoutTheBuildersDump()
    _BUILDER_LOG.addFilter(quiet)
    try:
        result = fn(**arguments)
    except Exception as exc:
        file = fn.__code__.co_filename
        lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == file]
        given = ", ".join(f"{name}={describe(value)}" for name, value in arguments.items())
        where = failure_site(exc, file, lines[-1]) if lines and lines[-1] is not None else fn.__name__
        raise ElaborationError(
            f"{fn.__name__}: running the factory with {given} failed at {where}: {failure_text(exc).splitlines()[0]}"
        ) from exc
    finally:
        _BUILDER_LOG.removeFilter(quiet)
    if not isinstance(result, tirx.PrimFunc):
        raise DefinitionError(
            f"{fn.__name__}: a lazy-style factory returns the @T.prim_func it defines; it returned {describe(result)}"
        )
    return result


def run_and_read(
    fn: Callable[..., Any], arguments: Mapping[str, Any], out_idx: int | Sequence[int] | None,
) -> tuple[Any, tuple[KernelSignature, dict[str, Any]]]:
    """The PrimFunc the factory returns for these arguments (a tuned one as the candidate being built), and its
    kernel's signature: both parse source (TileLang's `@T.prim_func`, tltyped's dims), so both are run again
    together where CPython's ast failed one from another thread (`surviving_ast_race`)."""
    prim_func = run_factory(fn, arguments)
    return prim_func, read_signature(fn.__name__, prim_func, out_idx)


def read_signature(name: str, prim_func: Any, out_idx: int | Sequence[int] | None) -> tuple[KernelSignature, dict[str, Any]]:
    """The kernel's signature, and the TIR variable of each of its dyn dims."""
    params = list(prim_func.params)
    buffers = prim_func.buffer_map
    outputs = out_indices(name, len(params), out_idx)
    for index in outputs:
        if params[index] not in buffers:
            raise DefinitionError(f"{name}: out_idx names {params[index].name!r}, which is not a tensor parameter")
    tensors = [buffers[p] for p in params if p in buffers]
    variables = _dim_variables(name, tensors)
    declared = {var_name: dimlib.symbol(var_name) for var_name in variables}
    read = [_param(name, var, buffers.get(var), declared) for var in params]
    scalar_dims = _scalar_dims(name, [var for var, p in zip(params, read) if p.kind is Kind.DYN], tensors, variables)
    signature = KernelSignature(
        name=name,
        params=tuple(p for i, p in enumerate(read) if i not in outputs),
        dims=dict.fromkeys(variables, True),
        outputs=tuple(read[i] for i in outputs),
        scalar_dims=scalar_dims,
        dim_dtypes=_dim_dtypes(name, variables),
    )
    bound = signature.bound_dims()
    for dim in signature.dims:
        if dim not in bound:  # on an output only, or only inside an expression: as for an eager kernel
            raise DefinitionError(f"{name}: {grammar.undetermined_dim(dim)}")
    return signature, variables


def _dim_variables(name: str, buffers: list[Any]) -> dict[str, Any]:
    """Every TIR variable the buffers' shapes and strides name, by name (each name one variable)."""
    found: dict[str, Any] = {}
    for buffer in buffers:
        for expr in (*buffer.shape, *buffer.strides):
            for node in tir_nodes(expr):
                if isinstance(node, tirx.Var) and not found.setdefault(node.name, node).same_as(node):
                    raise DefinitionError(f"{name}: two different dim variables are both named {node.name!r}")
    return found


def _dim_dtypes(name: str, variables: Mapping[str, Any]) -> dict[str, str]:
    """Each dim variable's dtype other than the default (`T.dynamic("n", "int64")`), checked as the in-body form's
    declarations are: the launcher passes the dim in it, and a call's size must fit it."""
    dtypes = {}
    for var_name, var in variables.items():
        try:
            dtype = grammar.dim_dtype("T.dynamic", str(var.dtype), quoted=True)
        except DimSyntaxError as exc:
            raise DefinitionError(f"{name}: dim {var_name!r}: {exc}") from None
        if dtype != grammar.DIM_DTYPE:
            dtypes[var_name] = dtype
    return dtypes


def _scalar_dims(name: str, scalars: list[Any], buffers: list[Any], variables: Mapping[str, Any]) -> tuple[str, ...]:
    """The dyn scalar parameters that are dim variables (`n: n` for `n = T.dynamic("n")`): each call's value of
    one is that dim, which sizes the tensors naming it, outputs alone included. A scalar named as a dim variable
    but another variable (`n: T.int32` beside a shape's `n` of the enclosing scope) is refused: the kernel
    would take two values of one name, which TileLang's host code cannot tell apart."""
    found = []
    for var in scalars:
        dim = variables.get(var.name)
        if dim is None:
            continue
        if not dim.same_as(var):
            sized = next(b.name for b in buffers
                         if any(node.same_as(dim) for e in (*b.shape, *b.strides) for node in tir_nodes(e)))
            raise DefinitionError(
                f"{name}: scalar parameter {var.name!r} is another variable than the dim {var.name!r} in the shape of "
                f"{sized!r} (`{var.name}: T.{var.dtype}` makes one of its own), so it does not size {sized!r}; "
                f'annotate the parameter with the T.dynamic("{var.name}") variable itself (`{var.name}: {var.name}` '
                f'where {var.name} = T.dynamic("{var.name}")), or rename one of them'
            )
        found.append(var.name)
    return tuple(found)


def _param(name: str, var: Any, buffer: Any, declared: Mapping[str, dimlib.Dim]) -> Param:
    if buffer is None:
        dtype = str(var.dtype)
        if dtype == "handle":
            return Param(var.name, Kind.PTR, scalar=dtype)
        try:  # known only now: the factory's arguments may choose the dtype
            check_host_scalar(var.name, as_dtype(dtype))
        except (DefinitionError, ArgumentValueError) as exc:
            raise DefinitionError(f"{name}: {exc}") from None
        return Param(var.name, Kind.DYN, scalar=dtype)
    try:
        tensor = buffer_tensor_spec(buffer, declared)
    except DimSyntaxError as exc:  # a size the factory computed from its arguments (`N - 9` for N = 8)
        raise DefinitionError(f"{name}: parameter {buffer.name!r} has shape {list(buffer.shape)}: {exc}") from None
    return Param(buffer.name, Kind.TENSOR, tensor=tensor)


def buffer_tensor_spec(buffer: Any, declared: Mapping[str, dimlib.Dim]) -> TensorSpec:
    """A TVM buffer's dtype, dims and (where not compact) strides; DimSyntaxError for a size that is no dim.

    TileLang's `T.Tensor` buffer states the compact strides, as a `T.StridedTensor` of them does: the two are told
    apart by the strides alone, and compact ones are read as a `T.Tensor`'s (none stated)."""
    dims = tuple(to_dim(size, declared) for size in buffer.shape)
    strides = None if _is_compact(buffer) else tuple(to_dim(stride, declared) for stride in buffer.strides)
    return TensorSpec(DTypeSpec(fixed=as_dtype(str(buffer.dtype))), dims, strides)


def annotated_tensor(name: str, buffer: Any, default: object) -> Param | None:
    """Parameter `name` (with its `default`) as the TVM buffer its TileLang annotation evaluated to says
    (`A: T.Tensor((M, 32), dt)` in the kernel a factory defines, M the factory's int): None unless every size and
    stride there is an int (not a bool)."""
    sizes = (*buffer.shape, *buffer.strides) if isinstance(buffer, tirx.Buffer) else ()
    if not sizes or not all(isinstance(n, tirx.IntImm) and str(n.dtype).startswith("int") for n in sizes):
        return None
    try:
        tensor = buffer_tensor_spec(buffer, {})
    except DimSyntaxError as exc:
        raise DefinitionError(f"parameter {name!r} has shape {list(buffer.shape)}: {exc}") from None
    return Param(name, Kind.TENSOR, default, tensor=tensor)


def _is_compact(buffer: Any) -> bool:
    """The buffer's strides are those of a contiguous tensor of its shape (or left for TVM to make so)."""
    if not buffer.strides:
        return True
    analyzer = tvm.arith.Analyzer()
    return all(analyzer.can_prove_equal(a, b) for a, b in zip(buffer.strides, compact_strides(buffer.shape)))


def compact_strides(shape: Any) -> list[Any]:
    """The strides, in elements, of a contiguous tensor of `shape` (TIR expressions, as TVM lays a buffer out)."""
    strides, step = [], tirx.const(1, "int64")
    for size in reversed(list(shape)):
        strides.append(step)
        step = step * size
    return strides[::-1]


class FactoryElaboration:
    """The elaboration of a factory's kernel: run the factory with its arguments, check what it returned."""

    def __init__(self, fn: Callable[..., Any], arguments: Mapping[str, Any], out_idx: int | Sequence[int] | None,
                 signature: KernelSignature, forget: Callable[[], None] = lambda: None) -> None:
        self.fn = fn
        self.arguments = arguments
        self.out_idx = out_idx
        self.signature = signature
        self.forget = forget  # drops the kernel object (and its factory record): the next factory call runs it again

    def __call__(self, spec: Specialization) -> Elaborated:
        name = self.signature.name
        for p in self.signature.tensors:
            if spec.strides.get(p.name) is not None:
                raise ArgumentValueError(
                    f"{name}: argument {p.name!r} must be contiguous (the factory's kernel is built for a contiguous "
                    f"{p.name}; its strides are {spec.strides[p.name]}); pass {p.name}.contiguous()"
                )
        prim_func, (signature, variables) = surviving_ast_race(lambda: run_and_read(self.fn, spec.consts, self.out_idx))
        if signature != self.signature and spec.consts != first_candidates(self.arguments):
            raise DefinitionError(
                f"{name}: the factory returns a kernel with signature {signature} for "
                f"{', '.join(f'{k}={spec.consts[k]!r}' for k in tuned(self.arguments))}, not {self.signature} as for "
                "the first candidate; a tuning space chooses among schedules of one computation: make the argument "
                "an untuned one"
            )
        if signature != self.signature:
            self.forget()
            raise ElaborationError(
                f"{name}: the factory now returns a kernel with signature {signature}, not {self.signature} as when "
                f"this kernel object was made (a value it reads has changed); call {name}(...) again for a new kernel"
            )
        outputs = [p.name for p in signature.outputs]
        return Elaborated(outputs_last(workspaces_as_params(prim_func), outputs), variables)


def workspaces_as_params(prim_func: Any) -> Any:
    """The PrimFunc with its top-level global buffers (`T.alloc_global`) as parameters after the others.

    TileLang allocates such a workspace in its host code (TVM's workspace
    allocator); tltyped's launcher allocates every parameter after the
    runtime arguments instead, as for eager kernels, and `tilelang_out_idx`
    (counted from the end) still names the same returned outputs once
    `outputs_last` has moved those behind the workspaces.
    """
    realize = prim_func.body
    if not isinstance(realize, tirx.SBlockRealize):
        return prim_func
    block = realize.block
    workspaces = [b for b in block.alloc_buffers if b.scope() == "global"]
    if not workspaces:
        return prim_func
    kept = [b for b in block.alloc_buffers if b.scope() != "global"]
    body = tirx.SBlockRealize(realize.iter_values, realize.predicate, tirx.SBlock(
        block.iter_vars, block.reads, block.writes, block.name_hint, block.body, block.init, kept,
        block.match_buffers, block.annotations,
    ))
    handles = [tirx.Var(f"{b.name}_handle", "handle") for b in workspaces]
    return tirx.PrimFunc(
        [*prim_func.params, *handles], body, prim_func.ret_type,
        {**prim_func.buffer_map, **dict(zip(handles, workspaces))}, prim_func.attrs,
    )
