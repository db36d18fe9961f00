"""Definition checks of a kernel, run when mypy type-checks its `@tl.jit` decorator (or the call applying jit).

The seeds' rules, each reported on the offending line (the runtime enforces
the same ones at decoration; the in-body grammar, tltyped/types/in_body_grammar.py,
gives both the rules on buffers and returns and their wording):
- a plain `def` (no `async def`, no generator), whose return annotation is
  no tuple of one tensor (a call returns its one output itself);
- no positional-only or variadic parameters, and no tensor parameter without
  its dtype and dims;
- a `tl.tune([...])` default is a const parameter's, and has candidates, each
  fitting the parameter's type;
- a `T.alloc_*` (or `T.empty`) result is assigned to a name, never passed
  straight into a call;
- a kernel returns global buffers (names bound to `T.empty` / `T.alloc_global`
  or tensor parameters), never Python values;
plus whatever the in-body rewrite found (rewrite.py), reported here because
the rewrite runs before mypy can report anything.
"""

from __future__ import annotations

import ast

from mypy.errorcodes import ErrorCode
from mypy.messages import format_type, format_type_bare
from mypy.nodes import (
    ARG_STAR,
    ARG_STAR2,
    AssignmentStmt,
    CallExpr,
    ComparisonExpr,
    Context,
    Expression,
    FloatExpr,
    FuncDef,
    IntExpr,
    NameExpr,
    OpExpr,
    RefExpr,
    ReturnStmt,
    StrExpr,
    TupleExpr,
    UnaryExpr,
)
from mypy.options import Options
from mypy.plugin import CheckerPluginInterface
from mypy.types import (
    AnyType,
    CallableType,
    Instance,
    NoneType,
    ProperType,
    TupleType,
    Type,
    TypeOfAny,
    TypeVarTupleType,
    UnboundType,
    UnionType,
    UnpackType,
    get_proper_type,
)

from tltyped.abi import element_type_as_parameter
from tltyped.mypy_plugin import names, runtime_params
from tltyped.mypy_plugin import errorcodes as codes
from tltyped.mypy_plugin.annotation_hooks import tensor_parts
from tltyped.mypy_plugin.callvalues import check_tune_candidates
from tltyped.mypy_plugin.kernel_record import KernelRecord
from tltyped.mypy_plugin.parsed import called_name, dotted_name
from tltyped.mypy_plugin.source_text import SourceText
from tltyped.mypy_plugin.typeops import is_buffer_like
from tltyped.mypy_plugin.walk import own_nodes
from tltyped.types import dtypes
from tltyped.types import in_body_grammar as grammar

_RETURN_RULE = codes.sentence(grammar.RETURN_RULE)


def check_definition(func: FuncDef, record: KernelRecord | None, api: CheckerPluginInterface) -> bool:
    """Report everything wrong with one kernel's definition, on the lines where it is; whether its signature (its
    parameters, as the signature or the body's declarations give them) was wrong."""
    problems = [(found.message, Context(found.line, found.column), found.code) for found in
                (record.diagnostics if record is not None else [])]
    problems += _signature_problems(func, api.options)
    if record is not None and record.states_return:
        problems += _return_against_out_idx(func, record.out_idx, api.options)
    for message, where, code in problems:
        api.fail(message, where, code=code)
    _check_tune_defaults(func, api)
    _check_body(func, api)
    return bool(problems)


def _return_against_out_idx(
    func: FuncDef, out_idx: tuple[int, ...] | None, options: Options
) -> list[tuple[str, Context, ErrorCode]]:
    """A return annotation stating another number of tensors than the `out_idx` ones a call returns (`-> None`)."""
    returns = get_proper_type(func.type.ret_type) if isinstance(func.type, CallableType) else None
    if not out_idx:
        return []
    if isinstance(returns, NoneType):
        stated: list[Type] = []
    elif isinstance(returns, TupleType):
        stated = list(returns.items)
    elif returns is not None and tensor_parts(returns) is not None and not (  # a bare Tensor states no tensors
            isinstance(func.unanalyzed_type, CallableType) and _is_bare_tensor(func.unanalyzed_type.ret_type, returns)):
        stated = [returns]
    else:
        return []
    if len(stated) == len(out_idx):
        return []
    outputs = [func.arguments[index].variable.name for index in out_idx if -len(func.arguments) <= index < len(func.arguments)]
    text = ", ".join(format_type_bare(t, options) for t in stated) or "None"
    return [(codes.sentence(grammar.out_idx_against_return(outputs, text)), func, codes.KERNEL)]


