"""Point 3: parameter kinds from the signature and from in-body annotations; definitions
rejected at decoration with a `tl.DefinitionError` naming the parameter or the line.

Kernels here are defined inside the tests (this file is a real source file, which is
all the analysis needs); none of them is elaborated.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, Optional, TypeVar

import pytest
import tilelang.language as TL
import torch

import tltyped as tl
import tltyped.language as T
from tltyped.frontend.signature import Kind, KernelSignature

M = TypeVar("M")
N = TypeVar("N")
K = TypeVar("K", bound=tl.dyn[int])
DT = TypeVar("DT")

THIS_FILE = str(Path(__file__).resolve())


def line_of(marker: str) -> int:
    """The line of this file carrying `marker` (exactly one)."""
    lines = [i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if text.rstrip().endswith(marker)]
    assert len(lines) == 1, (marker, lines)
    return lines[0]


def kinds(sig: KernelSignature) -> dict[str, Kind]:
    return {p.name: p.kind for p in sig.params}


# -- classification: signature form -------------------------------------------------


def test_every_kind_in_the_signature() -> None:
    @tl.jit
    def every_kind(
        A: tl.Tensor[tl.float16, M, K],
        d: tl.dyn[int],
        f: tl.dyn[float],
        p: tl.ptr,
        c: tl.const[int],
        u,
        i: int,
        s: str = "x",
        t: int = tl.tune([1, 2]),
        dt: T.dtype = T.float32,
        flag: bool = True,
    ):
        pass

    sig = every_kind.signature
    assert kinds(sig) == {
        "A": Kind.TENSOR, "d": Kind.DYN, "f": Kind.DYN, "p": Kind.PTR, "c": Kind.CONST, "u": Kind.CONST,
        "i": Kind.CONST, "s": Kind.CONST, "t": Kind.CONST, "dt": Kind.CONST, "flag": Kind.CONST,
    }
    assert [p.name for p in sig.params if p.is_runtime] == ["A", "d", "f", "p"]
    assert (sig.param("d").scalar, sig.param("f").scalar, sig.param("p").scalar) == ("int32", "float32", "handle")
    assert sig.param("t").default == tl.tune([1, 2])
    assert sig.param("dt").default == T.float32
    assert str(sig.param("A").tensor) == "Tensor[float16, M, K]"


def test_typevar_bound_decides_dyn_dims() -> None:
    @tl.jit
    def dims(A: tl.Tensor[tl.float16, M, K], B: tl.Tensor[tl.float16, K, N]):
        pass

    assert dict(dims.signature.dims) == {"M": False, "K": True, "N": False}
    assert dims.signature.dyn_dims == ("K",)
    assert dims.signature.bound_dims() == {"M", "K", "N"}


def test_dtype_typevar_is_shared_between_tensors() -> None:
    @tl.jit
    def same_dtype(A: tl.Tensor[DT, M], B: tl.Tensor[DT, M]):
        pass

    specs = [p.tensor for p in same_dtype.signature.tensors]
    assert [s.dtype.var for s in specs] == ["DT", "DT"]
    assert all(s.dtype.fixed is None for s in specs)


def test_tilelang_scalar_dtype_in_signature_is_dyn() -> None:
    @tl.jit
    def tilelang_scalar(A: tl.Tensor[tl.float32, M], n: TL.int32):
        pass

    assert tilelang_scalar.signature.param("n").kind is Kind.DYN
    assert tilelang_scalar.signature.param("n").scalar == "int32"


@pytest.mark.parametrize("order", ["tilelang", "ours"])
def test_tilelang_dtype_in_signature_tensor(order: str) -> None:
    def tilelang_order(A: T.Tensor[[M, K], TL.float16]):
        pass

    def our_order(A: tl.Tensor[TL.float16, M, K]):
        pass

    fn = tl.jit(tilelang_order if order == "tilelang" else our_order)
    assert str(fn.signature.param("A").tensor) == "Tensor[float16, M, K]"


# -- classification: in-body form ---------------------------------------------------


def test_every_kind_in_the_body() -> None:
    @tl.jit
    def every_kind(A, B, d, f, p, c, u, n, block: int = 64):
        M, N = T.const("M, N")
        K = T.dynamic("K")
        A: T.Tensor[[M, K], T.float16]
        B: T.Tensor[[K, N], T.float16]
        d: tl.dyn[int]
        f: tl.dyn[float]
        p: tl.ptr
        c: tl.const[int]
        n: T.int32

    sig = every_kind.signature
    assert kinds(sig) == {
        "A": Kind.TENSOR, "B": Kind.TENSOR, "d": Kind.DYN, "f": Kind.DYN, "p": Kind.PTR, "c": Kind.CONST,
        "u": Kind.CONST, "n": Kind.DYN, "block": Kind.CONST,
    }
    assert sig.param("n").scalar == "int32"
    assert dict(sig.dims) == {"M": False, "N": False, "K": True}


def test_both_forms_give_the_same_signature(seed_gemm_in_body) -> None:
    @tl.jit
    def gemm(A: tl.Tensor[tl.float16, M, K], B: tl.Tensor[tl.float16, K, N], block_M: int = 128):
        pass

    @tl.jit
    def gemm_body(A, B, block_M: int = 128):
        M, N = T.const("M, N")
        K = T.dynamic("K")
        A: T.Tensor[[M, K], T.float16]
        B: T.Tensor[[K, N], T.float16]

    sig, body = gemm.signature, gemm_body.signature
    assert [(p.name, p.kind, p.tensor, p.default) for p in sig.params] == [
        (p.name, p.kind, p.tensor, p.default) for p in body.params
    ]
    assert sorted(sig.dims.items()) == sorted(body.dims.items())


def test_seed_in_body_gemm_classification(seed_gemm_in_body) -> None:
    sig = seed_gemm_in_body.gemm.signature
    assert kinds(sig) == {
        "A": Kind.TENSOR, "B": Kind.TENSOR, "C": Kind.TENSOR, "out_dtype": Kind.CONST,
        "block_M": Kind.CONST, "block_N": Kind.CONST, "block_K": Kind.CONST,
    }
    assert dict(sig.dims) == {"M": False, "N": False, "K": False}
    assert sig.param("C").tensor.dtype.source == "out_dtype"  # dtype computed from a const


@pytest.mark.parametrize("spelling", ['"M, N"', '"M N"', '"M,N"'])
def test_const_accepts_comma_or_space_separated_names(spelling: str, tmp_path) -> None:
    # decorate a function whose T.const string is spelled differently (a real file for inspect)
    source = (
        "import tltyped as tl\nimport tltyped.language as T\n\n"
        f"def k(A):\n    M, N = T.const({spelling})\n    A: T.Tensor[[M, N], T.float32]\n"
    )
    path = tmp_path / "spelled.py"
    path.write_text(source)
    namespace: dict[str, object] = {}
    exec(compile(source, str(path), "exec"), namespace)
    import linecache

    linecache.checkcache(str(path))
    sig = tl.jit(namespace["k"]).signature
    assert dict(sig.dims) == {"M": False, "N": False}


def test_derived_dim_in_body() -> None:
    @tl.jit
    def derived(A, B):
        N = T.const("N")
        M = N * 2 + 1
        A: T.Tensor[[N], T.float32]
        B: T.Tensor[[M, T.ceildiv(N, 4)], T.float32]

    dims = derived.signature.param("B").tensor.dims
    assert [d.is_derived for d in dims] == [True, True]
    assert [d.evaluate({"N": 10}) for d in dims] == [21, 3]


# -- rejected at decoration ---------------------------------------------------------


def test_positional_only_parameter_is_rejected() -> None:
    def kernel(A: tl.Tensor[tl.float32, M], /, b: int = 1):
        pass

    with pytest.raises(tl.DefinitionError, match=r"positional-only parameter 'A'"):
        tl.jit(kernel)


@pytest.mark.parametrize("which", ["args", "kwargs"])
def test_variadic_parameters_are_rejected(which: str) -> None:
    def with_args(A: tl.Tensor[tl.float32, M], *rest):
        pass

    def with_kwargs(A: tl.Tensor[tl.float32, M], **options):
        pass

    fn, name = (with_args, "rest") if which == "args" else (with_kwargs, "options")
    with pytest.raises(tl.DefinitionError, match=rf"variadic parameter '{name}'"):
        tl.jit(fn)


async def async_kernel(A: tl.Tensor[tl.float32, M]):
    pass


def generator_kernel(A: tl.Tensor[tl.float32, M]):
    yield A  # elaboration would run nothing: calling a generator function runs no line of its body


@pytest.mark.parametrize("fn, kind", [(async_kernel, "an `async def`"), (generator_kernel, "a generator"),
                                      (lambda A: A, "a lambda")])
def test_a_kernel_is_a_plain_def(fn: Any, kind: str) -> None:
    with pytest.raises(tl.DefinitionError, match=f"takes a plain `def` function, not {re.escape(kind)}"):
        tl.jit(fn)


@pytest.mark.parametrize("annotation", [Optional[tl.Tensor[tl.float16, M]], tuple[tl.Tensor[tl.float16, M], ...]])
def test_a_tensor_inside_another_annotation_is_rejected(annotation: Any) -> None:
    """It would be a const: a tensor passed to it keyed by identity, and never the kernel's tensor."""
    def kernel(A: tl.Tensor[tl.float16, M], bias=None):
        pass

    kernel.__annotations__["bias"] = annotation
    with pytest.raises(tl.DefinitionError, match=r"parameter 'bias': a tensor inside \w+\[...\] is not supported"):
        tl.jit(kernel)


