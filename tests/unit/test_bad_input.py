"""Point 8: bad input is rejected with an error naming the parameter, the expectation and what came.

Three routes reach the same checks:
- a call (fast path -> slow path -> binder), here with CPU tensors: the device is
  checked before dtype, rank and dims, so on a CPU machine a call shows the
  device error, the argument-list errors and the scalar errors only;
- `fn.lower(...)` / `fn.compile(...)` on meta tensors: every tensor check;
- the slow path's binder itself (`fn._dispatcher.binder.bind(..., allow_meta=True)`).
Failures while the body is elaborated become `KernelBuildError`s naming the
user's file and line.

Not testable without a GPU: the binder's misaligned-pointer error. A meta tensor
has no address (data_ptr() is 0, and the binder skips the check for meta), and
a misaligned CPU view is rejected for its device first. The fast path's routing
of a misaligned pointer to the slow path is tested in test_cache_key.py.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from pathlib import Path

import pytest
import torch

from tests.conftest import meta
import tltyped as tl
import tltyped.language as T
from tests.kernels import broken, consts, helpers, in_body, shapes
from tests.unit.hostile import EqualsRaisingBool, RaisingClass, RaisingEq, RaisingHash, RaisingRepr, Recorded, StoragelessTensor
from tltyped import KernelBuildError

pytestmark = pytest.mark.usefixtures("sm90")


def cpu(*shape: int, dtype: torch.dtype = torch.float16) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype)


def marker_line(module: object, kernel: str) -> int:
    """The line of `module` marked `# FAILS HERE: <kernel>`."""
    text = Path(module.__file__).read_text().splitlines()  # type: ignore[attr-defined]
    (line,) = [i for i, t in enumerate(text, 1) if t.rstrip().endswith(f"# FAILS HERE: {kernel}") or
               f"# FAILS HERE: {kernel} " in t]
    return line


# -- at call time (CPU tensors) ----------------------------------------------------------


def test_call_with_cpu_tensor(seed_gemm) -> None:
    with pytest.raises(ValueError, match=r"^gemm: argument 'A' is on cpu; kernels take CUDA or meta tensors$"):
        seed_gemm.gemm(cpu(256, 512), cpu(512, 128))


def test_call_errors_carry_no_context_from_the_fast_path(seed_gemm) -> None:
    """A first call misses the fast path's table; the error the user sees is raised outside that miss's handler."""
    from examples.gemm_in_body import gemm as routed  # C's dtype comes from a const: the call is routed first

    a, b, c = cpu(256, 512), cpu(512, 128), cpu(256, 128, dtype=torch.float32)
    for call in (lambda: seed_gemm.gemm(a, b), lambda: seed_gemm.gemm("A", b), lambda: routed(a, b, c)):
        with pytest.raises((TypeError, ValueError)) as info:
            call()
        assert info.value.__context__ is None and info.value.__cause__ is None, repr(info.value.__context__)


def test_call_with_meta_tensors_gives_meta_outputs(seed_gemm) -> None:
    """As a torch op: shapes and dtypes propagate, nothing runs; the arguments are checked as in any call."""
    c = seed_gemm.gemm(meta(256, 512), meta(512, 128))
    assert (c.device.type, tuple(c.shape), c.dtype) == ("meta", (256, 128), torch.float32)
    c = seed_gemm.gemm(meta(96, 320), meta(320, 64))
    assert tuple(c.shape) == (96, 64)
    with pytest.raises(ValueError, match=r"gemm: dim K: 512 \(from A, axis 1\) vs 256 \(from B, axis 0\)"):
        seed_gemm.gemm(meta(256, 512), meta(256, 128))
    with pytest.raises(ValueError, match=r"argument 'B' is on cpu; kernels take CUDA or meta tensors"):
        seed_gemm.gemm(meta(256, 512), cpu(512, 128))


def test_call_with_a_non_tensor(seed_gemm) -> None:
    with pytest.raises(TypeError, match=r"gemm: argument 'A' expects a torch tensor Tensor\[float16, M, K\], got str"):
        seed_gemm.gemm("A", cpu(512, 128))


def test_call_with_a_tensor_subclass_without_storage(seed_gemm) -> None:
    """A wrapper subclass says it is a CUDA tensor but has no data pointer: never launched, named instead."""
    with pytest.raises(ValueError, match=r"gemm: argument 'A' is a StoragelessTensor with no memory of its own"):
        seed_gemm.gemm(StoragelessTensor(256, 512), StoragelessTensor(512, 128))


def test_call_missing_an_argument(seed_gemm) -> None:
    with pytest.raises(TypeError, match=r"^gemm\(\) missing 1 required positional argument: 'B'"):
        seed_gemm.gemm(cpu(256, 512))


def test_call_with_too_many_arguments(seed_gemm) -> None:
    with pytest.raises(TypeError, match=r"^gemm\(\) takes from 2 to 6 positional arguments but 7 were given"):
        seed_gemm.gemm(cpu(256, 512), cpu(512, 128), 128, 128, 32, 3, 99)


def test_call_with_an_unknown_keyword(seed_gemm) -> None:
    with pytest.raises(TypeError, match=r"^gemm\(\) got an unexpected keyword argument 'block_m'"):
        seed_gemm.gemm(cpu(256, 512), cpu(512, 128), block_m=64)


def test_call_with_an_unhashable_const(seed_gemm) -> None:
    with pytest.raises(TypeError) as info:
        seed_gemm.gemm(cpu(256, 512), cpu(512, 128), block_M=[64])
    message = str(info.value)
    assert "const parameter 'block_M' must be hashable" in message
    assert "got list [64]" in message


def test_call_with_a_bad_dyn_float() -> None:
    a = cpu(128, 100, dtype=torch.float32)
    with pytest.raises(TypeError, match=r"scale_rows: dyn parameter 'alpha' expects a float, got str '2'"):
        in_body.scale_rows(a, a, "2")


@pytest.mark.parametrize(
    ("value", "error", "fragment"),
    [(1.5, TypeError, "expects an int, got float 1.5"), (True, TypeError, "expects an int, got bool True"),
     (2**31, ValueError, "= int 2147483648 does not fit in int32"),
     (10**5000, ValueError, "= int (its __repr__ raised ValueError) does not fit in int32")],  # too long for str()
    ids=["float", "bool", "2**31", "10**5000"],
)
def test_bad_dyn_int(value: object, error: type[Exception], fragment: str) -> None:
    binder = shapes.with_scalars._dispatcher.binder
    with pytest.raises(error, match=re.escape(f"dyn parameter 'n' {fragment}")):
        binder.bind((meta(4, dtype=torch.float32), value, 0), allow_meta=True)


@pytest.mark.parametrize(("value", "shown"), [(-1, "int -1"), (2**64, f"int {2**64}"), (1.0, "float 1.0"), ("0x10", "str '0x10'"),
                                             (True, "bool True")])
def test_bad_ptr(value: object, shown: str) -> None:
    binder = shapes.with_scalars._dispatcher.binder
    with pytest.raises(TypeError, match=re.escape(f"ptr parameter 'p' expects a device address (an int from 0 to 2**64 - 1) "
                                                  f"or a CUDA tensor, got {shown}")):
        binder.bind((meta(4, dtype=torch.float32), 1, value), allow_meta=True)


@pytest.mark.parametrize(
    ("value", "error", "fragment"),
    [(True, TypeError, r"expects a float, got bool True"), (10**400, ValueError, r"= int 1000\d*\.\.\.0+ does not fit in float32"),
     (1e39, ValueError, r"= float 1e\+39 does not fit in float32"),
     (RaisingClass(), TypeError, r"expects a float, got tests\.unit\.hostile\.RaisingClass <.*>")],  # read by its type
    ids=["bool", "10**400", "1e39", "__class__ raises"],
)
def test_bad_dyn_float(value: object, error: type[Exception], fragment: str) -> None:
    binder = in_body.scale_rows._dispatcher.binder
    a = meta(4, 4, dtype=torch.float32)
    with pytest.raises(error, match=f"dyn parameter 'alpha' {fragment}$"):
        binder.bind((a, a, value, 64), allow_meta=True)
    for fine in (2, -1.5, float("inf"), float("nan")):  # an int is a float; inf and nan are floats
        binder.bind((a, a, fine, 64), allow_meta=True)


def test_a_dyn_dim_beyond_int32(seed_gemm) -> None:
    """The launcher passes dyn dims as int32: a larger one is refused by the binder, naming where it came from."""
    binder = seed_gemm.gemm._dispatcher.binder
    with pytest.raises(ValueError, match=re.escape("dim K = 2147483648 (from A, axis 1) is too large for a dyn dim")):
        binder.bind((meta(16, 2**31), meta(2**31, 16), 128, 128, 32, 3), allow_meta=True)
    binder.bind((meta(16, 2**31 - 1), meta(2**31 - 1, 16), 128, 128, 32, 3), allow_meta=True)


def test_dyn_scalars_of_other_tilelang_dtypes() -> None:
    binder = in_body.typed_scalars._dispatcher.binder
    bound = binder.bind((meta(16, dtype=torch.float32), 1.5, 2.5, 2**40, True), allow_meta=True)
    assert bound.values["double_value"] == 2.5


def test_kernel_without_tensors_fails_clearly() -> None:
    from tests.kernels import dispatch

    with pytest.raises(Exception) as info:
        dispatch.scalar_only(1)
    assert not isinstance(info.value, AssertionError), repr(info.value)
    assert "scalar_only" in str(info.value)


# -- lower / compile on meta tensors -----------------------------------------------------


def test_wrong_dtype(seed_gemm) -> None:
    with pytest.raises(TypeError, match=r"^gemm: argument 'A' expects dtype float16, got float32$"):
        seed_gemm.gemm.lower(meta(256, 512, dtype=torch.float32), meta(512, 128))


def test_wrong_dtype_in_compile(seed_gemm) -> None:
    with pytest.raises(TypeError, match=r"argument 'B' expects dtype float16, got bfloat16"):
        seed_gemm.gemm.compile(meta(256, 512), meta(512, 128, dtype=torch.bfloat16))


def test_unsupported_dtype(seed_gemm) -> None:
    with pytest.raises(TypeError, match=r"argument 'A' has unsupported dtype torch.complex64"):
        seed_gemm.gemm.lower(meta(256, 512, dtype=torch.complex64), meta(512, 128))


def test_a_negated_view(seed_gemm) -> None:
    """`x.conj().imag` (or `torch._neg_view`) shares memory holding its elements' negatives: never launched on."""
    with pytest.raises(ValueError, match=r"^gemm: argument 'B' is a negated view \(torch's lazy negative bit, .*"
                                         r"pass B.resolve_neg\(\).resolve_conj\(\)$"):
        seed_gemm.gemm.lower(meta(256, 512), torch._neg_view(meta(512, 128)))


