"""Point 2: the runtime objects behind the annotations (dtypes, Tensor, dyn, ptr, const, tune)."""

from __future__ import annotations

import pkgutil
import typing
from typing import Annotated, Any, TypeVar, get_args, get_origin

import pytest
import tilelang.language as TL
import torch

import tltyped as tl
import tltyped.language as T
from tltyped.frontend.annotation import DimReader, parse_param, parse_tensor
from tltyped import DefinitionError
from tltyped.frontend.signature import Kind
from tltyped.types import ALL_DTYPES, CONST, DYN, PTR, DType, as_dtype, is_dtype_like, to_tilelang, to_torch
from tltyped.types.tensor import shape_and_dtype

M = TypeVar("M")
K = TypeVar("K", bound=tl.dyn[int])

DTYPE_IDS = [d.__name__ for d in ALL_DTYPES]


# -- dtypes -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_dtype_class_maps_to_torch_and_back(dtype: type[DType]) -> None:
    torch_dtype = to_torch(dtype)
    assert isinstance(torch_dtype, torch.dtype)
    assert torch_dtype == getattr(torch, dtype.torch_name)
    assert as_dtype(torch_dtype) is dtype
    # the torch dtype really has the width the name claims
    assert torch.empty((), dtype=torch_dtype).element_size() * 8 == TL.dtype(dtype.name).bits


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_dtype_class_maps_to_tilelang_and_back(dtype: type[DType]) -> None:
    tl_dtype = to_tilelang(dtype)
    assert isinstance(tl_dtype, TL.dtype)
    assert as_dtype(tl_dtype) is dtype
    # TileLang's own idea of the matching torch dtype agrees with ours
    assert tl_dtype.as_torch() == to_torch(dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
def test_every_spelling_of_a_dtype_is_accepted(dtype: type[DType]) -> None:
    spellings = [dtype, dtype.name, to_torch(dtype), to_tilelang(dtype), str(to_tilelang(dtype))]
    for spelling in spellings:
        assert is_dtype_like(spelling), spelling
        assert as_dtype(spelling) is dtype, spelling
        assert to_torch(spelling) == to_torch(dtype)
        assert to_tilelang(spelling) == to_tilelang(dtype)


def test_tilelang_dtype_objects_are_dtypes_too() -> None:
    for name in ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"):
        assert as_dtype(getattr(T, name)).name == name
    assert as_dtype(T.float8_e4m3fn) is tl.float8_e4m3
    assert as_dtype(T.float8_e5m2) is tl.float8_e5m2


def test_dtype_classes_are_distinct_and_exported() -> None:
    assert len(set(ALL_DTYPES)) == len(ALL_DTYPES)
    assert len({d.torch_name for d in ALL_DTYPES}) == len(ALL_DTYPES)
    for d in ALL_DTYPES:
        assert getattr(tl, d.__name__) is d
    assert tl.bool is tl.bool_


def test_no_module_of_the_package_is_named_as_a_public_name() -> None:
    """`tltyped` binds its public names on first use, and Python binds a package's submodules as they are
    imported: a `tltyped/jit.py` would make `tl.jit` that module after a user's `from tltyped.jit import ...`."""
    modules = {module.name for module in pkgutil.iter_modules(tl.__path__)}
    assert modules and not modules & set(tl.__all__), modules & set(tl.__all__)


@pytest.mark.parametrize(
    ("value", "error"),
    [("float17", ValueError), (torch.complex64, ValueError), (3, TypeError), (DType, TypeError), (None, TypeError)],
)
def test_not_a_dtype(value: object, error: type[Exception]) -> None:
    assert not is_dtype_like(value)
    with pytest.raises(error):
        as_dtype(value)


def test_unknown_dtype_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="float17") as info:
        as_dtype("float17")
    assert "float16" in str(info.value)


