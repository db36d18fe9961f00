"""Sub-byte tensor arguments (packed fp4 / int4), as TileLang 0.1.15 takes them, on CPU (sm_90a).

A tensor parameter declared `float4_e2m1fn` (or `int4`) describes the LOGICAL tensor; the torch tensor passed
holds it packed two values a byte along its innermost dim (int8, uint8, or torch's float4_e2m1fn_x2), its
strides in bytes. The binder, the generated fast path and the C cached call must read the same logical sizes,
and an output declared so is allocated as its packed storage (types/dtypes.py's PACKED_DTYPES).
No `from __future__ import annotations`: the lazy-style prim_func's annotations are evaluated objects.
"""

import inspect
from typing import Any, TypeVar

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.kernels.subbyte import STORAGES, unpack
from tests.conftest import has_nvcc, meta
from tltyped.callpath import fastpath, tensors

pytestmark = pytest.mark.usefixtures("sm90")

M = TypeVar("M")
N = TypeVar("N")
K = TypeVar("K", bound=tl.dyn[int])



@tl.jit
def unpack_static(A: tl.Tensor[tl.float4_e2m1fn, M, N], B: tl.Tensor[tl.float32, M, N]):
    """Every dim const: the C cached call serves it (a packed tensor's key is its storage's)."""


@tl.jit
def eager(A):
    M, K = T.const("M K")
    A: T.Tensor((M, K), T.float4_e2m1fn)
    with T.Kernel(1, threads=32):
        T.evaluate(A[0, 0])


@tl.jit
def eager_strided(A):
    M, K, S = T.const("M K S")
    A: T.StridedTensor((M, K), (S, 1), T.float4_e2m1fn)
    with T.Kernel(1, threads=32):
        T.evaluate(A[0, 0])


@tl.jit
def lazy():
    @T.prim_func
    def main(A: T.Tensor((256, 512), T.float4_e2m1fn)):
        with T.Kernel(1, threads=32):
            T.evaluate(A[0, 0])

    return main


@tl.jit
def to_fp4(A: tl.Tensor[tl.float32, M, K]):
    """Returns A as fp4: a sub-byte output, allocated as its packed storage."""
    m, k = A.shape
    Out = T.empty((m, k), T.float4_e2m1fn)
    with T.Kernel(m, threads=32) as by:
        for j in T.serial(k):
            Out[by, j] = T.cast(A[by, j], T.float4_e2m1fn)
    return Out


def bind(fn: Any, *args: Any) -> Any:
    return fn._dispatcher.binder.bind(list(args), allow_meta=True)


# -- binding -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("storage", STORAGES, ids=str)
def test_the_signature_form_binds_the_logical_shape_from_the_packed_storage(storage: torch.dtype) -> None:
    bound = bind(unpack, meta(16, 32, dtype=storage), meta(16, 64, dtype=torch.float32), 64)
    assert bound.dims == {"M": 16, "K": 64}
    assert bound.dtypes["A"] is tl.float4_e2m1fn and bound.strides["A"] is None


@pytest.mark.parametrize("storage", STORAGES, ids=str)
def test_in_body_const_dims_bind_the_logical_shape(storage: torch.dtype) -> None:
    bound = bind(eager, meta(256, 256, dtype=storage))
    assert bound.dims == {"M": 256, "K": 512}


def test_a_strided_tensor_binds_logical_strides() -> None:
    """TileLang's test_tilelang_issue_2292: every other row of a (512, 256) int8 storage is (256, 512) fp4 with
    strides (1024, 1)."""
    packed = torch.empty((512, 256), dtype=torch.int8, device="meta")[::2, :]
    bound = bind(eager_strided, packed)
    assert bound.dims == {"M": 256, "K": 512, "S": 1024}
    tir = eager_strided.lower(packed).prim_func
    buffer = next(iter(tir.buffer_map.values()))
    assert [int(s) for s in buffer.shape] == [256, 512] and [int(s) for s in buffer.strides] == [1024, 1]
    assert str(buffer.dtype) == "float4_e2m1fn"