@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr", "jagged"])
def test_a_tensor_of_another_layout_is_refused_naming_it(seed_gemm, layout: str) -> None:
    """A sparse or nested tensor has no elements at strides in memory: it is never lowered as a dense one (a sparse
    COO tensor was), nor read for strides or sizes it does not have (a CSR tensor's `is_contiguous()` and a jagged
    one's sizes raised RuntimeError and AttributeError), by a call or by `lower`."""
    dense = torch.zeros(256, 512, dtype=torch.float16)
    made = {"sparse_coo": lambda: dense.to_sparse(), "sparse_csr": lambda: dense.to_sparse_csr(),
            "jagged": lambda: torch.nested.nested_tensor([dense[:3], dense[:5]], layout=torch.jagged)}[layout]
    with pytest.warns(UserWarning) if layout == "sparse_csr" else contextlib.nullcontext():  # torch's beta warning
        a = made().to("meta")
    message = (rf"^gemm: argument 'A' is a {layout} tensor; kernels take dense \(strided\) tensors, whose elements lie "
               rf"in memory at their strides: pass a dense copy \(A\.to_dense\(\) for a sparse one\)$")
    with pytest.raises(tl.ArgumentValueError, match=message):
        seed_gemm.gemm(a, meta(512, 128))
    with pytest.raises(tl.ArgumentValueError, match=message):
        seed_gemm.gemm.lower(a, meta(512, 128))


