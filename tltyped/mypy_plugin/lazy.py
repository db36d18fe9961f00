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
count, names, kinds, ranks and literal dims are checked. Which prim_funcs a
factory returns (at the top of its body or from branches), and what its
kernel objects take when they are several, is prim_func.py's rule, the
stubs' too.
"""

from __future__ import annotations

import ast
import textwrap

from mypy.nodes import ARG_POS, Context, Decorator, FuncDef
from mypy.plugin import CheckerPluginInterface
from mypy.types import AnyType, Instance, LiteralType, Parameters, Type, TypeOfAny, UnpackType, get_proper_type

from tltyped.mypy_plugin import names
from tltyped.mypy_plugin.out_idx import split_outputs
from tltyped.mypy_plugin.source_text import SourceText
from tltyped.mypy_plugin.typeops import named_instance, tensor_type
from tltyped.mypy_plugin.walk import own_nodes
from tltyped.stubs import prim_func
from tltyped.stubs.prim_func import FactoryKernel, PrimFuncParam


def factory_kernel(func: FuncDef, source: SourceText) -> FactoryKernel | None:
    """What the kernel objects of the factory `func` take, read from its source by the stubs' rule
    (prim_func.factory_kernel); None when `func` is not a factory."""
    if not any(isinstance(node, Decorator) for node in own_nodes(func.body)):  # no function defined: not a factory
        return None
    text = textwrap.dedent("\n".join(source.lines()[func.line - 1 : func.end_line]))
    try:
        node = ast.parse(text).body[0]
    except (SyntaxError, IndexError):  # a source that is not the one mypy parsed
        return None
    return prim_func.factory_kernel(node) if isinstance(node, ast.FunctionDef) else None


def kernel_objects(
    factory: Type, kernel: FactoryKernel, out_idx: tuple[int, ...] | None, api: CheckerPluginInterface,
    context: Context,
) -> Type:
    """The factory's `JitFunction[P, R, C]`, with R the kernel object its calls give (a `KernelObject`): of the
    parameters its prim_funcs take; where they differ, of any call (as when out_idx is not literal)."""
    proper = get_proper_type(factory)
    if not (isinstance(proper, Instance) and len(proper.args) == 3):
        return factory
    params = kernel.params or ()
    call = Parameters([_param_type(p, api) for p in params], [ARG_POS] * len(params), [p.name for p in params])
    split = split_outputs(call, out_idx if kernel.params is not None else None, api, context)
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