def _signature_problems(func: FuncDef, options: Options) -> list[tuple[str, Context, ErrorCode]]:
    """What is wrong with the kernel as a function and with its parameters, each with where and its code."""
    problems: list[tuple[str, Context, ErrorCode]] = []
    if func.is_coroutine or func.is_generator:
        kind = grammar.ASYNC_DEF if func.is_coroutine else grammar.GENERATOR
        problems.append((codes.sentence(grammar.not_a_plain_def(kind)), func, codes.KERNEL))
    returns = get_proper_type(func.type.ret_type) if isinstance(func.type, CallableType) else None
    if isinstance(returns, TupleType) and len(returns.items) == 1 and tensor_parts(get_proper_type(returns.items[0])) is not None:
        problems.append((codes.sentence(grammar.ONE_TENSOR_TUPLE), func, codes.KERNEL))
    written = func.unanalyzed_type.arg_types if isinstance(func.unanalyzed_type, CallableType) else []
    analyzed = func.type.arg_types if isinstance(func.type, CallableType) else []
    defaulted: str | None = None
    for index, arg in enumerate(func.arguments):
        name = arg.variable.name
        typ = analyzed[index] if index < len(analyzed) else AnyType(TypeOfAny.special_form)
        if arg.kind.is_optional():
            defaulted = defaulted or name
        elif arg.kind.is_named() and defaulted is not None:
            problems.append((codes.sentence(grammar.required_after_default(name, defaulted)), arg, codes.KERNEL))
        if arg.pos_only:
            problems.append((f'Positional-only parameter "{name}" is not supported in a kernel; remove the "/"',
                             arg, codes.KERNEL))
        elif arg.kind in (ARG_STAR, ARG_STAR2):
            stars = "*" if arg.kind == ARG_STAR else "**"
            problems.append((f'Variadic parameter "{stars}{name}" is not supported in a kernel; name each parameter',
                             arg, codes.KERNEL))
        if index < len(written) and _is_bare_tensor(written[index], typ):  # a kernel's tensor needs its spec
            problems.append((f'Kernel parameter "{name}" needs a dtype and dims: Tensor[dtype, *dims] or '
                             "Tensor[[dims...], dtype]", arg, codes.ANNOTATION))
        elif (pack := _dim_pack(typ)) is not None:
            problems.append((f'Kernel parameter "{name}" has a dim pack (*{pack}): a kernel\'s tensor has a fixed '
                             "rank, each dim a dim name, an int or Literal[int]", arg, codes.ANNOTATION))
        elif (element_type := _element_type(typ)) is not None:
            problems.append((codes.sentence(element_type_as_parameter(name, element_type)), arg, codes.ANNOTATION))
        elif _holds_a_tensor(typ):
            problems.append((f'Kernel parameter "{name}" has a tensor inside {format_type(typ, options)}, which is '
                             "not supported; a kernel's tensors are parameters of their own, always given",
                             arg, codes.KERNEL))
    return problems


def _is_bare_tensor(written: Type, analyzed: Type) -> bool:
    typ = get_proper_type(analyzed)
    return (isinstance(written, UnboundType) and not written.args and isinstance(typ, Instance)
            and typ.type.fullname == names.PLUGIN_TENSOR)


def _dim_pack(typ: Type) -> str | None:
    """The TypeVarTuple of `Tensor[dtype, *Ns]`: a rank of any length, which a caller's function may have and a
    kernel's parameter may not (the runtime specialises on the rank)."""
    proper = get_proper_type(typ)
    if not (isinstance(proper, Instance) and proper.type.fullname == names.PLUGIN_TENSOR):
        return None
    packs = [pack.name for arg in proper.args if isinstance(arg, UnpackType)
             and isinstance(pack := get_proper_type(arg.type), TypeVarTupleType)]
    return packs[0] if packs else None


def _element_type(typ: Type) -> type[dtypes.DType] | None:
    """The element type a parameter is annotated with (`alpha: tl.float32`), which no value can be."""
    proper = get_proper_type(typ)
    if isinstance(proper, Instance) and proper.type.has_base(names.DTYPE_BASE) and dtypes.is_dtype_like(proper.type.name):
        return dtypes.as_dtype(proper.type.name)
    return None


def _holds_a_tensor(typ: Type) -> bool:
    """`Optional[Tensor[...]]`, `tuple[Tensor[...], ...]`: a tensor inside another type (the runtime would take
    the parameter for a const)."""
    return any(_is_tensor(t) for t in _inner_types(get_proper_type(typ)))


def _inner_types(typ: ProperType) -> list[Type]:
    if isinstance(typ, UnionType):
        return list(typ.items)
    if isinstance(typ, TupleType):
        return list(typ.items)
    if isinstance(typ, Instance) and typ.type.fullname != names.PLUGIN_TENSOR:
        return list(typ.args)
    return []


