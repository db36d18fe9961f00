"""`jit(out_idx=...)`: the tensor parameters a kernel allocates and returns instead of taking.

TileLang's idiom: `@tl.jit(out_idx=[-1])` on `def matmul(A, B, C)` makes a
kernel called as `matmul(a, b)`, which returns `C`. The runtime reads out_idx
at decoration (`tltyped.frontend.lazy.out_indices`); the plugin reads it from
the source, where it must be written literally (an int, or a list or tuple of
ints, negative ones counting from the end) for a checker to know it:
- the rewrite, before names are bound, reads it from the decorator's call
  (`@tl.jit(out_idx=[-1])`), or from a stored decorator's
  (`hopper = tl.jit(out_idx=-1)`, then `@hopper`);
- when the decorator is applied, the kernel's `JitFunction[P, R]` becomes
  `JitFunction[P without the outputs, the outputs]`: one tensor, or a tuple
  of them in out_idx order, as the runtime returns them. Call sites are then
  checked, and the outputs' dims solved, as any kernel's.
An out_idx that is not written literally leaves the kernel's calls unchecked
(`JitFunction[..., Any]`): the plugin cannot tell which parameters they take.
"""

from __future__ import annotations

from mypy.nodes import (
    ARG_STAR,
    ARG_STAR2,
    CallExpr,
    Context,
    Expression,
    IntExpr,
    ListExpr,
    NameExpr,
    TupleExpr,
    UnaryExpr,
)
from mypy.plugin import CheckerPluginInterface
from mypy.types import AnyType, Instance, NoneType, Parameters, TupleType, Type, TypeOfAny, get_proper_type

from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin.annotation_hooks import tensor_parts

def read(jit_call: Expression | None) -> tuple[int, ...] | None:
    """The out_idx a jit call (`tl.jit(out_idx=[-1])`) writes, as given: `()` when it gives none, None when
    it is not written literally."""
    if not isinstance(jit_call, CallExpr):
        return ()
    given = next((arg for arg, name in zip(jit_call.args, jit_call.arg_names) if name == "out_idx"), None)
    if given is None or (isinstance(given, NameExpr) and given.name == "None"):
        return ()
    items = given.items if isinstance(given, (ListExpr, TupleExpr)) else [given]
    indices = [_int(item) for item in items]
    return tuple(i for i in indices if i is not None) if None not in indices else None


def _int(expr: Expression) -> int | None:
    if isinstance(expr, IntExpr):
        return expr.value
    if isinstance(expr, UnaryExpr) and expr.op == "-" and isinstance(expr.expr, IntExpr):
        return -expr.expr.value
    return None


def returning_outputs(
    kernel: Type, out_idx: tuple[int, ...] | None, api: CheckerPluginInterface, context: Context
) -> Type:
    """The kernel's `JitFunction[P, R, C]` with the out_idx parameters taken out of P and returned."""
    proper = get_proper_type(kernel)
    if out_idx == () or not (isinstance(proper, Instance) and len(proper.args) == 3):
        return kernel
    params = get_proper_type(proper.args[0])
    if not isinstance(params, Parameters):
        return kernel
    split = split_outputs(params, out_idx, api, context)
    return kernel if split is None else proper.copy_modified(args=[*split, proper.args[2]])


def split_outputs(
    params: Parameters, out_idx: tuple[int, ...] | None, api: CheckerPluginInterface, context: Context
) -> tuple[Parameters, Type] | None:
    """(the parameters a call takes, what it returns: None without out_idx) of a kernel with these parameters
    and out_idx; None, with an error as the runtime raises one, when out_idx names no tensor parameter."""
    anything = AnyType(TypeOfAny.special_form)
    if out_idx is None:  # not written literally: unchecked
        return Parameters([anything, anything], [ARG_STAR, ARG_STAR2], [None, None], is_ellipsis_args=True), anything
    outputs = _resolved(out_idx, params, api, context)
    if outputs is None:
        return None
    kept = [i for i in range(len(params.arg_types)) if i not in outputs]
    returned = [params.arg_types[i] for i in outputs]
    returns = NoneType() if not returned else returned[0] if len(returned) == 1 else TupleType(
        returned, api.named_generic_type("builtins.tuple", [anything])
    )
    remaining = params.copy_modified(
        arg_types=[params.arg_types[i] for i in kept],
        arg_kinds=[params.arg_kinds[i] for i in kept],
        arg_names=[params.arg_names[i] for i in kept],
    )
    return remaining, returns


def _resolved(
    out_idx: tuple[int, ...], params: Parameters, api: CheckerPluginInterface, context: Context
) -> list[int] | None:
    """out_idx as indices of tensor parameters, in its order; None (and an error, as the runtime raises) if it is not."""
    count = len(params.arg_types)
    resolved = []
    for index in out_idx:
        if not -count <= index < count:
            api.fail(f"out_idx {index} is not the index of one of the kernel's {count} parameters", context,
                     code=codes.KERNEL)
            return None
        position = index % count
        if position in resolved:
            api.fail(f"out_idx names parameter \"{params.arg_names[position]}\" twice", context, code=codes.KERNEL)
            return None
        if tensor_parts(get_proper_type(params.arg_types[position])) is None:
            api.fail(f'out_idx names "{params.arg_names[position]}", which is not a tensor parameter', context,
                     code=codes.KERNEL)
            return None
        resolved.append(position)
    return resolved