def test_language_functions_take_dtype_classes() -> None:
    """`T.empty`, `T.alloc_global` and the allocators take tl.float32 as TileLang's dtype."""
    out = T.empty((4, 8), tl.float16)
    assert out.dtype == to_tilelang(tl.float16)
    assert list(out.shape) == [4, 8]
    assert T.alloc_global((3,), tl.int32).dtype == to_tilelang(tl.int32)
    assert T.empty((2,), torch.bfloat16).dtype == to_tilelang(tl.bfloat16)


# -- Tensor -------------------------------------------------------------------------


def test_tensor_subscript_records_dtype_then_dims() -> None:
    ann = tl.Tensor[tl.float16, M, K]
    assert get_origin(ann) is tl.Tensor
    assert get_args(ann) == (tl.float16, M, K)


def test_tensor_in_both_orders_reads_the_same() -> None:
    dims = DimReader()
    ours = parse_tensor("A", get_args(tl.Tensor[tl.float16, M, K]), dims)
    tilelang_order = parse_tensor("A", get_args(T.Tensor[[M, K], tl.float16]), DimReader())
    assert ours == tilelang_order
    assert str(ours) == "Tensor[float16, M, K]"
    assert ours.dtype.fixed is tl.float16
    assert [d.text for d in ours.dims] == ["M", "K"]
    assert dims.kinds == {"M": False, "K": True}  # the TypeVar bound decides dyn-ness


def test_tensor_subscript_keeps_tilelang_dtype_objects() -> None:
    """`T.Tensor[[M, K], T.float16]` (TileLang's own spelling) must read as Tensor[float16, M, K]."""
    spec = parse_tensor("A", get_args(T.Tensor[[M, K], T.float16]), DimReader())
    assert spec.dtype.fixed is tl.float16


@pytest.mark.parametrize(
    "annotation, dims, dtype",
    [
        (tl.Tensor[tl.float16, 4, 8], [4, 8], tl.float16),  # tltyped's order
        (tl.Tensor[[4, 8], "float16"], [4, 8], "float16"),  # TileLang's, a list shape
        (tl.Tensor[(4, 8), "float16"], [4, 8], "float16"),  # a tuple shape
        (tl.Tensor[4, "bfloat16"], [4], "bfloat16"),  # a one-dim shape, unbracketed
        (tl.Tensor[(4,)], [4], "float32"),  # no dtype: float32, as TileLang reads it
        (tl.Tensor[4, 8], [4, 8], "float32"),
        (tl.Tensor[[4, 8]], [4, 8], "float32"),
        (tl.Tensor[tl.float16], [], tl.float16),  # a scalar tensor
    ],
)
def test_every_spelling_of_a_tensor_states_its_dims_and_dtype(annotation: object, dims: list[int], dtype: object) -> None:
    """`shape_and_dtype`, what a lazy-style prim_func's annotations and `T.Tensor(shape, dtype)` values are read by."""
    assert shape_and_dtype(annotation) == (dims, dtype)


def test_tensor_literal_dims() -> None:
    spec = parse_tensor("A", get_args(tl.Tensor[tl.float32, M, typing.Literal[4], 8]), DimReader())
    assert [(d.text, d.value) for d in spec.dims] == [("M", None), ("4", 4), ("8", 8)]


def test_tensor_is_an_annotation_not_a_value() -> None:
    with pytest.raises(TypeError, match="annotation"):
        tl.Tensor()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [((), "needs a dtype"), ((tl.float16, "M"), "must be a TypeVar"), (("float99", M), "unknown dtype"),
     (([M], tl.float16, 3), "expected Tensor")],
)
def test_malformed_tensor_annotation(args: tuple[object, ...], fragment: str) -> None:
    with pytest.raises(DefinitionError, match=fragment) as info:
        parse_tensor("A", args, DimReader())
    assert "'A'" in str(info.value)


def test_dim_cannot_be_both_dyn_and_const() -> None:
    K_const = TypeVar("K")  # same name as the dyn K
    with pytest.raises(DefinitionError, match="'K' is declared both dyn and const"):
        dims = DimReader()
        parse_tensor("A", (tl.float16, K), dims)
        parse_tensor("B", (tl.float16, K_const), dims)