def test_wrong_rank(seed_gemm) -> None:
    with pytest.raises(ValueError) as info:
        seed_gemm.gemm.lower(meta(256, 512, 1), meta(512, 128))
    assert str(info.value) == (
        "gemm: argument 'A' expects rank 2 (Tensor[float16, M, K]), got rank 3 with shape (256, 512, 1)"
    )


def test_shared_dim_that_disagrees(seed_gemm) -> None:
    with pytest.raises(ValueError, match=re.escape("gemm: dim K: 512 (from A, axis 1) vs 256 (from B, axis 0)")):
        seed_gemm.gemm.lower(meta(256, 512), meta(256, 128))


def test_shared_const_dim_that_disagrees_in_body(seed_gemm_in_body) -> None:
    with pytest.raises(ValueError, match=re.escape("dim N: 128 (from B, axis 1) vs 64 (from C, axis 1)")):
        seed_gemm_in_body.gemm.lower(meta(256, 512), meta(512, 128), meta(256, 64, dtype=torch.float32))


def test_dtype_from_a_const_parameter(seed_gemm_in_body) -> None:
    """The in-body seed's C: T.Tensor[[M, N], out_dtype]: the expected dtype follows the const."""
    a, b = meta(256, 512), meta(512, 128)
    with pytest.raises(TypeError, match=r"argument 'C' expects dtype float32, got float16"):
        seed_gemm_in_body.gemm.lower(a, b, meta(256, 128))
    with pytest.raises(TypeError, match=r"argument 'C' expects dtype float16, got float32"):
        seed_gemm_in_body.gemm.lower(a, b, meta(256, 128, dtype=torch.float32), out_dtype="float16")


def test_dtype_variable_binds_once() -> None:
    with pytest.raises(TypeError, match=r"same_dtype: argument 'B' expects dtype float16, got float32"):
        shapes.same_dtype.lower(meta(8), meta(8, dtype=torch.float32))


def test_a_dtype_variable_takes_only_its_constraints_or_its_bound_s_dtypes() -> None:
    """What mypy, pyright and the plugin refuse statically is refused at the call too, naming the variable."""
    binder = shapes.half_or_wide._dispatcher.binder
    for half, wide in ((torch.float16, torch.float32), (torch.bfloat16, torch.float64)):
        binder.bind((meta(8, dtype=half), meta(8, dtype=half), meta(8, dtype=wide)), allow_meta=True)
    with pytest.raises(TypeError, match=re.escape("half_or_wide: argument 'A' expects dtype HALF (float16 or bfloat16), "
                                                  "got float32")):
        shapes.half_or_wide.lower(meta(8, dtype=torch.float32), meta(8, dtype=torch.float32), meta(8, dtype=torch.float32))
    with pytest.raises(TypeError, match=re.escape("argument 'C' expects dtype WIDE (float32 or float64), got float16")):
        shapes.half_or_wide.lower(meta(8), meta(8), meta(8))


def test_literal_dim() -> None:
    with pytest.raises(ValueError, match=r"four_columns: argument 'A': dim 1 must be 4, got 5"):
        shapes.four_columns.lower(meta(3, 5, dtype=torch.float32))


@pytest.mark.parametrize(
    ("b_shape", "message"),
    [((16, 2), "argument 'B': dim 0 is 2 * N + 1 = 17 (N = 8 from A, axis 0), got 16"),
     ((17, 3), "argument 'B': dim 1 is ceildiv(N, 4) = 2 (N = 8 from A, axis 0), got 3")],
)
def test_derived_dim(b_shape: tuple[int, int], message: str) -> None:
    binder = shapes.derived._dispatcher.binder
    binder.bind((meta(8, dtype=torch.float32), meta(17, 2, dtype=torch.float32)), allow_meta=True)  # consistent
    with pytest.raises(ValueError, match=re.escape(message)):
        binder.bind((meta(8, dtype=torch.float32), meta(*b_shape, dtype=torch.float32)), allow_meta=True)


@pytest.mark.parametrize(("block", "message"), [(0, "cannot evaluate `N // block`: InternalError: .*Divide by zero"),
                                               (-1, "unsupported syntax in dim `-1`")])
def test_an_annotation_a_const_makes_unreadable_notes_the_const(block: int, message: str) -> None:
    """Read at the call for the call's consts, the annotation names its line, and a note the values it was read
    for (the message said `Divide by zero` of `N // block` with nothing of `block=0`)."""
    assert shapes.blocks_of(meta(16, dtype=torch.float32), meta(4, dtype=torch.float32), block=4) is None
    with pytest.raises(tl.DefinitionError, match=f"^{re.escape(shapes.__file__)}:{marker_line(shapes, 'blocks_of')}: "
                                                 f"{message}") as info:
        shapes.blocks_of(meta(16, dtype=torch.float32), meta(4, dtype=torch.float32), block=block)
    assert info.value.__notes__ == [f"blocks_of's annotations were read for block=int {block}"]


def test_shape_assert() -> None:
    binder = shapes.asserted._dispatcher.binder
    binder.bind((meta(8, dtype=torch.float32), meta(17, dtype=torch.float32)), allow_meta=True)
    with pytest.raises(ValueError, match=re.escape("shape check `B.shape[0] == 2 * A.shape[0] + 1` fails")):
        binder.bind((meta(8, dtype=torch.float32), meta(16, dtype=torch.float32)), allow_meta=True)