def test_a_literal_of_several_sizes_is_rejected_naming_the_parameter() -> None:
    def kernel(A: tl.Tensor[tl.float16, Literal[64, 128]]):
        pass

    with pytest.raises(tl.DefinitionError, match=r"parameter 'A': dim typing.Literal\[64, 128\] is one of several sizes"):
        tl.jit(kernel)


def test_dyn_str_is_rejected_naming_the_parameter() -> None:
    def kernel(A: tl.Tensor[tl.float32, M], label: tl.dyn[str]):
        pass

    with pytest.raises(tl.DefinitionError, match=r"kernel: parameter 'label': dyn\[str\] is not supported"):
        tl.jit(kernel)


def test_alloc_passed_straight_into_a_call_is_rejected() -> None:
    def kernel(A: tl.Tensor[tl.float32, M]):
        with T.Kernel(1, threads=128) as bx:
            T.clear(T.alloc_fragment((128,), tl.float32))  # <- alloc into call

    with pytest.raises(tl.DefinitionError, match="passed straight into a call") as info:
        tl.jit(kernel)
    message = str(info.value)
    assert f"{THIS_FILE}:{line_of('# <- alloc into call')}" in message
    assert "T.alloc_fragment(...) is passed straight into a call" in message
    assert "assign it to a name" in message


