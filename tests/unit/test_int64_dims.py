"""Dyn dims declared int64 (`T.dynamic("n", "int64")`, TileLang's `T.symbolic("n", "int64")`): sizes past int32.

A dyn dim reaches the kernel in its declared dtype: int32 unless the
declaration names int64. Checked here on CPU (sm_90a): the signature says
which, elaboration makes the dim's TIR variable of it, the kernel and the
launcher take it in 64 bits (the launcher's range check of it is the fast
path's), the binder refuses a size past its range and takes one past int32's,
a factory's record keeps it, and the kernel's key tells it from an int32 dim.
tests/gpu/test_int64_dims.py runs the kernels.

No `from __future__ import annotations`, as in TileLang's examples.
"""

import dataclasses
import re
from typing import Any

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.conftest import meta, needs_nvcc
from tests.kernels.int64_dims import fill_symbolic, scaled_rows
from tltyped.callpath.kernels import KernelTable
from tltyped.frontend.binding import Bound
from tltyped.frontend.lazy import signature_from_json, signature_to_json

BF16, F32 = torch.bfloat16, torch.float32
PAST_INT32 = 2**31 + 1024


@tl.jit
def fill_wide(x, value: float):
    n = T.dynamic("n", T.int64)
    x: T.Tensor[[n], T.bfloat16]
    with T.Kernel(T.ceildiv(n, 512), threads=128) as bx:
        for i in T.Parallel(512):
            if bx * 512 + i < n:
                x[bx * 512 + i] = value


@tl.jit
def fill_narrow(x, value: float):
    n = T.dynamic("n")
    x: T.Tensor[[n], T.bfloat16]
    with T.Kernel(T.ceildiv(n, 512), threads=128) as bx:
        for i in T.Parallel(512):
            if bx * 512 + i < n:
                x[bx * 512 + i] = value


def bind(kernel, *args) -> Bound:
    return kernel._dispatcher.binder.bind(args, allow_meta=True)


def test_the_signature_names_an_int64_dims_dtype(sm90) -> None:
    assert fill_wide.signature.dim_dtype("n") == "int64"
    assert str(fill_wide.signature).endswith("[dims: n(dyn int64)]")
    assert fill_narrow.signature.dim_dtype("n") == "int32" and fill_narrow.signature.dim_dtypes == {}
    lazy = fill_symbolic(1.0)
    assert lazy.signature.dim_dtypes == {"n": "int64"}


@pytest.mark.parametrize("declaration", ['T.dynamic("n", "int64")', 'T.symbolic("n", dtype=T.int64)',
                                         'T.dynamic("n", dtype="int64")', 'T.dynamic("n", "int32")'])
def test_each_spelling_of_the_dtype(tmp_path, declaration: str) -> None:
    path = tmp_path / "spelled.py"
    path.write_text(
        "import tltyped as tl\nimport tltyped.language as T\n\n@tl.jit\ndef spelled(x):\n"
        f"    n = {declaration}\n    x: T.Tensor[[n], T.float32]\n"
    )
    namespace: dict[str, object] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    expected = "int32" if "int32" in declaration else "int64"
    assert namespace["spelled"].signature.dim_dtype("n") == expected  # type: ignore[attr-defined]


SCALAR_OF_NO_DIM_DTYPE = '8: dim "n" is the scalar parameter n, of dtype {}; a scalar sizes a tensor as one of T.int32, T.int64'