def test_cpu_tensor_in_lower(seed_gemm) -> None:
    with pytest.raises(ValueError, match=r"argument 'B' is on cpu; kernels take CUDA or meta tensors"):
        seed_gemm.gemm.lower(meta(256, 512), cpu(512, 128))


def test_missing_argument_in_lower(seed_gemm) -> None:
    """K is A's (and, being dyn, could be left open); N is named by nothing: the message asks for N alone."""
    with pytest.raises(TypeError, match=r"^gemm: missing argument 'B': pass a tensor, T.Tensor\(shape, dtype\), or its dims by name \(N=...\)$"):
        seed_gemm.gemm.lower(meta(256, 512))
    lowered = seed_gemm.gemm.lower(M=256, N=128)  # K dyn and open: any size builds the same kernel
    assert "__global__" in lowered.cuda_source


@pytest.mark.parametrize(
    ("dims", "error", "message"),
    [
        ({"M": 512}, ValueError, "gemm: dim M: 512 given by name vs 256 (from A, axis 0)"),
        ({"N": 128.0}, TypeError, "gemm: dim N given by name must be an int size, got float 128.0"),
        ({"N": "128"}, TypeError, "gemm: dim N given by name must be an int size, got str '128'"),
        ({"N": True}, TypeError, "gemm: dim N given by name must be an int size, got bool True"),
        ({"N": -5}, ValueError, "gemm: dim N given by name must not be negative, got -5"),
        # B, described by K (A's) and N: torch's overflow error, with its C++ stack, came out of torch.empty
        ({"N": 2**62}, ValueError, "gemm: argument 'B' would have shape (512, 4611686018427387904), which no tensor "
                                   "can have: its size in bytes does not fit in an int64"),
        ({"N": 128, "K": 2**40}, ValueError, "gemm: dim K = 1099511627776 (given by name) is too large for a dyn dim "
                                             "(int32, at most 2147483647); declare it const to specialise on it"),
    ],
)
def test_a_dim_given_by_name_in_lower_is_an_int_agreeing_with_the_tensors(seed_gemm, dims, error, message) -> None:
    """Never ignored (the tensor's size built instead), truncated (2.5 -> 2) or left to torch (a negative size)."""
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        seed_gemm.gemm.lower(meta(256, 512), **dims)
    assert "__global__" in seed_gemm.gemm.lower(meta(256, 512), M=256, N=128).cuda_source


def test_a_dim_given_by_name_agrees_with_a_described_tensor(seed_gemm) -> None:
    """`T.Tensor(shape, dtype)` is checked as a tensor is, never built at its own size past the name."""
    with pytest.raises(ValueError, match=re.escape("gemm: dim M: 512 given by name vs 256 (from A, axis 0)")):
        seed_gemm.gemm.lower(T.Tensor((256, 512), T.float16), M=512, N=128)


@pytest.mark.parametrize(
    ("shape", "error", "message"),
    [
        ((10.5, 512), TypeError, "gemm: argument 'A': T.Tensor's dim 0 must be an int size, got float 10.5"),
        ((-1, 512), ValueError, "gemm: argument 'A': T.Tensor's dim 0 must not be negative, got -1"),
        ((2**70, 512), ValueError, "gemm: argument 'A' would have shape (1180591620717411303424, 512), which no tensor "
                                   "can have: its size in bytes does not fit in an int64"),
        ((T.dynamic("m"), 512), TypeError, "gemm: argument 'A': T.Tensor's dim 0 is a variable, but the kernel "
                                           "specialises on its size there (M): give the size"),
        ((256, 512, 3), ValueError, "gemm: argument 'A' expects rank 2 (Tensor[float16, M, K]), got rank 3 with shape "
                                    "(256, 512, 3)"),
    ],
)
def test_a_described_tensors_sizes_are_checked_as_sizes_given_by_name(seed_gemm, shape, error, message) -> None:
    """Never truncated (10.5 -> 10), left to torch (a negative size) or to int() of a TIR variable."""
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        seed_gemm.gemm.lower(T.Tensor(shape, T.float16), N=128)


def test_a_described_tensor_takes_a_dynamic_variable_where_the_kernels_size_is_dyn(seed_gemm) -> None:
    """TileLang's `T.Tensor((M, T.dynamic("k")), dtype)`: K is dyn, so any size builds the kernel; where another
    tensor or a name gives K, the variable stands for that size (never clashing with it)."""
    from examples.interleave import interleave

    k = T.dynamic("k")
    source = seed_gemm.gemm.lower(meta(256, 512), meta(512, 128)).cuda_source
    assert seed_gemm.gemm.lower(T.Tensor((256, k), T.float16), T.Tensor((k, 128), T.float16)).cuda_source == source
    assert seed_gemm.gemm.lower(T.Tensor((256, k), T.float16), T.Tensor((512, 128), T.float16)).cuda_source == source
    assert seed_gemm.gemm.lower(T.Tensor((256, k), T.float16), T.Tensor((k, 128), T.float16), K=512).cuda_source == source
    n, f32 = T.dynamic("n"), T.float32  # Out is N * 2 + 1 of the dyn N: a variable there too
    assert interleave.lower(T.Tensor((n,), f32), T.Tensor((n,), f32), T.Tensor((T.dynamic("l"),), f32), 1.0).cuda_source \
        == interleave.lower(meta(10, dtype=torch.float32), meta(10, dtype=torch.float32), meta(21, dtype=torch.float32),
                            1.0).cuda_source


def test_a_dim_given_by_name_agrees_with_the_size_an_affine_dim_solves_for() -> None:
    """`n * 4` of 16 elements is n = 4: `n=5` by name is refused, as for a plain dim, never built for 5 or 4."""
    from tests.kernels import consts

    with pytest.raises(ValueError, match=re.escape("quads: dim n: 5 given by name vs 4 (from A, axis 0 = n * 4)")):
        consts.quads.lower(T.Tensor((16,), T.int32), n=5)
    assert "(20,)" in consts.quads.lower(n=5).tir