def test_alloc_as_keyword_argument_is_rejected() -> None:
    def kernel(A: tl.Tensor[tl.float32, M]):
        with T.Kernel(1, threads=128) as bx:
            T.copy(A, dst=T.alloc_shared((128,), tl.float32))  # <- alloc as keyword

    with pytest.raises(tl.DefinitionError, match="passed straight into a call") as info:
        tl.jit(kernel)
    assert f":{line_of('# <- alloc as keyword')}:" in str(info.value)


def test_alloc_assigned_to_a_name_is_accepted() -> None:
    @tl.jit
    def kernel(A: tl.Tensor[tl.float32, M]):
        with T.Kernel(1, threads=128) as bx:
            buf = T.alloc_fragment((128,), tl.float32)
            T.clear(buf)

    assert kinds(kernel.signature) == {"A": Kind.TENSOR}


@pytest.mark.parametrize("which", ["literal", "expression", "tuple"])
def test_return_of_a_python_value_is_rejected(which: str) -> None:
    def literal(A: tl.Tensor[tl.float32, M]):
        return 1  # <- return literal

    def expression(A: tl.Tensor[tl.float32, M]):
        (m,) = A.shape
        return m + 1  # <- return expression

    def tuple_(A: tl.Tensor[tl.float32, M]):
        (m,) = A.shape
        C = T.empty((m,), tl.float32)
        return C, m * 2  # <- return tuple

    fn, value = {"literal": (literal, "1"), "expression": (expression, "m + 1"), "tuple": (tuple_, "m * 2")}[which]
    with pytest.raises(tl.DefinitionError, match="returns global buffers") as info:
        tl.jit(fn)
    message = str(info.value)
    assert f"{THIS_FILE}:{line_of(f'# <- return {which}')}" in message
    assert f"`{value}`" in message


