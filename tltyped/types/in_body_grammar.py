"""The grammar of the in-body form (`M, N = T.const("M, N")`, `C = T.empty(...)`): one reading for both readers.

A kernel body declares its dims, names its outputs and returns them; two
readers of that one language exist:
- the runtime (tltyped.frontend.body) reads the function's Python `ast` at
  decoration and raises DefinitionError;
- the mypy plugin (tltyped.mypy_plugin.in_body, .outputs, .definition) reads
  mypy's nodes and reports each problem on its line.
Both take from here which calls declare dims and outputs, when a declaration
is well formed, what a kernel may return, and the words of every message, so a
spelling is accepted statically exactly when it is accepted at run time.
Messages start in lower case, as the runtime prints them after `file:line: `;
the plugin capitalises them. Calls are matched by their last name (`T.const`,
`tl.language.const`, `const`), as TileLang's own reading does. Like
dim_grammar.py, this module imports neither torch, TileLang nor mypy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from tltyped.errors import DimSyntaxError
from tltyped.types.dtypes import as_dtype, is_dtype_like

DIM_DECLARATION_CALLS: Final = ("const", "dynamic", "symbolic")
"""`M, N = T.const("M, N")` / `K = T.dynamic("K")`: each declares the dims its string names."""
DYNAMIC_CALLS: Final = ("dynamic", "symbolic")
"""The calls declaring dyn dims: `T.symbolic` is TileLang's older name for `T.dynamic` (deprecated, still written)."""
DIM_DTYPE: Final = "int32"
"""A dyn dim's dtype where its declaration names none (TileLang's default): the kernel takes it, and computes with
it, in 32 bits, so a size past 2**31 - 1 is refused."""
DIM_DTYPES: Final = ("int32", "int64")
"""The dtypes a dyn dim may be declared with (`T.dynamic("n", "int64")`, `T.dynamic("n", dtype=T.int64)`): int64 for a
size past int32's range (a tensor of 2**31 elements or more)."""

OUTPUT_CALLS: Final = ("empty", "alloc_global")
"""`C = T.empty((M, N), dtype)`: a global buffer the kernel returns as an output."""
ALLOC_PREFIX: Final = "alloc_"
"""`T.alloc_shared(...)`, `T.alloc_fragment(...)`, ...: a buffer of the kernel's own memory."""

RETURN_RULE: Final = "a kernel returns global buffers (T.empty / T.alloc_global) only"
ONE_TENSOR_TUPLE: Final = (
    "the return annotation is a tuple of one tensor, but a call returns a kernel's one output itself, not in a "
    "tuple (several come as a tuple); annotate the tensor alone: -> Tensor[...]"
)
"""The message for `-> tuple[Tensor[...]]`, a result no call gives."""
ASSERT_ON_SHAPE_ASSERT_LINE: Final = (
    "another assert shares this shape assert's line, where the kernel would not run it; write each assert on a line "
    "of its own"
)
"""The message for `assert X.shape[0] % 8 == 0; assert flag`: the build leaves a shape assert's line out of the
kernel (every call checks it), and TileLang's run of the body tells its statements apart by line only."""


def out_idx_against_return(returned: list[str], stated: str) -> str:
    """The message for a return annotation stating other tensors than the `out_idx` ones a call returns."""
    tensors = "tensor" if len(returned) == 1 else "tensors"
    return (
        f"a call returns the out_idx {tensors} {', '.join(repr(name) for name in returned)}, but the return "
        f"annotation states {stated}; annotate what a call returns, or leave the annotation out"
    )


def is_dim_declaration(called: str | None) -> bool:
    return called in DIM_DECLARATION_CALLS


def is_buffer_call(called: str | None) -> bool:
    """A call that makes a buffer (`T.alloc_*`, `T.empty`): its result must be bound to a name before use."""
    return called is not None and (called.startswith(ALLOC_PREFIX) or called in OUTPUT_CALLS)


def not_a_literal(spelled: str) -> str:
    """The declaration's argument is no string literal, so neither reader knows the dims it declares."""
    return f"{spelled}() takes the dim names as a string literal"


def dim_dtype(spelled: str, written: str, *, quoted: bool) -> str:
    """The dtype a dyn dim declaration `spelled("n", written)` (or `dtype=written`) gives its dims: `written` is a
    string literal's value (`quoted`) or the last name of what the call passes (`T.int64`: "int64"). A name that
    is no dtype (`T.dynamic("n", idx_dtype)`) is a value neither reader knows before the body runs."""
    if not quoted and not is_dtype_like(written):
        raise DimSyntaxError(f'{spelled}() takes the dim\'s dtype as a literal: "int64" or T.int64, not {written}')
    name = as_dtype(written).name if is_dtype_like(written) else written
    if name not in DIM_DTYPES:
        raise DimSyntaxError(f"{spelled}() declares a dyn dim of dtype {written!r}; a dyn dim is one of "
                             f"{', '.join(DIM_DTYPES)}")
    return name


