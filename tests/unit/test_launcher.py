"""The launcher: its C++ header, the tensors a kernel writes, and the checks every launch makes, on the CPU.

backend/csrc/launcher.h is real C++ that compiles by itself; each kernel's
launcher source (templates/launcher.cpp.j2) includes it and names its
digest, which so enters the build's key. What a kernel writes is read from
its lowered device code (LoweredKernel.written_params) for kernels that write
in each of the ways device code can (tests/kernels/launcher_safety.py). The
launchers built here (nvcc, no GPU needed) are called with made-up addresses:
a refusal comes before anything touches a device, and on a machine without a
GPU a launch that passes the checks fails with "kernel launch failed".
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch

from examples import add as examples_add
from tests.conftest import has_nvcc, meta, no_gpu, target_env
from tests.kernels import launcher_safety as kernels
from tests.kernels import scalars
from tests.kernels.outputs import two_outputs
from tltyped.backend import build, launcher

pytestmark = pytest.mark.usefixtures("sm90")

HEADER = Path(launcher.__file__).parent / "csrc" / launcher.HEADER


def f32(*shape: int) -> torch.Tensor:
    return meta(*shape, dtype=torch.float32)


# -- the header ------------------------------------------------------------------------------


def cuda_include_dirs() -> list[str]:
    """The CUDA headers nvcc compiles with (`nvcc --dryrun` names them), or [] without nvcc."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return []
    run = subprocess.run([nvcc, "--dryrun", "-x", "cu", "-c", "/dev/null"], capture_output=True, text=True, check=False)
    return re.findall(r'-I"?([^"\s]+)"?', "\n".join(line for line in run.stderr.splitlines() if "INCLUDES=" in line))


