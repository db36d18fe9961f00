"""Dyn scalars of a dtype the launcher cannot pass by value (bfloat16, float8): refused where the dtype is first known.

The launcher passes a dyn scalar by value in the C type of tltyped.abi's
HOST_SCALARS; TileLang cannot lower a kernel that takes a bfloat16 or float8
scalar parameter (its host code checks `dtype.is_float()`). A signature or
in-body annotation is refused at decoration, and a factory's PrimFunc when
the factory runs (its arguments may choose the dtype), naming the parameter,
its dtype and the dtypes a dyn scalar may have, all of them derived from
HOST_SCALARS. Every dtype admitted compiles for sm_90a.

No `from __future__ import annotations`: the annotations are TileLang's dtype objects, as users write them.
"""

import importlib.util
import re
import textwrap
from pathlib import Path
from typing import Any, TypeVar

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.conftest import has_nvcc, meta, target_env
from tltyped.abi import HOST_SCALAR_DTYPES, HOST_SCALARS
from tltyped.frontend.signature import Kind
from tltyped.types.dtypes import ALL_DTYPES

N = TypeVar("N", bound=tl.dyn[int])

REFUSED = ["bfloat16", "float8_e4m3fn", "float8_e5m2"]
ADMITTED = ", ".join(d.name for d in HOST_SCALAR_DTYPES)


def refusal(where: str, dtype: str) -> str:
    """The refusal, after `where`: the kernel's name, or for an in-body annotation its file and line."""
    return (f"{where}: parameter 'alpha' is a dyn scalar of dtype {dtype}, which the launcher does not pass by value; "
            f"a dyn scalar's dtype is one of {ADMITTED} (take it as float32 and convert it in the body with T.Cast, "
            f"or pass a one-element {dtype} tensor)")


def test_the_scalar_dtypes_are_those_whose_c_type_the_launcher_passes() -> None:
    """Derived from HOST_SCALARS alone: the README's list, and none of bfloat16 or float8."""
    assert {d.name for d in HOST_SCALAR_DTYPES} == {
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64",
    }
    assert [d for d in ALL_DTYPES if d.c_name in HOST_SCALARS.values()] == list(HOST_SCALAR_DTYPES)


@pytest.mark.parametrize("dtype", REFUSED)
def test_a_signature_scalar_of_a_dtype_the_launcher_does_not_pass_is_refused_at_decoration(dtype: str) -> None:
    def kernel(X: tl.Tensor[tl.float32, N], alpha, block: int = 128):
        pass

    kernel.__annotations__["alpha"] = getattr(T, dtype)
    with pytest.raises(tl.DefinitionError) as info:
        tl.jit(kernel)
    assert str(info.value) == refusal("kernel", dtype)


@pytest.mark.parametrize("dtype", REFUSED)
def test_an_in_body_scalar_of_a_dtype_the_launcher_does_not_pass_is_refused_at_decoration(dtype: str) -> None:
    scalar_dtype = getattr(T, dtype)

    def kernel(X, alpha):
        n = T.const("n")
        X: T.Tensor[[n], T.float32]
        alpha: scalar_dtype  # <- the in-body scalar

    lines = Path(__file__).read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.endswith("# <- the in-body scalar"))
    with pytest.raises(tl.DefinitionError) as info:
        tl.jit(kernel)
    assert str(info.value) == refusal(f"{__file__}:{line}", dtype)