def split_names(text: str) -> list[str]:
    """The names a declaration's string lists, as TileLang splits it: at commas where there is one (spaces
    around them aside: `"M, N"` -> M, N; `"M,,N"` -> M, '', N), else at spaces (`"M N"`)."""
    return re.split(r"\s*,\s*", text.strip()) if "," in text else text.split()


def declared_names(spelled: str, text: str, targets: Sequence[str]) -> list[str]:
    """The dims `spelled(text)` declares, one per assigned variable in `targets`, in order.

    Each name must be an identifier, and there must be as many as variables (a dim without a variable could
    never be used, a variable without a dim would be unpacked from nothing).
    """
    declared = split_names(text)
    misspelt = [name for name in declared if not name.isidentifier()]
    if misspelt:
        raise DimSyntaxError(f'{spelled}("{text}"): {misspelt[0]!r} is not a dim name; list names separated by commas or spaces')
    if len(declared) != len(targets):
        raise DimSyntaxError(
            f'{spelled}("{text}") declares {", ".join(declared) or "no dims"} but assigns to '
            f"{', '.join(targets)}; assign one variable per dim"
        )
    return declared


def check_declared_once(variable: str, dim: str, declared: Mapping[str, str]) -> None:
    """`declared` maps each variable bound so far to its dim: neither may be declared again.

    A second declaration of a dim would make two type parameters of one size;
    one of a variable would leave the first dim unreachable from the body.
    """
    repeated = dim if dim in declared.values() else variable if variable in declared else None
    if repeated is not None:
        raise DimSyntaxError(f'dim "{repeated}" is declared twice')


def is_shape_first(*, first_is_dtype: bool, second_is_dim: bool) -> bool:
    """Whether `T.Tensor[x, y]`, with `x` no list or tuple, is TileLang's `[shape, dtype]` rather than tltyped's
    `[dtype, dim]`: the spelling alone cannot tell, as TileLang's shape may be one dim (`T.Tensor[(N), dtype]`:
    the parentheses make no tuple) or a name the body binds to a shape. `y` that is a dim, or `x` that is a
    dtype, make it tltyped's order."""
    return not (second_is_dim or first_is_dtype)


ASYNC_DEF: Final = "an `async def`"
GENERATOR: Final = "a generator (it has a `yield`)"
LAMBDA: Final = "a lambda"


def not_a_plain_def(kind: str) -> str:
    """The message for a kernel defined other than by a plain `def`: TileLang elaborates the body by running it."""
    return f"@tl.jit takes a plain `def` function, not {kind}"


def required_after_default(param: str, defaulted: str) -> str:
    """The message for a keyword-only parameter with no default after one with a default (legal Python): the call
    paths complete a call from the last parameters' defaults, so those must be the last ones."""
    return (f"keyword-only parameter {param!r} has no default but follows {defaulted!r}, which has one; give it a "
            f"default, or move it before {defaulted!r}")


def passed_straight(spelled: str) -> str:
    """A buffer call used as another call's argument: TileLang allocates it only when bound to a name."""
    return f"{spelled}(...) is passed straight into a call; assign it to a name first (buf = {spelled}(...))"


def unreadable_quote(param: str, quoted: str) -> str:
    """The message for a parameter's quoted annotation in the body that is no Python expression (`A: "T.Tensor[[N],
    T.float16"`): typing, mypy and pyright read a quote as the expression it holds, so this one annotates nothing."""
    return f"the annotation of parameter {param!r} is quoted, {quoted!r}, and the quote holds no Python expression"


def undeclared_dim(name: str) -> str:
    """The message for a name used as a dim that the body does not declare."""
    return f'dim "{name}" is used but never declared; declare it with T.const("{name}") or T.dynamic("{name}")'


def sizes_not_known(tensor: str, annotated_at: str) -> str:
    """The message for a tensor parameter's sizes (`m, k = A.shape`, `A.shape[1]`) read before the body annotates
    it, where a reading of the body's source does not know them."""
    return (f"the sizes of {tensor!r} are not known here: {tensor!r} is annotated after this (at {annotated_at}); "
            f"read {tensor}.shape after its annotation")


def sizes_unpacked(tensor: str, rank: int, names: int) -> str:
    """The message for `m, k, j = A.shape` of an `A` of another number of sizes."""
    return f"{names} names unpack {tensor}.shape, but {tensor!r} is annotated with {rank} sizes"