# -- dyn, ptr, const, tune ----------------------------------------------------------


@pytest.mark.parametrize(("base", "scalar"), [(int, "int32"), (float, "float32")])
def test_dyn_is_annotated_base_type(base: type, scalar: str) -> None:
    ann = tl.dyn[base]
    assert get_origin(ann) is Annotated
    assert get_args(ann)[0] is base  # a type checker sees the plain scalar type
    assert DYN in ann.__metadata__
    p = parse_param("n", ann, 0, DimReader())
    assert (p.kind, p.scalar, p.default) == (Kind.DYN, scalar, 0)
    assert p.is_runtime


def test_ptr_is_an_annotated_int() -> None:
    assert get_origin(tl.ptr) is Annotated
    assert get_args(tl.ptr)[0] is int
    assert PTR in tl.ptr.__metadata__
    p = parse_param("p", tl.ptr, inspect_empty(), DimReader())
    assert (p.kind, p.scalar) == (Kind.PTR, "handle")
    assert p.is_runtime


def test_const_marker() -> None:
    ann = tl.const[int]
    assert get_args(ann)[0] is int
    assert CONST in ann.__metadata__
    p = parse_param("c", ann, 3, DimReader())
    assert p.kind is Kind.CONST and not p.is_runtime


def test_dyn_str_is_rejected() -> None:
    with pytest.raises(DefinitionError, match=r"'s'.*dyn\[str\]"):
        parse_param("s", tl.dyn[str], inspect_empty(), DimReader())


def test_tune_holds_its_candidates() -> None:
    space = tl.tune([64, 128])
    assert isinstance(space, tl.Tune)
    assert space.values == (64, 128)
    assert tl.tune((64, 128)) == space
    assert hash(tl.tune([64, 128])) == hash(space)  # hashable: it can sit in a cache key
    assert {space: 1}[tl.tune([64, 128])] == 1
    assert tl.tune([128, 64]) != space


def test_tune_default_makes_a_const_parameter() -> None:
    p = parse_param("block", int, tl.tune([1, 2]), DimReader())
    assert p.kind is Kind.CONST
    assert p.default == tl.tune([1, 2])


def test_empty_tune_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least one candidate"):
        tl.tune([])


def test_unhashable_tune_candidate_is_rejected() -> None:
    with pytest.raises(tl.ArgumentTypeError, match=r"tl.tune\(\): candidate list \[64, 128\] is unhashable"):
        tl.tune([[64, 128]])


def test_a_tune_candidate_whose_hash_raises_is_refused_naming_it() -> None:
    """Its own ValueError leaked out of `tl.tune(...)` and `tl.autotune(configs=...)`."""
    from tests.unit.hostile import RaisingHash

    with pytest.raises(tl.ArgumentTypeError, match=r"^tl.tune\(\): candidate tests\.unit\.hostile\.RaisingHash <.*> is "
                       r"unhashable \(its __hash__ raised ValueError\) \(each candidate keys the kernel cache\)$"):
        tl.tune([64, RaisingHash()])
    with pytest.raises(tl.ArgumentTypeError, match=r"^autotune: a configuration's block=tests\.unit\.hostile\.RaisingHash "
                       r"<.*> is unhashable \(its __hash__ raised ValueError\)"):
        tl.autotune(configs=[{"block": 64}, {"block": RaisingHash()}])


@pytest.mark.parametrize("values", [64, "64", None, {64, 128}])
def test_tune_takes_a_list_of_candidates(values: Any) -> None:
    """A string would otherwise be a space of its characters, a set one whose order differs between processes; an
    int, a bare TypeError from tuple()."""
    with pytest.raises(tl.ArgumentTypeError, match=r"tl.tune\(\) takes a list of candidate values, got "):
        tl.tune(values)


def test_tune_is_immutable() -> None:
    space = tl.tune([1])
    with pytest.raises(AttributeError):
        space.values = (2,)  # type: ignore[misc]


def inspect_empty() -> object:
    import inspect

    return inspect.Parameter.empty