@pytest.mark.parametrize(("parameters", "declaration", "message"), [
    ("x", 'n = T.dynamic("n", "int16")', "7: T.dynamic() declares a dyn dim of dtype 'int16'; a dyn dim is one of int32, int64"),
    ("x", 'n = T.dynamic("n", T.float32)', "7: T.dynamic() declares a dyn dim of dtype 'float32'; a dyn dim is one of int32, int64"),
    ("x", 'n = T.dynamic("n", index_dtype)', '7: T.dynamic() takes the dim\'s dtype as a literal: "int64" or T.int64, not index_dtype'),
    *(("x, n", f"n: T.{dtype}", SCALAR_OF_NO_DIM_DTYPE.format(dtype)) for dtype in ("int8", "uint32", "float32")),
])
def test_a_dim_of_a_dtype_no_dyn_dim_has_is_refused_at_decoration(tmp_path, parameters: str, declaration: str,
                                                                     message: str) -> None:
    """A dim declared of another dtype than int32 and int64 (named on its line), or sized by a scalar parameter of
    one (named on the tensor's line)."""
    path = tmp_path / "refused.py"
    path.write_text(
        f"import tltyped as tl\nimport tltyped.language as T\nindex_dtype = T.int64\n\n@tl.jit\ndef refused({parameters}):\n"
        f"    {declaration}\n    x: T.Tensor[[n], T.float32]\n"
    )
    with pytest.raises(tl.DefinitionError) as info:
        exec(compile(path.read_text(), str(path), "exec"), {})
    assert str(info.value) == f"{path}:{message}"


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_a_dim_the_body_computes_from_a_scalar_parameter_is_that_expression(tmp_path, dtype: str) -> None:
    """`k = m * 2` then `x: T.Tensor[[k], ...]`: x's size is `m * 2` of the call's m, in m's dtype, as if written in
    the annotation, whatever the module binds to the name m; from an int8 m it is refused as m itself would be,
    naming m on the tensor's line."""
    path = tmp_path / "computed.py"
    source = ("import tltyped as tl\nimport tltyped.language as T\nm = 1024\n@tl.jit\ndef computed(x, m: T.{dtype}):\n"
              "    k = m * 2\n    w = k + 1\n    x: T.Tensor[[w], T.float32]\n")
    path.write_text(source.format(dtype=dtype))
    namespace: dict[str, Any] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    kernel = namespace["computed"]
    assert str(kernel.signature).startswith(f"computed(x: Tensor[float32, m * 2 + 1], m: dyn[{dtype}])")
    assert kernel.signature.dim_dtype("m") == dtype
    bind(kernel, meta(11, dtype=F32), 5)
    with pytest.raises(tl.ArgumentValueError, match="argument 'm' = 4, but it is dim m of x, axis 0 = m \\* 2 \\+ 1, which is 5"):
        bind(kernel, meta(11, dtype=F32), 4)
    path.write_text(source.format(dtype="int8"))
    with pytest.raises(tl.DefinitionError) as info:
        exec(compile(path.read_text(), str(path), "exec"), {})
    assert str(info.value) == f"{path}:" + SCALAR_OF_NO_DIM_DTYPE.format("int8").replace('"n"', '"m"').replace(
        "parameter n", "parameter m")


def test_a_dim_the_body_computes_from_an_int32_and_an_int64_scalar_is_their_sum(sm90) -> None:
    """`k = m + n` of an int32 m and an int64 n (TVM widens m to int64) is `m + n`, as written in the annotation."""

    def mixed(x, y, m: T.int32, n: T.int64):
        k = m + n
        x: T.Tensor[[m, n], T.float32]
        y: T.Tensor[[k], T.float32]

    kernel = tl.jit(mixed)
    assert str(kernel.signature).startswith("mixed(x: Tensor[float32, m, n], y: Tensor[float32, m + n]")
    assert bind(kernel, meta(3, 5, dtype=F32), meta(8, dtype=F32), 3, 5).dims == {"m": 3, "n": 5}


def test_a_scalar_only_in_a_size_of_other_dims_is_the_calls_argument(sm90) -> None:
    """`x: T.Tensor[[n, n + m], ...]`: no tensor has m plainly, but the call passes it, as it passes a scalar that
    sizes only an output; the size is checked against it (the lazy style's prim_func.py read it so already)."""

    def offset(x, m: T.int64):
        n = T.dynamic("n")
        x: T.Tensor[[n, n + m], T.float32]

    kernel = tl.jit(offset)
    assert str(kernel.signature).startswith("offset(x: Tensor[float32, n, n + m], m: dyn[int64])")
    assert bind(kernel, meta(4, 7, dtype=F32), 3).dims == {"n": 4, "m": 3}
    with pytest.raises(tl.ArgumentValueError, match="dim 1 is n \\+ m = 6"):
        bind(kernel, meta(4, 7, dtype=F32), 2)