def test_return_in_a_nested_helper_is_not_the_kernels_return() -> None:
    @tl.jit
    def kernel(A: tl.Tensor[tl.float32, M]):
        def helper(x):
            return x * 2

        (m,) = A.shape
        C = T.empty((helper(m),), tl.float32)
        return C

    assert kinds(kernel.signature) == {"A": Kind.TENSOR}


def test_dim_used_but_never_declared_is_rejected() -> None:
    def kernel(A, B):
        M, N = T.const("M, N")
        A: T.Tensor[[M, Q], T.float16]  # noqa: F821  # <- undeclared dim
        B: T.Tensor[[N], T.float16]

    with pytest.raises(tl.DefinitionError, match='dim "Q" is used but never declared; declare it with T.const') as info:
        tl.jit(kernel)
    assert f"{THIS_FILE}:{line_of('# <- undeclared dim')}" in str(info.value)


def test_declared_dim_no_tensor_binds_is_rejected() -> None:
    def kernel(A):
        M, N = T.const("M, N")  # <- N never a plain dim
        A: T.Tensor[[M], T.float16]

    with pytest.raises(tl.DefinitionError, match='dim "N" is declared but no tensor has it') as info:
        tl.jit(kernel)
    assert f"{THIS_FILE}:{line_of('# <- N never a plain dim')}" in str(info.value)


def test_dim_only_in_derived_positions_is_rejected() -> None:
    """Not affine either (`N * 2` would be solved from the size)."""
    def kernel(A):
        N = T.const("N")
        A: T.Tensor[[T.ceildiv(N, 2)], T.float16]

    with pytest.raises(tl.DefinitionError, match='dim "N" is declared but no tensor has it as a plain dim'):
        tl.jit(kernel)


def test_const_count_must_match_the_assigned_names() -> None:
    def count(A):
        M, N = T.const("M, N, K")  # <- const count
        A: T.Tensor[[M, N], T.float16]

    with pytest.raises(tl.DefinitionError, match="assign one variable per dim") as info:
        tl.jit(count)
    message = str(info.value)
    assert f"{THIS_FILE}:{line_of('# <- const count')}" in message
    assert "declares M, N, K but assigns to M, N" in message


def test_variables_may_name_dims_differently_as_in_tilelang() -> None:
    """`M = T.dynamic("m")`: the dim is `m` (messages, keys, `lower(m=...)`); the body calls it M."""

    def renamed(A, B):
        M = T.dynamic("m")
        X, Y = T.const("N, K")
        A: T.Tensor[[M, Y], T.float16]
        B: T.Tensor[[Y * 2, X], T.float16]

    fn = tl.jit(renamed)
    assert dict(fn.signature.dims) == {"m": True, "N": False, "K": False}
    assert [str(d) for d in fn.signature.param("B").tensor.dims] == ["K * 2", "N"]
    with pytest.raises(ValueError, match=r"argument 'B': dim 0 is K \* 2 = 64 \(K = 32 from A, axis 1\), got 32"):
        fn.lower(torch.empty(8, 32, dtype=torch.float16, device="meta"), torch.empty(32, 4, dtype=torch.float16, device="meta"))