def test_a_parameter_named_like_a_dim_is_not_a_dim_given_by_name() -> None:
    """`int=0` names the parameter `int` (a ptr), not the dim `int`: the tensors' disagreement is reported as theirs."""
    from tests.kernels import names

    with pytest.raises(ValueError, match=re.escape("dim int: 2 (from stream, axis 0) vs 256 (from error_buf, axis 0)")):
        names.keywords.lower(stream=meta(2, dtype=torch.float32), error_buf=meta(256, dtype=torch.float32), new=1,
                             this=2.0, int=0, flag=True)


def test_extra_argument_in_compile(seed_gemm) -> None:
    with pytest.raises(TypeError, match=r"gemm: unexpected argument 'block_m' \(neither a parameter nor a dim\)"):
        seed_gemm.gemm.compile(meta(256, 512), meta(512, 128), block_m=64)


def test_unhashable_const_in_lower(seed_gemm) -> None:
    with pytest.raises(TypeError, match=r"const parameter 'num_stages' must be hashable.*got dict"):
        seed_gemm.gemm.lower(meta(256, 512), meta(512, 128), num_stages={"stages": 3})


def test_non_contiguous_tensor_with_dyn_dims_specialises_on_its_strides(seed_gemm) -> None:
    """A view with a dyn dim gets a kernel for its strides (the key carries them), not an error."""
    a = meta(512, 256).t()  # (256, 512) with strides (1, 256): A's K is dyn
    lowered = seed_gemm.gemm.lower(a, meta(512, 128))
    assert "strides=(1, 256)" in lowered.tir
    gemm = seed_gemm.gemm._dispatcher
    assert gemm.key(a, meta(512, 128)) != gemm.key(meta(256, 512), meta(512, 128))


def test_non_contiguous_tensor_with_const_dims_is_accepted(seed_gemm) -> None:
    """The contrast: a tensor whose dims are all const may have any layout (its strides join the key)."""
    from tests.kernels import elementwise

    a = meta(64, 128, dtype=torch.float32).t()
    lowered = elementwise.add_or_sub.lower(a, meta(128, 64, dtype=torch.float32))
    assert "strides=(1, 128)" in lowered.tir


def test_binder_is_the_slow_paths_check(seed_gemm) -> None:
    """What a GPU call would report for a wrong dtype: the slow path's binder, reached on CPU through meta."""
    binder = seed_gemm.gemm._dispatcher.binder
    with pytest.raises(TypeError, match=r"argument 'A' expects dtype float16, got float32"):
        binder.bind((meta(256, 512, dtype=torch.float32), meta(512, 128), 128, 128, 32, 3), allow_meta=True)
    with pytest.raises(ValueError, match=r"argument 'A' is on meta; kernels take CUDA tensors"):
        binder.bind((meta(256, 512), meta(512, 128), 128, 128, 32, 3))
    with pytest.raises(TypeError, match=r"gemm: expected 6 arguments, got 2"):
        binder.bind((meta(256, 512), meta(512, 128)), allow_meta=True)


# -- failures while elaborating the body -------------------------------------------------


@pytest.mark.parametrize(
    ("kernel", "args", "fragments"),
    [
        ("typo_in_copy", (meta(64, dtype=torch.float32),), ["TypeError", "dst_typo"]),
        # TileLang's bare assert: the assert's text says what it checked
        ("copies_a_point_into_a_tile", (meta(64, dtype=torch.float32),),
         ["AssertionError: `assert len(obj.indices) == len(exts)` failed (tilelang/utils/language.py:"]),
        ("returns_an_input", (meta(64, dtype=torch.float32),), ["returns global buffers (T.empty / T.alloc_global) only"]),
        ("returns_one_output_twice", (meta(64, dtype=torch.float32),), ["ElaborationError: the kernel returns `C` twice"]),
        ("returns_a_python_int", (meta(64, dtype=torch.float32),), ["returns global buffers"]),
        ("unreturned_empty", (meta(64, dtype=torch.float32),), ["Not all tensor allocated from `T.empty` are returned"]),
        ("gemm_shape_mismatch", (meta(256, 256),), ["T.gemm K shape check failed"]),
        ("raises_on_a_continued_line", (meta(64, dtype=torch.float32),), ["ZeroDivisionError"]),
    ],
)
def test_elaboration_failure_names_the_users_file_and_line(kernel: str, args: tuple, fragments: list[str]) -> None:
    fn = getattr(broken, kernel)
    with pytest.raises(KernelBuildError) as info:
        fn.lower(*args)
    message = str(info.value)
    assert message.startswith(f"{kernel}: building the kernel failed at ")
    assert f"failed at {broken.__file__}:{marker_line(broken, kernel)}: " in message  # the line, and no other
    for fragment in fragments:
        assert fragment in message
    assert info.value.__cause__ is not None  # TileLang's own exception stays reachable


def test_a_lowering_failure_names_the_pass_of_tilelang_it_happened_in(sm90: str) -> None:
    """TVM's failed checks inside a pass name neither the pass nor a line: the error names the pass."""
    with pytest.raises(tl.LoweringError) as info:
        broken.fails_to_lower.lower(meta(128, dtype=torch.float32))
    assert re.match(r"fails_to_lower: TileLang could not lower the kernel for sm_90a \(in its pass tl\.\w+\): ",
                    str(info.value)), info.value
    assert info.value.__cause__ is not None  # TVM's own error stays reachable


