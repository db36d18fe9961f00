"""Lazy style: a jit function whose body defines and returns a `@T.prim_func` (a factory).

    @tl.jit(out_idx=[-1])
    def matmul(M, N, K, block_M, block_N, block_K, dtype=T.float16):
        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")): ...
        return main

    kernel = matmul(1024, 1024, 1024, 128, 128, 32)   # a kernel object
    c = kernel(a, b)                                   # returns C

The factory's parameters are consts whose values build the PrimFunc, so its
body is not desugared as an in-body kernel's (its `T.dynamic` names are TIR
variables, not dims of the factory). Calling it gives a kernel object, typed
as a `JitFunction` of its own: the prim_func's parameters but the out_idx
ones, returning those (one, or a tuple in out_idx order).

The prim_func is read from the module's source with tltyped/stubs/prim_func.py,
the reader the generated stubs use, so that mypy and pyright type a kernel
object alike: mypy's parser keeps TileLang's call-form annotation
(`T.Tensor((M, K), dtype)`) only as "an expression". Dims and dtypes that
are the factory's argument values are unknown (Any); what the source writes
is kept: a tensor's rank (a tuple or list shape), int dims, named dtypes, and
scalar parameters' types (`T.int32` is an int). So a kernel call's argument
count, names, kinds, ranks and literal dims are checked. Recognised: a
`@T.prim_func` (or `@prim_func`) defined in the factory's body and returned
by name, at the top of the body or in a branch (`if split: return one`,
`else: return two`). Which one a kernel object runs is the factory's choice
per call, so prim_funcs of different parameters make a kernel object that
takes any call; of the same parameters, a kernel object that takes those.
(The stubs, tltyped/stubs, read a `return` at the top of the body only.)
"""

from __future__ import annotations

import ast
import copy
import textwrap

from mypy.nodes import ARG_POS, Context, Decorator, FuncDef
from mypy.plugin import CheckerPluginInterface
from mypy.types import AnyType, Instance, LiteralType, Parameters, Type, TypeOfAny, UnpackType, get_proper_type

from tltyped.mypy_plugin import names
from tltyped.mypy_plugin.out_idx import split_outputs
from tltyped.mypy_plugin.source_text import SourceText
from tltyped.mypy_plugin.typeops import named_instance, tensor_type
from tltyped.stubs import prim_func
from tltyped.stubs.prim_func import PrimFuncParam


def factory_kernel_signatures(func: FuncDef, source: SourceText) -> list[list[PrimFuncParam]] | None:
    """The parameters of each `@T.prim_func` the factory `func` returns (each distinct list once, in source
    order), read from its source; None when `func` is not a factory."""
    if not any(isinstance(stmt, Decorator) for stmt in func.body.body):  # no function defined: not a factory
        return None
    text = textwrap.dedent("\n".join(source.lines()[func.line - 1 : func.end_line]))
    try:
        node = ast.parse(text).body[0]
    except (SyntaxError, IndexError):  # a source that is not the one mypy parsed
        return None
    if not isinstance(node, ast.FunctionDef):
        return None
    signatures: list[list[PrimFuncParam]] = []
    for one_return in _each_return(node):
        returned = prim_func.returned_prim_func(one_return)
        params = None if returned is None else prim_func.params(returned)
        if params is not None and params not in signatures:
            signatures.append(params)
    return signatures or None


def _each_return(factory: ast.FunctionDef) -> list[ast.FunctionDef]:
    """The factory once per `return` of its own, each copy's body its statements at every depth of blocks with
    that one return: prim_func.py reads the prim_func a body returns first, at its top."""
    statements = _own_statements(factory.body)
    kept = [stmt for stmt in statements if not isinstance(stmt, ast.Return)]
    copies = []
    for stmt in statements:
        if isinstance(stmt, ast.Return):
            one_return = copy.copy(factory)
            one_return.body = [*kept, stmt]
            copies.append(one_return)
    return copies


def _own_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """A body's statements at any depth of blocks (if/else, loops, with, try, match); not those of a nested
    def or class."""
    found: list[ast.stmt] = []
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        blocks: list[list[ast.stmt]] = [getattr(stmt, name, []) for name in ("body", "orelse", "finalbody")]
        blocks += [part.body for part in [*getattr(stmt, "handlers", []), *getattr(stmt, "cases", [])]]
        for block in blocks:
            found += _own_statements(block)
    return found


def kernel_objects(
    factory: Type, signatures: list[list[PrimFuncParam]], out_idx: tuple[int, ...] | None,
    api: CheckerPluginInterface, context: Context,
) -> Type:
    """The factory's `JitFunction[P, R, C]`, with R the kernel object its calls give (a `KernelObject`): of the
    parameters its prim_funcs take; with several `signatures`, of any call (as when out_idx is not literal)."""
    proper = get_proper_type(factory)
    if not (isinstance(proper, Instance) and len(proper.args) == 3):
        return factory
    params = signatures[0]
    kernel = Parameters(
        [_param_type(p, api) for p in params], [ARG_POS] * len(params), [p.name for p in params]
    )
    split = split_outputs(kernel, out_idx if len(signatures) == 1 else None, api, context)
    if split is None:
        return factory
    kernel_object = named_instance(api, names.KERNEL_OBJECT, list(split))
    if not isinstance(kernel_object, Instance):  # tltyped.jit_function not loaded: still a JitFunction of the right call
        kernel_object = proper.copy_modified(args=[*split, proper.args[2]])
    return proper.copy_modified(args=[proper.args[0], kernel_object, proper.args[2]])


def _param_type(param: PrimFuncParam, api: CheckerPluginInterface) -> Type:
    """A tensor's dtype and dims where the source writes them (else Any), a scalar's Python type (else Any)."""
    anything = AnyType(TypeOfAny.special_form)
    if not param.is_tensor:
        return anything if param.scalar is None else api.named_generic_type(f"builtins.{param.scalar}", [])
    dtype = anything if param.dtype is None else named_instance(api, names.dtype_class_fullname(param.dtype))
    if param.dims is None:
        return tensor_type(api, dtype, [UnpackType(api.named_generic_type("builtins.tuple", [anything]))])
    int_type = api.named_generic_type("builtins.int", [])
    return tensor_type(api, dtype, [anything if d is None else LiteralType(d, int_type) for d in param.dims])
