"""Call hooks for kernel-language functions whose result type depends on their arguments.

- `M, N = T.const("M, N")` gives as many ints as the string names (so a wrong
  count is an unpacking error); `T.dynamic` alike.
- `T.empty((m, n), tl.float32)` (and `T.alloc_global`) gives a tensor whose
  dtype is the one asked for and whose rank is the shape's length, so
  returning it from a kernel declared `-> tl.Tensor[tl.float16, M, N]` is a
  dtype error.
- `tl.tune([...])` is typed as returning one candidate; with the plugin its
  candidates are checked against the parameter (definition.py, callsite.py),
  so its own signature only asks for a sequence.
"""

from __future__ import annotations

from mypy.nodes import ARG_NAMED, ARG_OPT, ARG_POS, ARG_STAR, ARG_STAR2, Expression, IntExpr, ListExpr, StrExpr, TupleExpr
from mypy.plugin import FunctionContext, FunctionSigContext
from mypy.types import (
    AnyType,
    FunctionLike,
    Instance,
    LiteralType,
    TupleType,
    Type,
    TypeOfAny,
    UnpackType,
    get_proper_type,
)

from tltyped.mypy_plugin import names
from tltyped.mypy_plugin.typeops import dtype_class_of, named_instance, tensor_type
from tltyped.types.in_body_grammar import split_names


def declared_dims(ctx: FunctionContext) -> Type:
    """`T.const("M, N")` -> tuple[int, int]; one name -> int."""
    if not ctx.args or len(ctx.args[0]) != 1 or not isinstance(ctx.args[0][0], StrExpr):
        return ctx.default_return_type
    count = len(split_names(ctx.args[0][0].value))
    int_type = ctx.api.named_generic_type("builtins.int", [])
    if count == 1:
        return int_type
    return TupleType([int_type] * count, ctx.api.named_generic_type("builtins.tuple", [int_type]))


def described_tensor(ctx: FunctionContext) -> Type:
    """The tensor `T.empty` / `T.alloc_global` declares, or `T.Tensor((M, K), dtype)` describes (to `lower`,
    `compile`): its dtype (float32 by default, as at run time), its rank and its int dims from the arguments.

    `T.empty` (tltyped's and TileLang's) takes the shape as one sequence, `T.empty((M, N), dtype)`, or as
    separate ints, `T.empty(M, N, dtype=...)`.
    """
    shape, dtype = _mapped_shape_and_dtype(ctx)
    dtype_type = dtype_class_of(ctx.api, dtype) if dtype is not None else _named_dtype(ctx, "float32")
    if shape is None:
        any_tuple = ctx.api.named_generic_type("builtins.tuple", [AnyType(TypeOfAny.special_form)])
        return tensor_type(ctx.api, dtype_type, [UnpackType(any_tuple)])
    int_type = ctx.api.named_generic_type("builtins.int", [])
    dims: list[Type] = [
        LiteralType(d.value, int_type) if isinstance(d, IntExpr) else AnyType(TypeOfAny.special_form) for d in shape
    ]
    return tensor_type(ctx.api, dtype_type, dims)


def _mapped_shape_and_dtype(ctx: FunctionContext) -> tuple[list[Expression] | None, Expression | None]:
    shape: list[Expression] | None = None
    dtype: Expression | None = None
    for name, exprs, kinds, types in zip(ctx.callee_arg_names, ctx.args, ctx.arg_kinds, ctx.arg_types):
        if name == "shape" and exprs and all(k == ARG_POS for k in kinds):
            # either spelling (two overloads): ints one by one, or one sequence
            if all(_is_int(t) for t in types):
                shape = list(exprs)
            elif len(exprs) == 1 and isinstance(exprs[0], (TupleExpr, ListExpr)):
                shape = list(exprs[0].items)
        elif name == "dtype" and len(exprs) == 1 and kinds[0] in (ARG_POS, ARG_NAMED):
            dtype = exprs[0]
    return shape, dtype


def _is_int(t: Type) -> bool:
    proper = get_proper_type(t)
    if isinstance(proper, LiteralType):
        proper = proper.fallback
    return isinstance(proper, Instance) and proper.type.fullname == "builtins.int"


def _named_dtype(ctx: FunctionContext, class_name: str) -> Type:
    return named_instance(ctx.api, names.dtype_class_fullname(class_name))


def tune_signature(ctx: FunctionSigContext) -> FunctionLike:
    """`tl.tune(values: Sequence[object]) -> Any`: the candidates are checked against the parameter."""
    sequence = ctx.api.named_generic_type("typing.Sequence", [ctx.api.named_generic_type("builtins.object", [])])
    signature = ctx.default_signature
    return signature.copy_modified(
        arg_types=[sequence] * len(signature.arg_types), ret_type=AnyType(TypeOfAny.special_form), variables=[]
    )


def tensor_call_signature(ctx: FunctionSigContext) -> FunctionLike:
    """`T.Tensor((M, K), dtype)` as a value (`gemm.lower(T.Tensor(...))`, TileLang's call form): a function
    of the shape and dtype, not a call of the Protocol class (which mypy refuses to instantiate); what it
    gives is `described_tensor`'s."""
    anything = AnyType(TypeOfAny.special_form)
    return ctx.default_signature.copy_modified(
        arg_types=[anything, anything, anything, anything],
        arg_kinds=[ARG_POS, ARG_OPT, ARG_STAR, ARG_STAR2],
        arg_names=["shape", "dtype", None, None],
        ret_type=tensor_type(ctx.api, anything, [UnpackType(ctx.api.named_generic_type("builtins.tuple", [anything]))]),
        fallback=ctx.api.named_generic_type("builtins.function", []),
        variables=[],
    )