def test_a_failure_in_a_helper_of_another_module_names_both_lines() -> None:
    """The kernel's line that called it, and the helper's line that raised."""
    with pytest.raises(KernelBuildError) as info:
        broken.calls_a_failing_helper.lower(meta(100, dtype=torch.float32))
    assert str(info.value) == (
        f"calls_a_failing_helper: building the kernel failed at "
        f"{broken.__file__}:{marker_line(broken, 'calls_a_failing_helper')} (in blocks_for at "
        f"{helpers.__file__}:{marker_line(helpers, 'blocks_for')}): ValueError: 100 is not a multiple of 64"
    )


@pytest.mark.parametrize(("kernel", "macro", "module"), [("calls_a_failing_macro", "copy_through", helpers),
                                                        ("calls_a_failing_macro_of_its_module", "fill_through", broken)])
def test_a_failure_in_a_macro_names_the_kernel_s_line_then_the_macro_s(kernel: str, macro: str, module: object) -> None:
    """As for a helper: the kernel's line that called the `T.macro`, then the macro's line that failed, named by
    the macro (a macro of another module was named first, with the kernel in parentheses as if it were the
    helper; one of the kernel's module by its own line alone)."""
    with pytest.raises(KernelBuildError) as info:
        getattr(broken, kernel).lower(meta(64, dtype=torch.float32))
    assert str(info.value) == (
        f"{kernel}: building the kernel failed at {broken.__file__}:{marker_line(broken, kernel)} (in {macro} at "
        f"{module.__file__}:{marker_line(module, macro)}): TypeError: copy() got an unexpected keyword argument "  # type: ignore[attr-defined]
        "'dst_typo'"
    )


def test_an_output_of_a_negative_size_is_refused_as_the_launcher_refuses_it() -> None:
    assert broken.output_of_a_negative_size(meta(164, dtype=torch.float32)).shape == (64,)
    with pytest.raises(tl.ArgumentValueError, match=r"^output_of_a_negative_size: output 'C' would have size -36 in "
                                                    r"dim 0 \(its shape is \(L - 100,\)\)"):
        broken.output_of_a_negative_size(meta(64, dtype=torch.float32))


def test_a_body_that_launches_no_kernel() -> None:
    """It lowers (TileLang's own tests lower such functions), to an empty device kernel that would run nothing on
    the GPU: refused before nvcc, saying why."""
    assert "__global__" in broken.launches_nothing.lower(meta(64, dtype=torch.float32)).cuda_source
    with pytest.raises(KernelBuildError, match=r"^launches_nothing: the body launches no kernel: what runs on the "
                                               r"GPU goes in `with T.Kernel\(...\)`$"):
        broken.launches_nothing.compile(meta(64, dtype=torch.float32))
    assert broken.launches_nothing(meta(64, dtype=torch.float32)) is None  # a meta call reads only shapes


def test_an_on_chip_buffer_of_a_dyn_size() -> None:
    with pytest.raises(KernelBuildError, match=r"^shared_of_a_dyn_size: on-chip buffer `S` \(shared.dyn\) is allocated "
                                               r"with shape \(L\), which varies per call"):
        broken.shared_of_a_dyn_size.compile(meta(64, dtype=torch.float32))


def test_more_shared_memory_than_the_target_gives_a_block() -> None:
    """Refused before nvcc, as Triton refuses it: on the GPU the launch would fail, after the build."""
    with pytest.raises(KernelBuildError, match=r"^too_much_shared_memory: too_much_shared_memory_kernel uses 524288 "
                                               r"bytes of shared memory; sm_90a allows a block at most 232448$"):
        broken.too_much_shared_memory.compile(meta(128, dtype=torch.float32))


def test_elaboration_failure_in_compile_too() -> None:
    with pytest.raises(KernelBuildError, match=re.escape(f"{broken.__file__}:{marker_line(broken, 'typo_in_copy')}")):
        broken.typo_in_copy.compile(meta(64, dtype=torch.float32))


def test_a_failed_elaboration_leaves_the_kernel_usable() -> None:
    """The builder's state does not leak: the next kernel elaborates normally."""
    from tests.kernels import elementwise

    with pytest.raises(KernelBuildError):
        broken.typo_in_copy.lower(meta(64, dtype=torch.float32))
    a = meta(128, 64, dtype=torch.float32)
    assert "@T.prim_func" in elementwise.add_or_sub.lower(a, a).tir


# -- consts against their annotations, before the body runs --------------------------------


def bind_annotated(**consts_: object) -> object:
    """Bind a call of `consts.annotated` (every kind of const annotation) with these consts."""
    call = inspect.signature(consts.annotated.__wrapped__).bind(meta(4, dtype=torch.float32), **consts_)
    call.apply_defaults()
    return consts.annotated._dispatcher.binder.bind(tuple(call.arguments.values()), allow_meta=True)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("count", None, "expects int, got NoneType None"),
        ("count", 1.0, "expects int, got float 1.0"),
        ("count", True, "expects int, got bool True"),
        ("count", "1", "expects int, got str '1'"),
        ("scale", True, "expects float, got bool True"),
        ("scale", "1.0", "expects float, got str '1.0'"),
        ("flag", 1, "expects bool, got int 1"),
        ("label", 1, "expects str, got int 1"),
        ("pair", (1,), "expects tuple[int, int], got tuple (1,)"),
        ("pair", (1, 2.0), "expects tuple[int, int], got tuple (1, 2.0)"),
        ("sizes", (1, "2"), "expects tuple[int, ...], got tuple (1, '2')"),
        ("maybe", 1.5, "expects Optional[int], got float 1.5"),
        ("choice", "c", "expects Literal['a', 'b'], got str 'c'"),
        ("mode", 1, "expects Mode, got int 1"),
        ("out_dtype", "float99", "expects a dtype (tl.float16, T.float16, torch.float16 or 'float16'), got str 'float99'"),
        ("out_dtype", 16, "expects a dtype (tl.float16, T.float16, torch.float16 or 'float16'), got int 16"),
        ("fixed", 3.0, "expects int, got float 3.0"),
    ],
)
def test_const_of_the_wrong_type(name: str, value: object, message: str) -> None:
    with pytest.raises(TypeError) as info:
        bind_annotated(**{name: value})
    assert str(info.value) == f"annotated: const parameter {name!r} {message}"