def test_the_header_compiles_alone_without_a_warning() -> None:
    cuda = cuda_include_dirs()
    if shutil.which("g++") is None or not cuda:
        pytest.skip("needs g++ and nvcc's CUDA headers")
    includes = [build.python_include(), build.torch_include(), *cuda]
    run = subprocess.run(
        ["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-x", "c++", *(f"-I{d}" for d in includes),
         str(HEADER)],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode == 0, run.stderr


def test_the_header_compiles_alone_under_the_launcher_builds_flags(tmp_path: Path) -> None:
    """nvcc_host_command, less `--shared` (no link) and `-w` (warnings are the point), plus the warnings as errors."""
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    command = [flag for flag in build.nvcc_host_command() if flag not in ("--shared", "-w")]
    run = subprocess.run(
        [*command, "-Xcompiler", "-Wall,-Wextra,-Werror", "-x", "c++", "-c", str(HEADER), "-o", str(tmp_path / "launcher.o")],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.fixture(scope="module")
def add_into_lowered() -> Any:
    with target_env("sm_90a"):
        return kernels.add_into.lower(f32(1000), f32(1000), f32(1000))


def launcher_source(fn: Any, lowered: Any) -> str:
    """The launcher source `fn.compile` would build, rendered without building it."""
    step = launcher.build_steps(lowered, fn.signature)[1]
    assert step.source_name == "launcher.cpp"
    return step.source


def test_the_launcher_source_names_the_headers_digest(add_into_lowered: Any) -> None:
    digest = hashlib.sha256(HEADER.read_bytes()).hexdigest()
    assert launcher.header_digest() == digest
    source = launcher_source(kernels.add_into, add_into_lowered)
    assert f"launcher.h sha256 {digest}" in source and '#include "launcher.h"' in source


def test_another_header_is_another_build(add_into_lowered: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same commands, and a header that differs only in its text: the key differs."""
    csrc = tmp_path / "csrc"
    shutil.copytree(HEADER.parent, csrc)
    monkeypatch.setattr(launcher, "_csrc", lambda: csrc)
    monkeypatch.setattr(launcher, "header_digest", launcher.header_digest.__wrapped__)  # read each time, not cached

    def key() -> str:
        return build.build_key(launcher.build_steps(add_into_lowered, kernels.add_into.signature))[0]

    before = key()
    (csrc / launcher.HEADER).write_text(HEADER.read_text() + "\n// another launcher\n")
    assert key() != before


# -- the tensors a kernel writes ----------------------------------------------------------------


def written(lowered: Any) -> set[str]:
    pf = lowered.prim_func
    return {pf.buffer_map[pf.params[i]].name for i in lowered.written_params}


def test_plain_stores_into_an_out_parameter(add_into_lowered: Any) -> None:
    assert written(add_into_lowered) == {"C"}


def test_a_parameter_read_and_written_in_place() -> None:
    assert written(kernels.scale_in_place.lower(f32(1000), 2.0)) == {"X"}


def test_atomic_adds() -> None:
    lowered = kernels.accumulate.lower(f32(1000), f32(1))
    assert "atomic" in lowered.cuda_source.lower()
    assert written(lowered) == {"Total"}


def test_a_tma_store_through_a_descriptor_the_host_makes() -> None:
    lowered = kernels.copy_tiles.lower(meta(256, 128), meta(256, 128))
    assert re.search(r"tma_store\(B_desc", lowered.cuda_source)  # the device code sees only the descriptor
    assert written(lowered) == {"B"}


def test_a_gemm_writing_c_through_t_copy(seed_gemm_in_body: Any) -> None:
    """On sm_90a the accumulator fragment is stored to C by each thread; A and B arrive by TMA loads."""
    lowered = seed_gemm_in_body.gemm.lower(meta(256, 64), meta(64, 128), f32(256, 128))
    assert "tma_load" in lowered.cuda_source and "tma_store" not in lowered.cuda_source
    assert written(lowered) == {"C"}


def test_a_strided_out_parameter() -> None:
    assert written(kernels.double_into.lower(f32(100), f32(100, 2)[:, 0])) == {"Y"}


def test_a_kernel_writing_only_its_own_outputs_checks_nothing() -> None:
    for fn, args in ((two_outputs, (f32(256, 96),)), (examples_add.scale, (f32(1000), 2.0))):
        lowered = fn.lower(*args)
        abi = launcher.describe_abi(lowered, fn.signature)
        assert not abi.writes_arguments and all(t.written is False for t in abi.tensor_args)
        source = launcher_source(fn, lowered)
        assert "check_written" not in source and "span(" not in source


def test_a_kernel_writing_an_argument_checks_every_tensor_argument(add_into_lowered: Any) -> None:
    source = launcher_source(kernels.add_into, add_into_lowered)
    spans = re.findall(r'span\("argument \'(\w)\'", (true|false)', source)
    assert spans == [("A", "false"), ("B", "false"), ("C", "true")]
    assert 'check_written("add_into", spans)' in source


def test_a_buffer_without_strides_spans_its_shape_compactly() -> None:
    lowered = kernels.increment_matched.lower(0x100000, 0x200000, 64)
    pf = lowered.prim_func
    assert [list(pf.buffer_map[p].strides) for p in pf.params] == [[], []]  # TVM's compact layout
    source = launcher_source(kernels.increment_matched, lowered)
    assert "span(\"argument 'Out'\", true, v[1].pointer, 32, { 64, 8 }, { 8, 1 })" in source


# -- sizes: 64-bit, checked -------------------------------------------------------------------


def test_output_sizes_are_64_bit_over_the_arguments() -> None:
    source = launcher_source(kernels.widen, kernels.widen.lower(meta(1000, dtype=torch.int8)))
    assert "const tltyped_launcher::Size d0 = v[1].integer;" in source  # the dyn dim N, widened before any arithmetic
    assert 'outputs.add<1>({ d0 * 4 }, { { 0, "N * 4", { { "N", d0 }, } }, })' in source  # and int32 in the kernel


def compiled(fn: Any, *args: Any) -> Any:
    """`fn.compile(*args)` for sm_90a (nvcc, no GPU needed)."""
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    with target_env("sm_90a"):
        return fn.compile(*args)


@pytest.fixture(scope="module")
def widen() -> Any:
    return compiled(kernels.widen, meta(1000, dtype=torch.int8))


def test_an_output_past_the_int32_range_the_kernel_indexes_in_is_refused(widen: Any) -> None:
    assert [t.shape for t in widen.empty_outputs(0, 10)] == [(40,)]
    with pytest.raises(ValueError) as info:
        widen.empty_outputs(0, 2**30 + 1)
    assert str(info.value) == (
        "widen: output 'B' would have 4294967300 elements in dim 0 (N * 4, with N = 1073741825), "
        "past the int32 range the kernel computes its indices in"
    )
    with pytest.raises(ValueError, match=r"would have 2147483648 elements in dim 0"):
        widen.empty_outputs(0, 2**29)  # 2**31: one past


def test_an_output_past_the_int64_range_is_refused() -> None:
    table = compiled(kernels.square_table, meta(4, dtype=torch.int8), 3)
    assert [t.shape for t in table.empty_outputs(0, 3, 4)] == [(9,)]
    with pytest.raises(ValueError) as info:
        table.empty_outputs(0, 2**40, 4)
    assert str(info.value) == "square_table: output 'Table' would have a size past the 64-bit range in dim 0 (its shape is a1 * a1)"


# -- launches refused ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def add_into() -> Any:
    return compiled(kernels.add_into, f32(1000), f32(1000), f32(1000))


A, B, C = 0x100000, 0x200000, 0x300000  # made-up addresses, 1 MiB apart: 1000 floats each fit
N = 1000
WRITTEN_C_SHARES_MEMORY = {
    "the same tensor twice": (
        (A, B, A, N),
        "add_into: argument 'C', which the kernel writes, is the same memory as argument 'A'; pass distinct tensors "
        "(a kernel that updates a tensor in place takes it as one parameter that it reads and writes)",
    ),
    "overlapping views": (
        (A, B, B + 4 * (N - 1), N),  # C's first element is B's last
        "add_into: argument 'C', which the kernel writes, overlaps argument 'B' in memory; pass tensors that do not "
        "share memory",
    ),
}


@pytest.mark.parametrize(("args", "message"), WRITTEN_C_SHARES_MEMORY.values(), ids=WRITTEN_C_SHARES_MEMORY.keys())
def test_a_written_tensor_sharing_memory_is_refused(add_into: Any, args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError) as info:
        add_into.launch(*args, 0, 0)
    assert str(info.value) == message


def raw_entry(kernel: Any) -> Any:
    """The launcher's LAUNCH_RAW entry (tltyped/abi.py), callable from Python as the C cached call calls it."""
    capsule = kernel.module.LAUNCH_RAW
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    signature = ctypes.PYFUNCTYPE(
        ctypes.py_object, ctypes.POINTER(ctypes.py_object), ctypes.POINTER(ctypes.c_uint64),
        ctypes.POINTER(ctypes.py_object), ctypes.c_void_p, ctypes.c_long,
    )
    entry = signature(get_pointer(capsule, b"tltyped.launch_raw"))

    def call(*words: int, device: int) -> Any:
        return entry((ctypes.py_object * len(words))(), (ctypes.c_uint64 * len(words))(*words), None, None, device)

    return call


@pytest.mark.parametrize(("args", "message"), WRITTEN_C_SHARES_MEMORY.values(), ids=WRITTEN_C_SHARES_MEMORY.keys())
def test_the_raw_entry_refuses_it_alike(add_into: Any, args: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError) as info:
        raw_entry(add_into)(*args, device=0)
    assert str(info.value) == message


@no_gpu
@pytest.mark.parametrize(
    "args", [(A, B, C, N), (A, B, A + 4 * N, N), (A, B, A, 0)], ids=["apart", "adjacent", "empty: nothing shared"]
)
def test_tensors_apart_are_launched(add_into: Any, args: tuple[int, ...]) -> None:
    with pytest.raises(RuntimeError, match="kernel launch failed"):  # past the checks: no GPU here
        add_into.launch(*args, 0, 0)


def test_an_expanded_out_parameter_is_refused() -> None:
    """A T.Tensor given with a stride of 0 is built for that stride; writing it would race."""
    expanded = compiled(kernels.add_into, f32(N), f32(N), f32(1).expand(N))
    with pytest.raises(ValueError) as info:
        expanded.launch(A, B, C, N, 0, 0)
    assert str(info.value) == (
        "add_into: argument 'C' is written by the kernel, but its dim 0 (size 1000) has stride 0: its elements share "
        "memory and the kernel's writes to them would race; pass a tensor whose elements are distinct (not an "
        "expanded one)"
    )


@pytest.fixture(scope="module")
def double_into() -> Any:
    return compiled(kernels.double_into, f32(N), f32(N, 2)[:, 0])


def test_a_strided_out_parameter_with_stride_0_is_refused(double_into: Any) -> None:
    with pytest.raises(ValueError, match=r"double_into: argument 'Y' is written by the kernel, but its dim 0 \(size 1000\) has stride 0"):
        double_into.launch(A, B, N, 0, 0, 0)  # X, Y, the dyn dims n and s (Y's stride)
    with pytest.raises(ValueError, match=r"argument 'Y', which the kernel writes, overlaps argument 'X'"):
        double_into.launch(A, A + 4, N, 2, 0, 0)  # every other element of X's memory, from its second on


@no_gpu
def test_a_strided_out_parameter_of_one_element_may_have_stride_0(double_into: Any) -> None:
    with pytest.raises(RuntimeError, match="kernel launch failed"):
        double_into.launch(A, B, 1, 0, 0, 0)


def test_the_description_names_the_written_tensors(add_into: Any, widen: Any) -> None:
    assert (add_into.written, widen.written) == (("C",), ())


def test_a_size_the_launcher_cannot_compute_is_an_abi_error_naming_it() -> None:
    """Raised after TVM's visit of the expression: raised inside it, TVM would turn it into a RuntimeError."""
    from tilelang import tvm

    from tltyped.errors import ABIError

    stray = tvm.tirx.Var("stray", "int32")
    with pytest.raises(ABIError, match=r"^k: a size names 'stray', which is neither a dyn dim nor a scalar parameter"):
        launcher._Sizes("k", {}).size(stray + 1)


# -- dyn scalars: the launcher takes exactly what the binder takes --------------------------------

class Ratio(float):
    """A float's subclass, as numpy's float64 is: a float to the binder and the launcher alike."""


class Understated(Ratio):
    """One whose `abs` lies: both read its value, as the launcher reads it."""

    def __abs__(self) -> float:
        return 0.0


# every_scalar's dyn scalars (tests/kernels/scalars.py), in order, with values both take
SCALARS = dict(i8=1, u8=1, i16=1, u16=1, u32=1, u64=1, f16=1.0, f32=1.0, f64=1.0)
F16_MAX, F32_MAX, F64_MAX = 65504.0, 3.4028234663852886e38, 1.7976931348623157e308
ADMITTED = [
    ("i8", -128), ("i8", 127), ("u8", 0), ("u8", 255), ("i16", -32768), ("i16", 32767), ("u16", 65535),
    ("u32", 2**32 - 1), ("u64", 0), ("u64", 2**63 - 1), ("u64", 2**63), ("u64", 2**64 - 1),
    ("f16", F16_MAX), ("f16", -F16_MAX), ("f16", 65504), ("f16", 6e-8), ("f16", math.inf),
    ("f32", F32_MAX), ("f32", -F32_MAX), ("f32", int(F32_MAX)), ("f32", -math.inf), ("f32", math.nan),
    ("f64", F64_MAX), ("f64", -int(F64_MAX)), ("f64", math.inf), ("f32", Ratio(0.5)), ("f16", Ratio(-math.inf)),
]
REFUSED = [
    ("i8", -129), ("i8", 128), ("u8", -1), ("u8", 256), ("i16", 32768), ("u16", 65536), ("u32", -1), ("u32", 2**32),
    ("u64", -1), ("u64", 2**64), ("u64", 2**70),
    ("f16", math.nextafter(F16_MAX, math.inf)), ("f16", 65505), ("f16", 1e5),
    ("f32", math.nextafter(F32_MAX, math.inf)), ("f32", -1e39), ("f32", 2**200), ("f32", int(F32_MAX) + 1),
    ("f32", 10**400), ("f64", int(F64_MAX) + 1), ("f64", -(2**1024)), ("f16", Ratio(1e5)), ("f16", Understated(1e5)),
]


def case_id(case: tuple[str, Any]) -> str:
    name, value = case
    if isinstance(value, int) and abs(value) >= 2**80:
        return f"{name}=int of {value.bit_length()} bits"
    return f"{name}={value!r}"


@pytest.fixture(scope="module")
def every_scalar() -> Any:
    return compiled(scalars.every_scalar, f32(N), *SCALARS.values())


def scalar_values(name: str, value: Any) -> list[Any]:
    return list({**SCALARS, name: value}.values())


def binder_takes(name: str, value: Any) -> bool:
    """Whether the binder takes the value: a call on meta tensors binds, and launches nothing."""
    from tltyped.errors import ArgumentTypeError, ArgumentValueError

    try:
        scalars.every_scalar(f32(N), *scalar_values(name, value))
    except (ArgumentTypeError, ArgumentValueError):
        return False
    return True


def launcher_takes(kernel: Any, name: str, value: Any) -> bool:
    """Whether the launcher converts the value: its outputs are then allocated, on the CPU (no device touched)."""
    try:
        kernel.empty_outputs(A, *scalar_values(name, value), N)
    except (TypeError, OverflowError):
        return False
    return True


@pytest.mark.parametrize(("name", "value"), ADMITTED, ids=[case_id(c) for c in ADMITTED])
def test_the_launcher_and_the_binder_take_a_scalar_alike(every_scalar: Any, name: str, value: Any) -> None:
    assert (binder_takes(name, value), launcher_takes(every_scalar, name, value)) == (True, True)


@pytest.mark.parametrize(("name", "value"), REFUSED, ids=[case_id(c) for c in REFUSED])
def test_the_launcher_and_the_binder_refuse_a_scalar_alike(every_scalar: Any, name: str, value: Any) -> None:
    assert (binder_takes(name, value), launcher_takes(every_scalar, name, value)) == (False, False)
    with pytest.raises(OverflowError, match=rf"^every_scalar: argument '{name}' "):  # launch converts as empty_outputs
        every_scalar.launch(A, *scalar_values(name, value), N, 0, 0)


@no_gpu
def test_a_launch_takes_each_types_extremes(every_scalar: Any) -> None:
    """Past the conversion of every narrow and unsigned type at once: no GPU here."""
    extremes = dict(i8=-128, u8=255, i16=32767, u16=65535, u32=2**32 - 1, u64=2**64 - 1, f16=-F16_MAX, f32=F32_MAX,
                    f64=math.nan)
    with pytest.raises(RuntimeError, match="kernel launch failed"):
        every_scalar.launch(A, *extremes.values(), N, 0, 0)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("u64", -1, "= -1 is out of range [0, 18446744073709551615]"),
        ("u64", 2**64, "does not fit in 64 bits"),
        ("u32", 2**32, "= 4294967296 is out of range [0, 4294967295]"),
        ("i8", -129, "= -129 is out of range [-128, 127]"),
        ("f32", 1e39, "= 1e+39 is out of range [-3.4028234663852886e+38, 3.4028234663852886e+38]"),
        ("f32", 2**128, f"= {2**128} is out of range [-3.4028234663852886e+38, 3.4028234663852886e+38]"),
        ("f16", 65505, "= 65505 is out of range [-65504, 65504]"),
        ("f64", 10**400, "does not fit in a double"),
    ],
)
def test_a_refused_scalar_is_named_with_its_range(every_scalar: Any, name: str, value: Any, message: str) -> None:
    with pytest.raises(OverflowError) as info:
        every_scalar.launch(A, *scalar_values(name, value), N, 0, 0)
    assert str(info.value) == f"every_scalar: argument '{name}' {message}"


def test_the_argument_table_holds_each_types_range(every_scalar: Any) -> None:
    rows = dict(re.findall(r'\{ "(\w+)", tltyped_launcher::Convert::\w+, (.*) \},', every_scalar.launcher_source))
    assert rows["u64"] == "0LL, 18446744073709551615ULL, 0.0"
    assert rows["i8"] == "-128LL, 127ULL, 0.0"
    assert rows["f16"] == "0LL, 0ULL, 65504.0"
    assert rows["f32"] == "0LL, 0ULL, 3.4028234663852886e+38"
    assert launcher.CArg("s", "a1", "int64_t", "integer", -(2**63), 2**63 - 1).c_range == (
        "LLONG_MIN, 9223372036854775807ULL, 0.0")  # -2**63 has no literal


@pytest.mark.parametrize(("name", "value", "message"), [
    ("f32", 1e39, "dyn parameter 'f32' = float 1e+39 does not fit in float32"),
    ("u64", 2**64, "dyn parameter 'u64' = int 18446744073709551616 does not fit in uint64"),
])
def test_a_cached_call_with_an_out_of_range_scalar_gets_the_binders_error(
    every_scalar: Any, name: str, value: Any, message: str
) -> None:
    """A hit whose launcher refuses the value goes to the slow path (never launched with it converted)."""
    from tltyped.callpath.dispatcher import Dispatcher
    from tltyped.frontend.analyze import analyze

    fn = scalars.every_scalar.__wrapped__
    d = Dispatcher(fn, analyze(fn).signature, None)
    x = torch.empty(N)
    d.launches[d.key(x, *SCALARS.values())] = every_scalar.launch
    with pytest.raises(ValueError) as info:
        d.fast_path.call(x, *scalar_values(name, value))
    assert str(info.value) == f"every_scalar: {message}"
    assert d.cache_info().hits == 0 and d.cache_info().misses == 1


@pytest.fixture(scope="module")
def float16_bits(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """launcher.h's float16_bits and half_t, built with g++ into a library of their own."""
    cuda = cuda_include_dirs()
    if shutil.which("g++") is None or not cuda:
        pytest.skip("needs g++ and nvcc's CUDA headers")
    folder = tmp_path_factory.mktemp("float16")
    source = folder / "float16.cpp"
    source.write_text(
        '#include "launcher.h"\n'
        'extern "C" uint16_t f16_bits(double v) { return tltyped_launcher::float16_bits(v); }\n'
        'extern "C" uint16_t half_t_bits(double v) { return half_t(v).bits; }\n'
    )
    includes = [str(HEADER.parent), build.python_include(), build.torch_include(), *cuda]
    run = subprocess.run(
        ["g++", "-std=c++17", "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", *(f"-I{d}" for d in includes),
         str(source), "-o", str(folder / "float16.so")],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode == 0, run.stderr
    library = ctypes.CDLL(str(folder / "float16.so"))
    for fn in (library.f16_bits, library.half_t_bits):
        fn.restype, fn.argtypes = ctypes.c_uint16, [ctypes.c_double]
    return library


def test_a_float16_scalar_is_rounded_to_nearest_even_from_the_double(float16_bits: Any) -> None:
    """As numpy rounds a double to float16 (in one step: through float32 would round twice)."""
    import numpy as np

    rng = np.random.default_rng(0)
    ulp = [2.0**e for e in range(-24, 6)]  # float16's last place, subnormals (2**-24) to the largest binade (2**5)
    values = [0.0, -0.0, 1.0, 0.1, F16_MAX, 65519.99, 65520.0, 2.0**-14, 2.0**-24, 2.0**-25, 2.0**-25 * (1 + 2**-52),
              2.0**-26, 1e-300, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + 2**-40, 2049.0, 2051.0, -2049.0, math.inf,
              -math.inf]
    values += [k * u / 2 for u in ulp for k in range(2040, 2060)]  # ties and their neighbours, in every binade
    values += list(np.ldexp(rng.uniform(-1, 1, 20000), rng.integers(-28, 17, 20000)))
    values += [math.nextafter(v, d) for v in values[:21] for d in (-math.inf, math.inf) if math.isfinite(v)]
    with np.errstate(over="ignore"):  # 65520 and past: infinity
        expected = np.array(values, dtype=np.float64).astype(np.float16).view(np.uint16)
    got = [float16_bits.f16_bits(v) for v in values]
    assert [(v, hex(g), hex(e)) for v, g, e in zip(values, got, expected) if g != e] == []
    assert all(float16_bits.half_t_bits(v) == g for v, g in zip(values[:200], got))
    nan = float16_bits.f16_bits(math.nan)
    assert nan & 0x7C00 == 0x7C00 and nan & 0x03FF != 0


def test_a_parameter_type_the_launcher_does_not_pass_is_an_error_naming_the_kernel() -> None:
    from tltyped.backend.lower import kernel_declarations
    from tltyped.errors import LoweringError

    source = "__global__ void k_kernel(float* __restrict__ X, bfloat16_t s) {}"
    with pytest.raises(LoweringError, match=r"^k: the device code takes parameter `bfloat16_t s`, of a type the host "
                       r"launcher does not pass; it passes pointers, TMA descriptors and bool, double, float, half_t"):
        kernel_declarations(source, ["k_kernel"], "k")
    source = "__global__ void k_kernel(uint a, uchar b, ushort c, signed char d, short e, half_t f) {}"
    (declaration,) = kernel_declarations(source, ["k_kernel"], "k")
    assert declaration.params == ("unsigned int", "uint8_t", "uint16_t", "int8_t", "int16_t", "half_t")