def test_a_scalar_the_body_binds_again_sizes_a_tensor_as_its_new_value(sm90) -> None:
    """`m = m * 2` before `x: T.Tensor[[m], ...]`: x has 2 m elements of the call's m, as TileLang, running the body,
    sizes it (not m: the kernel would then read past x's end); a shape computed as a tuple reads the same way."""

    def rebound(x, y, m: T.int32):
        shape = (m + 1, 4)
        m = m * 2
        x: T.Tensor[[m], T.float32]
        y: T.Tensor(shape, T.float32)

    kernel = tl.jit(rebound)
    assert str(kernel.signature).startswith("rebound(x: Tensor[float32, m * 2], y: Tensor[float32, m + 1, 4]")
    assert bind(kernel, meta(8, dtype=F32), meta(5, 4, dtype=F32), 4).dims == {"m": 4}
    with pytest.raises(tl.ArgumentValueError, match="argument 'm' = 8, but it is dim m of x, axis 0 = m \\* 2, which is 4"):
        bind(kernel, meta(8, dtype=F32), meta(9, 4, dtype=F32), 8)


def test_names_a_tuple_binds_item_by_item_size_tensors_as_their_items(sm90) -> None:
    """`k, l = m * 2, 4` binds k as `k = m * 2` would (the plugin reads it so too); from an int8 m, or from m
    bound again to `m * 2`, the size is refused naming m."""

    def paired(x, m: T.int32):
        k, l = m * 2, 4
        x: T.Tensor[[k, l], T.float32]

    kernel = tl.jit(paired)
    assert str(kernel.signature).startswith("paired(x: Tensor[float32, m * 2, 4]")
    assert bind(kernel, meta(8, 4, dtype=F32), 4).dims == {"m": 4}
    with pytest.raises(tl.ArgumentValueError, match="axis 0 = m \\* 2, which is 3"):
        bind(kernel, meta(6, 4, dtype=F32), 4)

    def narrow_pair(x, m: T.int8):
        k, l = m * 2, 4
        x: T.Tensor[[k, l], T.float32]

    def narrow_rebound(x, m: T.int8):
        m = m * 2
        x: T.Tensor[[m], T.float32]

    for narrow in (narrow_pair, narrow_rebound):
        with pytest.raises(tl.DefinitionError, match='dim "m" is the scalar parameter m, of dtype int8; a scalar sizes'):
            tl.jit(narrow)


def test_a_shape_tuple_computed_from_a_scalar_of_no_dim_dtype_is_refused_naming_it() -> None:
    def narrow_shape(x, m: T.int8):
        shape = (m * 2, 4)
        x: T.Tensor(shape, T.float32)

    with pytest.raises(tl.DefinitionError, match='dim "m" is the scalar parameter m, of dtype int8; a scalar sizes a tensor'):
        tl.jit(narrow_shape)