def test_a_non_contiguous_packed_tensor_keeps_logical_strides() -> None:
    packed = torch.empty((32, 64), dtype=torch.uint8, device="meta")[:, :16]
    bound = bind(unpack, packed, meta(32, 32, dtype=torch.float32), 64)
    assert bound.dims == {"M": 32, "K": 32} and bound.strides["A"] == (128, 1)


@pytest.mark.parametrize("storage", STORAGES, ids=str)
def test_a_lazy_prim_func_takes_the_packed_storage(storage: torch.dtype) -> None:
    kernel = lazy()
    assert str(kernel.signature.params[0].tensor) == "Tensor[float4_e2m1fn, 256, 512]"
    kernel.lower(meta(256, 256, dtype=storage))  # the binder accepts it: the logical (256, 512)
    with pytest.raises(ValueError, match=r"argument 'A': dim 1 must be 512, got 1024"):
        kernel.lower(meta(256, 512, dtype=storage))  # the logical size given as the storage's


def test_a_wrong_storage_dtype_is_refused_naming_the_param_and_the_packing() -> None:
    with pytest.raises(TypeError, match=r"unpack: argument 'A' expects dtype float4_e2m1fn \(held packed two values a "
                       r"byte: a torch.int8 or torch.uint8.* tensor with the innermost dim halved\), got torch.float16"):
        bind(unpack, meta(16, 32, dtype=torch.float16), meta(16, 64, dtype=torch.float32), 64)
    with pytest.raises(TypeError, match=r"expects dtype float4_e2m1fn .*, got torch.float32"):
        bind(eager, meta(4, 4, dtype=torch.float32))


def test_a_packed_tensor_whose_innermost_stride_is_not_one_is_refused() -> None:
    transposed = torch.empty((32, 16), dtype=torch.uint8, device="meta").t()
    with pytest.raises(ValueError, match=r"argument 'A' holds float4_e2m1fn packed two values a byte along its "
                       r"innermost dim, whose stride must be 1 byte, got 16 .*pass A.contiguous\(\)"):
        bind(unpack, transposed, meta(16, 64, dtype=torch.float32), 64)


def test_a_logical_size_that_disagrees_with_another_tensor_names_the_logical_values() -> None:
    with pytest.raises(ValueError, match=r"dim K: 64 \(from A, axis 1\) vs 32 \(from B, axis 1\)"):
        bind(unpack, meta(16, 32, dtype=torch.uint8), meta(16, 32, dtype=torch.float32), 64)


def test_sub_byte_dtypes_are_argument_types_and_the_others_still_are_not() -> None:
    from tltyped.types.dtypes import argument_dtype, to_torch

    assert argument_dtype(T.float4_e2m1fn) is tl.float4_e2m1fn and argument_dtype("int4") is tl.int4
    assert to_torch(tl.int4) is torch.int8
    assert to_torch(tl.float4_e2m1fn) is getattr(torch, "float4_e2m1fn_x2", torch.int8)  # as TileLang allocates it
    with pytest.raises(TypeError, match="is a type of the kernel's computation"):
        argument_dtype("float6_e2m3fn")


# -- the fast paths ------------------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> str:
        self.calls.append(args)
        return "launched"


def slow(*args: Any) -> str:
    return "slow"


def test_the_plans_read_a_packed_innermost_dyn_size_twice_as_large() -> None:
    """The generated path doubles the stored size; the C cached call's table says so ((K's index, 2))."""
    assert unpack._dispatcher.plan.in_c and unpack_static._dispatcher.plan.in_c
    assert unpack._dispatcher.plan.c_table() == ((-1, (0, 2)), (-1, 0), 1)  # block: an int, typed
    assert "(_tl_t0_1 * 2)" in unpack.fast_path_source  # K, launched as the logical size


C = tensors.load_helpers()