@pytest.mark.parametrize(
    ("name", "value"),
    [("count", consts.Mode.FAST), ("scale", 2), ("scale", float("inf")), ("maybe", None), ("maybe", 3),
     ("mode", consts.Mode.FAST), ("out_dtype", "float16"), ("out_dtype", torch.float16), ("out_dtype", tl.float16),
     ("sizes", (1, 2, 3)), ("choice", "b"), ("anything", object()), ("anything", (None, "x", 1.5))],
)
def test_const_of_an_admitted_type(name: str, value: object) -> None:
    assert bind_annotated(**{name: value}).values[name] is value  # type: ignore[attr-defined]


def test_an_object_whose_class_raises_is_refused_naming_it() -> None:
    """Found by the thorough fuzz profile: an unannotated const whose `__class__` raises leaked a RuntimeError."""
    with pytest.raises(tl.ArgumentTypeError, match=r"'anything' must be compared by value .*tests\.unit\.hostile\.RaisingClass"):
        consts.annotated.lower(A=meta(4, dtype=torch.float32), anything=RaisingClass())


def test_none_for_an_int_block_is_refused_before_tvm_sees_it() -> None:
    """`block=None` reached TVM's floordiv and killed the process (SIGSEGV)."""
    with pytest.raises(TypeError, match=r"^scale: const parameter 'block' expects int, got NoneType None$"):
        consts.scale.lower(meta(256, dtype=torch.int32), meta(256, dtype=torch.float32), 2.0, None)


@pytest.mark.parametrize(
    ("value", "error", "fragments"),
    [
        (RaisingHash(), TypeError, ["must be hashable", "RaisingHash", "its __hash__ raised ValueError"]),
        ([1], TypeError, ["must be hashable", "got list [1]"]),
        (RaisingRepr(), TypeError, ["expects int, got tests.unit.hostile.RaisingRepr <RaisingRepr instance"]),
        (RaisingEq(), TypeError, ["must compare equal to itself", "whose comparison raised RuntimeError"]),
        (EqualsRaisingBool(), TypeError, ["must compare equal to itself", "whose comparison raised RuntimeError"]),
        (float("nan"), ValueError, ["must compare equal to itself", "got float nan"]),
        (torch.tensor(3), TypeError, ["must be a value, not a tensor", "hashed by identity", "`.item()`"]),
    ],
    ids=["__hash__ raises", "unhashable", "__repr__ raises", "__eq__ raises", "__bool__ raises", "nan", "a tensor"],
)
def test_badly_behaved_const(value: object, error: type[Exception], fragments: list[str]) -> None:
    with pytest.raises(error) as info:
        bind_annotated(count=value)
    assert str(info.value).startswith("annotated: const parameter 'count' ")
    for fragment in fragments:
        assert fragment in str(info.value)


def test_a_const_s_unhashable_default_is_named_as_the_default() -> None:
    """A call that passes nothing for `sizes` was told `const parameter 'sizes' must be hashable`, and no more."""
    with pytest.raises(tl.ArgumentTypeError, match=r"^listed_by_default: const parameter 'sizes' must be hashable .*got "
                       r"list \[64, 128\] \(it is the parameter's default: pass a value, or change the default\)$"):
        consts.listed_by_default.lower(meta(4, dtype=torch.float32))
    with pytest.raises(tl.ArgumentTypeError, match=r"got list \[64\]$"):  # a value given is named as given
        consts.listed_by_default.lower(meta(4, dtype=torch.float32), [64])
    consts.listed_by_default.lower(meta(4, dtype=torch.float32), (64, 128))


class Settings:
    """A plain object: hashed and compared by identity, while its attributes may change."""

    def __init__(self, block: int) -> None:
        self.block = block


def test_a_const_compared_by_identity_is_refused_naming_what_to_pass() -> None:
    """A kernel built for `Settings(64)` would be served again after `settings.block = 128`: refused."""
    with pytest.raises(TypeError, match=r"^annotated: const parameter 'anything' must be compared by value .*got "
                       r"tests.unit.test_bad_input.Settings .*, compared by identity, .*pass a frozen dataclass"):
        consts.annotated.lower(A=meta(4, dtype=torch.float32), anything=Settings(64))
    consts.annotated.lower(A=meta(4, dtype=torch.float32), anything=(64,))  # its values, as a tuple


def test_badly_behaved_tuning_candidate() -> None:
    with pytest.raises(TypeError, match=r"const parameter 'count' expects int, got float 2.0"):
        bind_annotated(count=tl.tune([1, 2.0]))


# -- block sizes: the extents a kernel launches, loops over and allocates -------------------


@pytest.mark.parametrize(
    ("consts_", "message", "note"),
    [
        (dict(block=0), "Divide by zero", "block=int 0"),
        (dict(block=-64), "a loop over `i` has extent -64; a loop extent must be >= 0", "block=int -64"),
        (dict(threads=2048), "T.Kernel launches 2048 threads per block (2048 x 1 x 1); CUDA allows at most 1024",
         "threads=int 2048"),
        (dict(rows=-1), "buffer `scratch` is allocated with shape (-1, 64); a dim must be >= 0", "rows=int -1"),
    ],
)
def test_bad_block_sizes_fail_the_build_naming_the_consts(consts_: dict[str, int], message: str, note: str) -> None:
    with pytest.raises(KernelBuildError) as info:
        consts.blocked.lower(meta(256, dtype=torch.float32), **consts_)
    assert message in str(info.value)
    assert info.value.__notes__ == [f"blocked was specialised on {', '.join(_consts_text(consts_))}, A: float32[M=256]"]
    assert note in info.value.__notes__[0]
    with pytest.raises(KernelBuildError) as called:  # a call on meta tensors (a tracer's) stands for a launch
        consts.blocked(meta(256, dtype=torch.float32), **consts_)
    assert message in str(called.value) and called.value.__notes__ == info.value.__notes__