@tl.jit
def narrow_factory(n_dtype):
    n = T.dynamic("n", n_dtype)

    @T.prim_func
    def main(x: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x[bx] = 0.0

    return main


def test_a_factorys_dim_of_a_dtype_no_dyn_dim_has_is_refused_when_it_runs(sm90) -> None:
    assert narrow_factory("int64").signature.dim_dtypes == {"n": "int64"}
    with pytest.raises(tl.DefinitionError, match=re.escape(
            "narrow_factory: dim 'n': T.dynamic() declares a dyn dim of dtype 'int16'; a dyn dim is one of int32, int64")):
        narrow_factory("int16")


def test_elaboration_makes_the_dims_variable_int64(sm90) -> None:
    for kernel in (fill_wide, fill_symbolic(1.0)):
        lowered = kernel.lower(meta(1000, dtype=BF16), *(() if kernel is not fill_wide else (1.0,)))
        (x,) = lowered.prim_func.params
        (size,) = lowered.prim_func.buffer_map[x].shape
        assert str(size.dtype) == "int64"
    narrow = fill_narrow.lower(meta(1000, dtype=BF16), 1.0)
    (size,) = narrow.prim_func.buffer_map[narrow.prim_func.params[0]].shape
    assert str(size.dtype) == "int32"


@needs_nvcc
def test_the_kernel_and_its_launcher_take_the_dim_in_64_bits(sm90) -> None:
    for kernel, args in ((fill_wide, (1.0,)), (fill_symbolic(1.0), ())):
        compiled = kernel.compile(meta(PAST_INT32, dtype=BF16), *args)
        assert re.search(r"__global__ void .*\(bfloat16_t\* __restrict__ x, int64_t n\)", compiled.cuda_source)
        # the launcher converts the dim in int64's range (the fast path's check) and passes it as int64_t
        assert '{ "dim n", tltyped_launcher::Convert::dim, LLONG_MIN, 9223372036854775807ULL, 0.0 }' in compiled.launcher_source
        assert "(int64_t)v[1].integer" in compiled.launcher_source
    narrow = fill_narrow.compile(meta(1000, dtype=BF16), 1.0)
    assert '{ "dim n", tltyped_launcher::Convert::dim, -2147483648LL, 2147483647ULL, 0.0 }' in narrow.launcher_source


def test_the_binder_takes_a_size_past_int32_for_an_int64_dim_only(sm90) -> None:
    assert bind(fill_wide, meta(PAST_INT32, dtype=BF16), 1.0).dims == {"n": PAST_INT32}
    assert bind(fill_symbolic(1.0), meta(PAST_INT32, dtype=BF16)).dims == {"n": PAST_INT32}
    with pytest.raises(ValueError) as info:
        bind(fill_narrow, meta(2**31, dtype=BF16), 1.0)
    assert str(info.value) == ("fill_narrow: dim n = 2147483648 (from x, axis 0) is too large for a dyn dim (int32, at most "
                               "2147483647); declare it const to specialise on it")
    bind(fill_narrow, meta(2**31 - 1, dtype=BF16), 1.0)


def test_a_dim_given_by_name_is_checked_against_its_dtype(sm90) -> None:
    with pytest.raises(ValueError, match=re.escape(
            "fill_wide: dim n = 9223372036854775808 (given by name) is too large for a dyn dim (int64, at most "
            "9223372036854775807)")):
        fill_wide.lower(n=2**63, value=1.0)
    with pytest.raises(ValueError, match=re.escape("dim n = 2147483648 (given by name) is too large for a dyn dim (int32")):
        fill_narrow.lower(n=2**31, value=1.0)
    fill_wide.lower(n=2**31, value=1.0)


def test_a_factory_record_keeps_the_dims_dtype(sm90) -> None:
    signature = fill_symbolic(1.0).signature
    assert signature_from_json(signature_to_json(signature)) == signature


def test_an_int64_dim_keys_its_kernel_apart_from_an_int32_dim_of_one_name(sm90) -> None:
    """The same function, spec and target: only the dim's dtype differs, and so does the kernel's key."""
    narrow = fill_narrow.signature
    wide = dataclasses.replace(narrow, dim_dtypes={"n": "int64"})
    dispatcher = fill_narrow._dispatcher
    spec, target = dispatcher.bind_for_inspection((meta(64, dtype=BF16), 1.0), {})
    keys = [KernelTable(dispatcher.fn, s, dispatcher.kernels._build).identity(spec, target) for s in (narrow, wide)]
    assert keys[0].memory != keys[1].memory and keys[0].record != keys[1].record


def test_an_int64_scalar_that_sizes_a_tensor_is_an_int64_dim(sm90) -> None:
    """`M: T.int64` sizing `X: T.Tensor[[M, N], ...]`, as `M: T.int32` does: its dim is int64, in the kernel too; the
    binder takes a size past int32 for it and refuses a value that is not the tensor's size."""
    assert scaled_rows.signature.scalar_dims == ("M", "N") and scaled_rows.signature.dim_dtypes == {"M": "int64"}
    assert bind(scaled_rows, meta(PAST_INT32, 1, dtype=F32), PAST_INT32, 1, 2.0).dims == {"M": PAST_INT32, "N": 1}
    with pytest.raises(ValueError, match="M"):
        bind(scaled_rows, meta(8, 4, dtype=F32), 9, 4, 2.0)
    with pytest.raises(ValueError, match=re.escape("'N' = int 2147483648 does not fit in int32")):
        bind(scaled_rows, meta(1, 2**31, dtype=F32), 1, 2**31, 2.0)


@needs_nvcc
def test_an_int64_scalar_that_sizes_a_tensor_reaches_the_kernel_in_64_bits(sm90) -> None:
    compiled = scaled_rows.compile(meta(1000, 8, dtype=F32), 1000, 8, 2.0)
    assert re.search(r"__global__ void \w+\(const float\* __restrict__ X, float\* __restrict__ Y, int64_t M, int N,",
                     compiled.cuda_source)