@pytest.mark.parametrize("in_c", [False, True], ids=["generated", "C"])
@pytest.mark.parametrize("storage", STORAGES, ids=str)
def test_the_fast_paths_serve_a_second_call_with_the_slow_paths_key_and_logical_dims(storage, in_c) -> None:
    if in_c and C is None:
        pytest.skip("the C tensor facts are not built here")
    plan, source = unpack._dispatcher.plan, unpack.fast_path_source
    launches: dict[Any, Any] = {}
    path = fastpath.build_fast_path(plan, source, launches, slow, in_c=in_c)
    assert type(path.call) is C.CachedCall if in_c else inspect.isfunction(path.call)
    a, b = torch.zeros(16, 32, dtype=storage), torch.zeros(16, 64)
    recorder = launches[path.key(a, b, 64)] = Recorder()
    assert unpack._dispatcher.key(a, b, 64) == path.key(a, b, 64)  # the key the slow path stores its launch under
    assert path.call(a, b) == "launched"
    ((pa, pb, k, stream, device, ta, tb),) = recorder.calls
    assert (pa, pb, ta, tb) == (a.data_ptr(), b.data_ptr(), a, b) and (stream, device) == (0, -1)
    slow_dims = unpack._dispatcher.launch_args(bind(unpack, a.to("meta"), b.to("meta"), 64))[2:]
    assert [k] == slow_dims == [64]  # the slow path's launch: the logical K
    assert path.call(a, torch.zeros(16, 32)) == "slow"  # B's K is the storage's, not the logical: not served
    assert path.call(a[:, :8], torch.zeros(16, 16)) == "slow"  # another layout: another key
    assert path.call(a[:8], b[:8]) == "slow"  # M is const: another key
    if in_c:
        assert path.call.hits == 1


@pytest.mark.skipif(C is None, reason="the C tensor facts are not built here")
@pytest.mark.parametrize("storage", STORAGES, ids=str)
def test_the_c_path_serves_a_packed_tensor_with_the_generated_paths_key(storage) -> None:
    plan, source = unpack_static._dispatcher.plan, unpack_static.fast_path_source
    launches: dict[Any, Any] = {}
    c_path = fastpath.build_fast_path(plan, source, launches, slow)
    python_path = fastpath.build_fast_path(plan, source, launches, slow, in_c=False)
    assert type(c_path.call) is C.CachedCall
    a, b = torch.zeros(8, 16, dtype=storage), torch.zeros(8, 32)
    recorder = launches[python_path.key(a, b)] = Recorder()
    assert unpack_static._dispatcher.key(a, b) == python_path.key(a, b)
    assert c_path.call(a, b) == "launched" and c_path.call.hits == 1
    assert python_path.call(a, b) == "launched"
    assert recorder.calls[0] == recorder.calls[1]
    assert C.facts(bytes([2, 2]), a, b) == tensors.python_facts(bytes([2, 2]), a, b)  # the storage's DLPack type


# -- outputs and the compiled kernel ----------------------------------------------------------------------


def test_a_sub_byte_output_is_allocated_as_its_packed_storage() -> None:
    """As TileLang's test_empty_subbyte_output_uses_torch_storage_dtype: the torch storage dtype (float4_e2m1fn_x2
    where torch has it), the final dim halved; an odd one rounded up, so that its last value has a byte."""
    storage = getattr(torch, "float4_e2m1fn_x2", torch.int8)
    out = to_fp4(meta(3, 16, dtype=torch.float32))
    assert out.dtype == storage and out.shape == (3, 8) and out.device.type == "meta"
    assert to_fp4(meta(3, 7, dtype=torch.float32)).shape == (3, 4)


@pytest.fixture(scope="module")
def compiled_unpack() -> Any:
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    return unpack.compile(meta(8, 32, dtype=torch.uint8), meta(8, 64, dtype=torch.float32))


def test_an_fp4_kernel_builds_for_sm90_with_the_packed_pointer(compiled_unpack) -> None:
    source = unpack.lower(meta(8, 32, dtype=torch.uint8), meta(8, 64, dtype=torch.float32)).cuda_source
    assert "const fp4_e2_t* __restrict__ A" in source
    assert compiled_unpack.compiled or compiled_unpack.folder.exists()


