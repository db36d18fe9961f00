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
        ctypes.py_object, ctypes.POINTER(ctypes.py_object), ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p, ctypes.c_long
    )
    entry = signature(get_pointer(capsule, b"tltyped.launch_raw"))

    def call(*words: int, device: int) -> Any:
        return entry((ctypes.py_object * len(words))(), (ctypes.c_uint64 * len(words))(*words), None, device)

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