def sizes_star_unpacked(tensor: str) -> str:
    """The message for `m, *rest = A.shape`, which TileLang's run of a body does not unpack."""
    return f"a starred name unpacks {tensor}.shape, which TileLang's run of the body does not do: name each size"


def size_past_rank(tensor: str, rank: int, index: int) -> str:
    """The message for `k = A.shape[2]` of an `A` of fewer sizes."""
    return f"{tensor}.shape[{index}] is past the sizes of {tensor!r}, which is annotated with {rank}"


def scalar_of_no_dim_dtype(name: str, dtype: str) -> str:
    """The message for a scalar parameter used as a dim whose dtype no dyn dim has (`M: T.int8`)."""
    return (f'dim "{name}" is the scalar parameter {name}, of dtype {dtype}; a scalar sizes a tensor as one of '
            f"{', '.join(f'T.{d}' for d in DIM_DTYPES)}")


def undetermined_dim(name: str) -> str:
    """The message for a declared dim that no input has as a plain dim or in an affine size (only inside other
    expressions, or nowhere)."""
    return (f'dim "{name}" is declared but no tensor has it as a plain dim or in an affine size ({name} * 4 + 1), so a '
            "call cannot determine it")


def rebound_by_nested(name: str, function: str, declaration: str, where: str) -> str:
    """The message for an annotation whose value reads a name that a function nested in the body rebinds (`nonlocal
    L` or `global L` there, then `L = N * 4`): the name's value at the annotation is whatever the body's calls of that
    function made it, which only a run of the body tells, so a size read before one could differ from the kernel's."""
    return (f"this annotation reads {name!r}, which the nested function {function!r} rebinds (`{declaration}` at "
            f"{where}), so its value here depends on the body's calls of {function!r}: compute the size in the "
            "body's own statements")


def computed_type_name(param: str, read: str, read_at: str) -> str:
    """The message for a parameter's annotation that is a name for a type computed from another parameter (`m, k =
    A.shape; Bt = T.Tensor[[k, m], T.float16]; B: Bt`), by the rule of source.parameter_read: an annotation other
    than a tensor form is read before the tensor forms, so neither a tensor's sizes nor a scalar's value is known
    to it. Written in the annotation itself, the tensor type is read with the sizes it names."""
    return (f"the annotation of {param!r} is a name for a type computed from parameter {read!r} (at {read_at}), and "
            f"such a name is read before any parameter's sizes or value: write the tensor type in the annotation "
            f"itself, `{param}: T.Tensor[[...], dtype]`")


def anonymous_dim(param: str, axis: int) -> str:
    """The name of the dim a signature annotation's size of no name declares (`int`, `tl.dyn[int]`: `A:
    Tensor[tl.float16, int, 4]` declares `_A_0`), as the runtime declares it and the plugin names it in a message."""
    return f"_{param}_{axis}"


def type_name_declaring_dims(param: str, dims: Sequence[str]) -> str:
    """The message for a parameter's annotation that is a name for a tensor type whose dims are the signature form's
    (`M = TypeVar("M")` in the module; `Bt = tl.Tensor[tl.float16, M, K]; B: Bt`): in the body a dim is one the
    body declares, as a tensor type written in the annotation reads it (a TypeVar there is refused as no dim), so
    the name declares none of its own (nor could a call determine it)."""
    named = ", ".join(dims)
    return (f"the annotation of {param!r} is a name for a tensor type whose dims ({named}) are the signature form's "
            "(TypeVars, `int`, tl.dyn[int]), which the body does not declare: declare them in the body "
            f'(`{named} = T.const("{named}")` or T.dynamic) and write the tensor type in the annotation itself, '
            f"`{param}: T.Tensor[[...], dtype]`, or annotate {param!r} in the def")


def may_return(*, is_name: bool, is_call: bool, called: str | None) -> bool:
    """Whether a returned item may be what a kernel returns, read from its form alone.

    A name (an output, a tensor parameter; what it is bound to is checked
    apart) or a call's results (a `T.macro`'s outputs) may be; a call making a
    buffer of the kernel's own memory (`T.alloc_shared(...)`) may not, nor any
    other expression: a literal, `None`, arithmetic, a comparison, a subscript.
    `called` is a call's last name (None when it has none).
    """
    if is_name:
        return True
    return is_call and not (called or "").startswith(ALLOC_PREFIX)


def returned_value(source: str) -> str:
    """The message for a returned item `may_return` refuses."""
    return f"{RETURN_RULE}, not the Python value `{source}`"