def test_const_needs_a_string_literal() -> None:
    names = "M"

    def kernel(A):
        M = T.const(names)  # <- const non-literal
        A: T.Tensor[[M], T.float16]

    with pytest.raises(tl.DefinitionError, match="string literal") as info:
        tl.jit(kernel)
    assert f":{line_of('# <- const non-literal')}:" in str(info.value)


def test_dim_declared_twice_is_rejected() -> None:
    def kernel(A):
        M = T.const("M")
        M = T.dynamic("M")  # <- declared twice
        A: T.Tensor[[M], T.float16]

    with pytest.raises(tl.DefinitionError, match='dim "M" is declared twice') as info:
        tl.jit(kernel)
    assert f":{line_of('# <- declared twice')}:" in str(info.value)


def test_parameter_annotated_in_signature_and_body_is_rejected() -> None:
    def kernel(A: tl.Tensor[tl.float16, M, N]):
        M, N = T.const("M, N")
        A: T.Tensor[[M, N], T.float16]  # <- annotated twice (signature)

    with pytest.raises(tl.DefinitionError, match="parameter 'A' is annotated both in the signature and in the body") as info:
        tl.jit(kernel)
    assert f"{THIS_FILE}:{line_of('# <- annotated twice (signature)')}" in str(info.value)


def test_parameter_annotated_twice_in_the_body_is_rejected() -> None:
    def kernel(A):
        M = T.const("M")
        A: T.Tensor[[M], T.float16]
        A: T.Tensor[[M], T.float32]  # <- annotated twice (body)

    with pytest.raises(tl.DefinitionError, match="parameter 'A' is annotated twice in the body") as info:
        tl.jit(kernel)
    assert f":{line_of('# <- annotated twice (body)')}:" in str(info.value)


def test_unreadable_body_annotation_names_the_parameter_and_line() -> None:
    def kernel(A):
        M = T.const("M")
        A: T.Tensor[[M], no_such_dtype]  # noqa: F821  # <- bad dtype

    with pytest.raises(tl.DefinitionError) as info:
        tl.jit(kernel)
    message = str(info.value)
    assert f":{line_of('# <- bad dtype')}:" in message
    assert "'A'" in message or "no_such_dtype" in message


def test_definition_error_is_a_type_error() -> None:
    """Code that catches TypeError around decoration keeps working."""
    assert issubclass(tl.DefinitionError, TypeError)


def test_kernel_without_source_is_rejected() -> None:
    namespace: dict[str, object] = {}
    exec("def generated(A):\n    pass\n", {"tl": tl}, namespace)
    with pytest.raises(tl.DefinitionError, match=re.escape("must be defined in a source file")):
        tl.jit(namespace["generated"])


def test_a_signature_shows_defaults_as_the_source_spells_them() -> None:
    """`fn.signature` is read by people: a tuned default as `tl.tune([...])`, a dtype by its name, a number or a
    string as itself (not the error messages' `int 128`)."""

    @tl.jit
    def scaled(A: tl.Tensor[tl.float16, 64], alpha: tl.dyn[float], out_dtype: Any = T.float32, block: int = 128,
               schedule: tuple[int, int] = tl.tune([(128, 8), (132, 16)]), mode: str = "float16") -> None:
        pass

    assert str(scaled.signature) == (
        "scaled(A: Tensor[float16, 64], alpha: dyn[float32], out_dtype: const = float32, block: const = 128, "
        "schedule: const = tl.tune([(128, 8), (132, 16)]), mode: const = 'float16')"
    )