def _consts_text(changed: dict[str, int]) -> list[str]:
    values = {"block": 64, "threads": 128, "rows": 1, **changed}
    return [f"{name}=int {value}" for name, value in values.items()]


def test_the_largest_block_builds() -> None:
    assert "__launch_bounds__(1024" in consts.blocked.lower(meta(4096, dtype=torch.float32), block=1024, threads=1024).cuda_source


@pytest.mark.parametrize(
    ("consts_", "axis", "count"),
    [(dict(rows=65536), "y", 65536), (dict(layers=65536), "z", 65536), (dict(rows=-1), "y", -1)],
)
def test_a_grid_beyond_cuda_s_limits_is_refused_before_nvcc_naming_the_consts(
    consts_: dict[str, int], axis: str, count: int,
) -> None:
    """A grid CUDA cannot launch (more than 65535 blocks along y or z, or a negative count) is a build error
    naming the axis and the consts, raised by `compile` before nvcc runs; the largest grid CUDA takes lowers."""
    with pytest.raises(KernelBuildError) as info:
        consts.gridded.compile(meta(8, dtype=torch.float32), **consts_)
    assert str(info.value) == f"gridded: T.Kernel's grid has {count} blocks along {axis}; CUDA takes 0 to 65535"
    values = {"rows": 1, "layers": 1, **consts_}
    assert info.value.__notes__ == [
        f"gridded was specialised on rows=int {values['rows']}, layers=int {values['layers']}, A: float32[M=8]"
    ]
    assert "__global__" in consts.gridded.lower(meta(8, dtype=torch.float32), rows=65535, layers=65535).cuda_source


def test_a_grid_sized_by_a_dyn_dim_is_checked_at_a_call_on_meta_tensors() -> None:
    """Such a call launches nothing that would refuse a grid CUDA cannot run: it is refused at the call's sizes,
    and a tracer's symbolic size is left to the launch."""
    assert consts.gridded_by_rows(meta(65535, 32, dtype=torch.float32)).shape == (65535, 32)
    with pytest.raises(tl.ArgumentValueError, match=re.escape(
            "gridded_by_rows: T.Kernel's grid would have 65536 blocks along y at this call's sizes; CUDA takes 0 to "
            "65535")):
        consts.gridded_by_rows(meta(65536, 32, dtype=torch.float32))
    program = torch.export.export(ExportedRows(), (meta(70000, 32, dtype=torch.float32),),
                                  dynamic_shapes=({0: torch.export.Dim("rows")},))
    assert "gridded_by_rows" in str(program.graph)
    # a grid the sizes make a division by zero is left to the launch, whose host code checks it
    assert consts.gridded_by_ratio(meta(8, 0, dtype=torch.float32)).shape == (8, 0)


class ExportedRows(torch.nn.Module):
    def forward(self, a: torch.Tensor) -> torch.Tensor:
        return consts.gridded_by_rows(a)


# -- values shown in messages: never a whole tensor ---------------------------------------


@pytest.mark.parametrize("where", ["dyn float", "ptr", "const"])
def test_a_tensor_where_a_scalar_belongs_is_described_not_formatted(where: str) -> None:
    big = torch.empty(2**16, 2**16, dtype=torch.float8_e4m3fn, device="meta")
    recorded = torch.empty(2, 3).as_subclass(Recorded)
    Recorded.formatted.clear()
    for value in (big, recorded):
        with pytest.raises((TypeError, ValueError)) as info:
            if where == "dyn float":
                in_body.scale_rows._dispatcher.binder.bind((meta(4, 4, dtype=torch.float32),) * 2 + (value, 64), allow_meta=True)
            elif where == "ptr":  # a tensor is a pointer's value when it is a CUDA tensor on the call's device
                shapes.with_scalars._dispatcher.binder.bind((meta(4, dtype=torch.float32), 1, value))
            else:
                bind_annotated(count=value)
        text = str(info.value)
        assert len(text) < 400, text
        if value is big and where != "ptr":
            assert "torch.Tensor of dtype torch.float8_e4m3fn and shape (65536, 65536) on meta" in text
    assert Recorded.formatted == []


def test_a_tensor_given_for_a_const_an_annotation_is_computed_from_names_the_const() -> None:
    """`A_shape = (K, M) if trans else (M, K)` never runs on a tensor passed for `trans` (an argument out of place):
    the call is refused naming the parameter, not the kernel's definition."""
    from tests.kernels.eager_style import body_names

    a, b = meta(8, 4, dtype=torch.float16), meta(8)
    with pytest.raises(tl.ArgumentTypeError, match=r"body_names: const parameter 'trans' .*got torch\.Tensor"):
        body_names(a, b, meta(8, 8))


@pytest.mark.parametrize("keyword", ["execution_backend", "verbose", "target_hots"])
def test_a_keyword_tl_jit_does_not_take_is_refused_naming_it_and_those_it_takes(keyword: str) -> None:
    """TileLang's own `@tilelang.jit(execution_backend="cython")`, carried over, or a typo."""
    with pytest.raises(tl.DefinitionError, match=rf"tl.jit\(\) got the keyword '{keyword}'; it takes target, "):
        tl.jit(**{keyword: "cython"})


def test_an_out_idx_tensor_passed_where_a_const_follows_is_refused_naming_the_output() -> None:
    """A TileLang user passes the output too: the tensor lands on the const after it."""
    with pytest.raises(tl.ArgumentTypeError, match=r"^copied: const parameter 'threads' must be a value, not a tensor .*"
                       r"\(if it was meant for 'Out': the kernel allocates and returns it, out_idx, and a call does "
                       r"not pass it\)$"):
        consts.copied(meta(1000, dtype=torch.float32), meta(1000, dtype=torch.float32))