@pytest.mark.parametrize("future", ["", "from __future__ import annotations"])
def test_a_quoted_scalar_annotation_is_a_forward_reference_to_the_scalar(future: str, tmp_path: Path) -> None:
    """`M: "T.int32"` is `M: T.int32`, under postponed annotations too (where the annotation is read twice), as a type
    checker reads it; so `M: "T.int16"` sizing a tensor is refused as `M: T.int16` is, not taken as a const. So are
    quoted annotations in the body, tensors' too."""
    path = tmp_path / "quoted_scalars.py"
    path.write_text(textwrap.dedent(f"""
        {future}
        import tltyped as tl
        import tltyped.language as T

        def sized(X, M: "T.int32", block: "int" = 128):
            X: T.Tensor[[M], T.float32]

        def too_narrow(X, M: "T.int16"):
            X: T.Tensor[[M], T.float32]

        def in_the_body(X, Y, M):
            N = T.dynamic("N")
            X: "T.Tensor[[N], T.float16]"
            Y: T.Tensor[[N, M], T.float16]
            M: "T.int32"

        def too_narrow_in_the_body(X, M):
            M: "T.int16"
            X: T.Tensor[[M], T.float32]

        def unclosed_quote_in_the_body(X):
            N = T.dynamic("N")
            X: "T.Tensor[[N], T.float16"
    """))
    spec = importlib.util.spec_from_file_location("quoted_scalars", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = tl.jit(module.sized).signature
    assert (signature.param("M").kind, signature.param("M").scalar) == (Kind.DYN, "int32")
    assert (signature.param("block").kind, signature.param("block").annotation) == (Kind.CONST, int)
    with pytest.raises(tl.DefinitionError, match=r'dim "M" is the scalar parameter M, of dtype int16'):
        tl.jit(module.too_narrow)
    body = tl.jit(module.in_the_body).signature  # quoted in the body: read from the source, unquoted the same way
    assert str(body).startswith("in_the_body(X: Tensor[float16, N], Y: Tensor[float16, N, M], M: dyn[int32])")
    with pytest.raises(tl.DefinitionError, match=r'quoted_scalars.py:20: dim "M" is the scalar parameter M, of dtype int16'):
        tl.jit(module.too_narrow_in_the_body)
    # a quote holding no expression annotates nothing: refused where it is written, not read as a const parameter
    with pytest.raises(tl.DefinitionError, match=r"quoted_scalars.py:24: the annotation of parameter 'X' is quoted, "
                                                 r"'T.Tensor\[\[N\], T.float16', and the quote holds no Python expression"):
        tl.jit(module.unclosed_quote_in_the_body)


def scaled(N, dtype):  # noqa: N803  (TileLang's spelling)
    """A factory whose scalar's dtype is its argument's."""

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), alpha: dtype):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(N):
                Y[i] = X[i] * T.Cast("float32", alpha)

    return main


@pytest.mark.parametrize("dtype", REFUSED)
def test_a_factory_scalar_of_a_dtype_the_launcher_does_not_pass_is_refused_when_the_factory_runs(
    sm90: str, dtype: str
) -> None:
    """Not at decoration: the factory's arguments choose the dtype, so it is first known when the factory runs."""
    factory = tl.jit(scaled)
    assert factory(64, T.float32).signature.param("alpha").scalar == "float32"
    with pytest.raises(tl.DefinitionError) as info:
        factory(64, getattr(T, dtype))
    assert str(info.value) == refusal("scaled", dtype)


def test_a_kernel_taking_a_scalar_of_every_admitted_dtype_compiles_for_sm90a(tmp_path: Path) -> None:
    """What decoration admits, the launcher passes: nothing admitted fails later in TileLang or nvcc."""
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    names = [f"s_{d.name}" for d in HOST_SCALAR_DTYPES]
    params = ", ".join(f"{name}: T.{d.name}" for name, d in zip(names, HOST_SCALAR_DTYPES))
    total = " + ".join(f'T.Cast("float32", {name})' for name in names)
    path = tmp_path / "every_host_scalar.py"
    path.write_text(textwrap.dedent(f"""
        from typing import TypeVar
        import tltyped as tl
        import tltyped.language as T
        N = TypeVar("N", bound=tl.dyn[int])

        @tl.jit
        def every_host_scalar(X: tl.Tensor[tl.float32, N], {params}, block: int = 128) -> tl.Tensor[tl.float32, N]:
            (n,) = X.shape
            Y = T.empty((n,), tl.float32)
            with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
                for i in T.Parallel(block):
                    if bx * block + i < n:
                        Y[bx * block + i] = X[bx * block + i] + {total}
            return Y
    """))
    spec = importlib.util.spec_from_file_location("every_host_scalar", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    values: list[Any] = [True if d.name == "bool" else 1.0 if d.is_float() else 1 for d in HOST_SCALAR_DTYPES]
    with target_env("sm_90a"):
        kernel = module.every_host_scalar.compile(meta(100, dtype=torch.float32), *values)
    ctypes = re.findall(r'\{ "s_(\w+)", tltyped_launcher::Convert::(\w+),', kernel.launcher_source)
    assert [name for name, _ in ctypes] == [d.name for d in HOST_SCALAR_DTYPES]