def _is_tensor(typ: Type) -> bool:
    proper = get_proper_type(typ)
    return isinstance(proper, Instance) and proper.type.fullname == names.PLUGIN_TENSOR or _holds_a_tensor(typ)


def _check_tune_defaults(func: FuncDef, api: CheckerPluginInterface) -> None:
    signature = func.type if isinstance(func.type, CallableType) else None
    for index, arg in enumerate(func.arguments):
        default = arg.initializer
        if not (runtime_params.is_tuned(func, index) and isinstance(default, CallExpr)):
            continue
        declared = signature.arg_types[index] if signature is not None else AnyType(TypeOfAny.special_form)
        check_tune_candidates(api, arg.variable.name, declared, default)
        if runtime_params.annotated_runtime(func, index, declared, api):
            api.fail(f'Parameter "{arg.variable.name}" is passed at run time (a tensor, dyn scalar or pointer): a '
                     "tl.tune default is for a const", default, code=codes.TUNE)


def _check_body(func: FuncDef, api: CheckerPluginInterface) -> None:
    """T.alloc_* results and returned values, in the kernel's own body (not nested functions).

    mypy checks function bodies after their decorators, so no inferred type of
    a local is known here: a returned local is judged by what it is bound to.
    """
    bindings: dict[str, list[Expression]] = {}
    returned: list[Expression] = []
    for node in own_nodes(func.body):
        if isinstance(node, CallExpr):
            for arg in node.args:
                _check_call_argument(arg, api)
        elif isinstance(node, AssignmentStmt):
            for target in node.lvalues:
                if isinstance(target, NameExpr):
                    bindings.setdefault(target.name, []).append(node.rvalue)
        elif isinstance(node, ReturnStmt) and node.expr is not None:
            returned.extend(node.expr.items if isinstance(node.expr, TupleExpr) else [node.expr])
    parameters = _parameter_types(func)
    for value in returned:
        _check_returned(value, bindings, parameters, api)


def _check_call_argument(arg: Expression, api: CheckerPluginInterface) -> None:
    name = called_name(arg)
    if isinstance(arg, CallExpr) and name is not None and grammar.is_buffer_call(name):
        api.fail(grammar.passed_straight(dotted_name(arg.callee) or name), arg, code=codes.KERNEL)


def _parameter_types(func: FuncDef) -> dict[str, Type]:
    if not isinstance(func.type, CallableType):
        return {}
    return {name: typ for name, typ in zip(func.type.arg_names, func.type.arg_types) if name is not None}


def _check_returned(
    value: Expression, bindings: dict[str, list[Expression]], parameters: dict[str, Type], api: CheckerPluginInterface
) -> None:
    is_name = isinstance(value, NameExpr) and value.fullname not in ("builtins.None", "builtins.True", "builtins.False")
    if not grammar.may_return(is_name=is_name, is_call=isinstance(value, CallExpr), called=called_name(value)):
        api.fail(codes.sentence(grammar.returned_value(_source(value, api.path))), value, code=codes.KERNEL)
        return
    if not isinstance(value, NameExpr):
        return  # a `T.macro`'s outputs (`return copy_impl(A)`): what it returns is checked in the macro
    if value.name in parameters and value.name not in bindings:  # an input: the caller has it already
        found = get_proper_type(parameters[value.name])
        shown = "" if isinstance(found, AnyType) or is_buffer_like(found) else f" of type {format_type(found, api.options)}"
        api.fail(f'{_RETURN_RULE}, not parameter "{value.name}"{shown}', value, code=codes.KERNEL)
        return
    for bound in bindings.get(value.name, []):
        what = _non_buffer(bound, api.path)
        if what is not None:
            api.fail(f'{_RETURN_RULE}, not "{value.name}", {what}', value, code=codes.KERNEL)
            return


def _non_buffer(value: Expression, path: str) -> str | None:
    """What a returned name was bound to, when that is plainly not a global buffer."""
    name = called_name(value)
    if isinstance(value, CallExpr) and name is not None and name.startswith(grammar.ALLOC_PREFIX):
        if name not in grammar.OUTPUT_CALLS:
            return f"a {dotted_name(value.callee) or name} buffer (not global memory)"
    if isinstance(value, (IntExpr, FloatExpr, StrExpr, OpExpr, ComparisonExpr, UnaryExpr)):
        return f"bound to the Python value `{_source(value, path)}`"
    return None


def _source(value: Expression, path: str) -> str:
    """The expression as the runtime shows it: `ast.unparse` of its source text (one line of it)."""
    for text in SourceText(path).span(value.line, value.column, value.end_line, value.end_column):
        try:
            return ast.unparse(ast.parse(text, mode="eval"))
        except SyntaxError:
            continue
    return "an expression"