def test_an_fp4_output_kernel_allocates_packed_storage(sm90) -> None:
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    compiled = to_fp4.compile(meta(4, 10, dtype=torch.float32))
    (out,) = compiled.empty_outputs(0, 10)  # A's pointer and K: on the CPU
    assert out.dtype == getattr(torch, "float4_e2m1fn_x2", torch.int8) and out.shape == (4, 5)


@tl.jit
def by_const(A, dtype: T.dtype = T.float32):
    K = T.dynamic("K")
    A: T.Tensor[[K], dtype]
    with T.Kernel(1, threads=32):
        T.evaluate(A[0])


def test_a_dtype_computed_from_consts_may_be_packed_and_its_calls_stay_off_the_fast_paths() -> None:
    """The plan reads A's K as stored (its dtype unknown until a call): a call making A fp4 is bound logically,
    and its launch is kept under a key the fast paths never make (dispatcher.py's _SLOW_PATH_ONLY)."""
    bound = bind(by_const, meta(8, dtype=torch.uint8), T.float4_e2m1fn)
    assert bound.dims == {"K": 16} and bound.dtypes["A"] is tl.float4_e2m1fn
    plan = by_const._dispatcher.plan
    assert not plan.tensors[0].packed and plan.in_c
    assert not plan.serves(frozenset({"A"})) and plan.serves(frozenset())
    assert bind(by_const, meta(8, dtype=torch.float32), T.float32).dims == {"K": 8}


def test_dims_given_by_name_describe_the_logical_tensor() -> None:
    lowered = unpack.lower(M=8, K=64)
    buffer = lowered.prim_func.buffer_map[lowered.prim_func.params[0]]
    assert str(buffer.dtype) == "float4_e2m1fn" and int(buffer.shape[0]) == 8


@tl.jit
def strided_dyn(x):
    """TileLang's test_tilelang_language_subtype.py `strided_kernel`: a dyn row count and a dyn row stride."""
    m = T.dynamic("m")
    s = T.dynamic("s")
    x: T.StridedTensor[[m, 16], [s, 1], T.float4_e2m1fn]
    with T.Kernel(1, threads=32):
        T.evaluate(x[0, 0])


@pytest.mark.parametrize("rows", [1, 2], ids=["contiguous", "every other row"])
def test_a_dyn_stride_of_a_packed_tensor_is_launched_logical_as_the_slow_path_binds_it(rows: int) -> None:
    plan, source = strided_dyn._dispatcher.plan, strided_dyn.fast_path_source
    assert not plan.in_c  # strided: the generated path
    launches: dict[Any, Any] = {}
    path = fastpath.build_fast_path(plan, source, launches, slow)
    x = torch.zeros(8, 8, dtype=torch.uint8)[::rows]  # (4 or 8, 16) fp4, row stride 16 or 32 values
    recorder = launches[path.key(x)] = Recorder()
    assert path.call(x) == "launched"
    ((_, *dims, _stream, _device, _x),) = recorder.calls
    bound = bind(strided_dyn, x.to("meta") if rows == 1 else torch.zeros(8, 8, dtype=torch.uint8, device="meta")[::2])
    assert dims == strided_dyn._dispatcher.launch_args(bound)[1:] == [8 // rows, 16 * rows]
    wrong = torch.zeros(8, 16, dtype=torch.uint8)[:, ::2]  # innermost stride 2 bytes: refused by the binder
    assert path.call(wrong) == "slow"


@pytest.mark.skipif(C is None, reason="the C tensor facts are not built here")
@pytest.mark.parametrize("axis", [(0, 0), (-1, 2), (0, 99), (64, 2), ("k", 2)], ids=str)
def test_the_c_table_refuses_a_bad_scaled_axis(axis: Any) -> None:
    with pytest.raises(ValueError, match=r"params: a dim code is -1, a dyn dim's index, or \(its index, a scale\)"):
        C.CachedCall({}, slow, lambda v: v, ((axis,),), ("A",), (), 16)
