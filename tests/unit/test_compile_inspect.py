"""Point 7: inspect and build kernels on a machine without a GPU.

`fn.lower(...)` takes meta tensors and returns the TIR and the CUDA source;
`fn.compile(...)` also builds the extension with nvcc (two builds per session,
shared through the session fixtures in tests/conftest.py); the target comes
from `tl.jit(target=...)`, else TLTYPED_TARGET, else the GPU, else a clear error.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.conftest import meta, needs_nvcc, no_gpu
from tests.kernels import eager_style, elementwise, gemm_variants
from tltyped import TargetError
from tltyped.backend.target import normalize

F32 = torch.float32


def gemm_args(m: int = 1024, k: int = 512, n: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    return meta(m, k), meta(k, n)


# -- lower ---------------------------------------------------------------------------


def test_lower_returns_tir_and_cuda_source(sm90, seed_gemm) -> None:
    lowered = seed_gemm.gemm.lower(*gemm_args())
    assert "@T.prim_func" in lowered.tir
    assert "def gemm(" in lowered.tir
    assert "__global__" in lowered.cuda_source
    assert "gemm_kernel" in lowered.cuda_source
    assert lowered.target["arch"] == "sm_90a"


def test_lower_takes_keyword_arguments(sm90, seed_gemm) -> None:
    a, b = gemm_args()
    assert seed_gemm.gemm.lower(A=a, B=b, block_M=64).tir == seed_gemm.gemm.lower(a, b, 64).tir


@pytest.mark.parametrize("form", ["signature", "in_body"])
def test_seed_gemm_lowers_to_hopper_code(sm90, form: str, seed_gemm, seed_gemm_in_body) -> None:
    if form == "signature":
        lowered = seed_gemm.gemm.lower(*gemm_args())
    else:
        lowered = seed_gemm_in_body.gemm.lower(*gemm_args(), meta(1024, 256, dtype=torch.float32))
    assert "wgmma" in lowered.cuda_source


def test_dyn_k_gives_one_cuda_source(sm90, seed_gemm) -> None:
    k512 = seed_gemm.gemm.lower(*gemm_args(k=512))
    k1024 = seed_gemm.gemm.lower(*gemm_args(k=1024))
    assert k512.cuda_source == k1024.cuda_source
    assert k512.tir == k1024.tir


def test_const_k_gives_a_source_per_k(sm90, seed_gemm_in_body) -> None:
    """The contrast: the in-body seed declares K with T.const, so K is baked into its kernel."""
    out = meta(1024, 256, dtype=torch.float32)
    k512 = seed_gemm_in_body.gemm.lower(*gemm_args(k=512), out)
    k1024 = seed_gemm_in_body.gemm.lower(*gemm_args(k=1024), out)
    assert k512.cuda_source != k1024.cuda_source


def test_lower_rejects_cpu_tensors_with_the_accepted_devices(sm90, seed_gemm) -> None:
    with pytest.raises(ValueError, match=r"argument 'A' is on cpu; kernels take CUDA or meta tensors"):
        seed_gemm.gemm.lower(torch.empty(1024, 512, dtype=torch.float16), meta(512, 256))


# -- targets --------------------------------------------------------------------------


def test_explicit_target_without_environment(monkeypatch) -> None:
    monkeypatch.delenv("TLTYPED_TARGET", raising=False)
    fn = tl.jit(target="sm_90a")(elementwise.add_or_sub.__wrapped__)
    a = meta(128, 64, dtype=torch.float32)
    assert fn.lower(a, a).target == {"kind": "cuda", "arch": "sm_90a"}


def test_environment_target(monkeypatch) -> None:
    monkeypatch.setenv("TLTYPED_TARGET", "sm_80")
    a = meta(128, 64, dtype=torch.float32)
    assert elementwise.add_or_sub.lower(a, a).target["arch"] == "sm_80"


def test_explicit_target_beats_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("TLTYPED_TARGET", "sm_80")
    fn = tl.jit(target="sm_90a")(gemm_variants.gemm_split_k.__wrapped__)
    lowered = fn.lower(*gemm_args(k=512))
    assert lowered.target["arch"] == "sm_90a"
    assert "wgmma" in lowered.cuda_source


def test_target_changes_the_code(monkeypatch) -> None:
    a, b = gemm_args(k=512)
    monkeypatch.setenv("TLTYPED_TARGET", "sm_80")
    ampere = gemm_variants.gemm_split_k.lower(a, b)
    monkeypatch.setenv("TLTYPED_TARGET", "sm_90a")
    hopper = gemm_variants.gemm_split_k.lower(a, b)
    assert "wgmma" not in ampere.cuda_source
    assert "wgmma" in hopper.cuda_source


@no_gpu
def test_no_target_and_no_gpu_says_how_to_name_one(monkeypatch, seed_gemm) -> None:
    monkeypatch.delenv("TLTYPED_TARGET", raising=False)
    with pytest.raises(TargetError) as info:
        seed_gemm.gemm.lower(*gemm_args())
    message = str(info.value)
    assert "no CUDA GPU" in message
    assert "TLTYPED_TARGET" in message
    assert "tl.jit(target=" in message


@pytest.mark.parametrize("spelling", ["sm_90a", "cuda:sm_90a", "cuda sm_90a", {"kind": "cuda", "arch": "sm_90a"}])
def test_target_spellings(spelling: object) -> None:
    assert normalize(spelling) == {"kind": "cuda", "arch": "sm_90a"}


@pytest.mark.parametrize("spelling", ["cuda -arch=sm_90a", "-arch=sm_90a"])
def test_tvm_arch_flag_spelling(spelling: str) -> None:
    assert normalize(spelling) == {"kind": "cuda", "arch": "sm_90a"}


@pytest.mark.parametrize("bad", ["bogus", "cuda -arch=", "sm_xx", "gfx942"])
def test_malformed_target_is_rejected_at_decoration(bad: str) -> None:
    with pytest.raises(TargetError, match="unknown target"):
        tl.jit(target=bad)(elementwise.add_or_sub.__wrapped__)


@pytest.mark.parametrize("detected", ["auto", "cuda"])
def test_tilelangs_detected_targets_mean_the_gpu_at_hand(detected: str, sm90: str) -> None:
    """`target="auto"` (TileLang's default) or `"cuda"`: as if none were given, so TLTYPED_TARGET decides here."""
    fn = tl.jit(target=detected)(elementwise.add_or_sub.__wrapped__)
    assert fn.lower(meta(128, 64, dtype=torch.float32), meta(128, 64, dtype=torch.float32)).target["arch"] == sm90


def test_target_dict_without_arch_is_rejected_at_decoration() -> None:
    with pytest.raises(TargetError):
        tl.jit(target={"kind": "cuda"})(elementwise.add_or_sub.__wrapped__)


# -- compile (nvcc) -------------------------------------------------------------------


@needs_nvcc
def test_compile_builds_an_extension(compiled_seed_gemm) -> None:
    assert compiled_seed_gemm.compiled  # built by nvcc in this session (fresh cache directory)
    assert callable(compiled_seed_gemm.launch)
    assert "wgmma" in compiled_seed_gemm.cuda_source
    cache = Path(os.environ["TLTYPED_CACHE_DIR"])
    assert any(cache.rglob("*.so")), "the built extension is in TLTYPED_CACHE_DIR"


@needs_nvcc
def test_second_compile_loads_from_the_disk_cache(sm90, compiled_seed_gemm, seed_gemm) -> None:
    again = seed_gemm.gemm.compile(*gemm_args())
    assert not again.compiled
    assert again.outputs == compiled_seed_gemm.outputs
    assert again.returns == compiled_seed_gemm.returns


@needs_nvcc
def test_second_compile_with_another_dyn_k_is_the_same_build(sm90, compiled_seed_gemm, seed_gemm) -> None:
    assert not seed_gemm.gemm.compile(*gemm_args(k=2048)).compiled


@needs_nvcc
def test_a_compiled_kernel_runs_its_own_specialisation_only(sm90, compiled_seed_gemm, seed_gemm) -> None:
    """Built for M = 1024, N = 256 (K dyn): any K is its call; another M, N or layout is refused, naming the
    difference, where the jit function's call would specialise (TileLang's compiled kernels refuse it too)."""
    assert compiled_seed_gemm(*gemm_args(k=64)).shape == (1024, 256)  # control: a dyn dim is free
    with pytest.raises(tl.ArgumentValueError, match=r"^gemm: the call is not what this compiled kernel was built for: "
                       r"dim M = 512 \(from A, axis 0\), built for 1024; dim N = 128 \(from B, axis 1\), built for 256$"):
        compiled_seed_gemm(*gemm_args(m=512, n=128))
    a, b = gemm_args()
    with pytest.raises(tl.ArgumentValueError, match=r"B layout strides \(1, 512\), built for contiguous$"):
        compiled_seed_gemm(a, meta(256, 512, dtype=torch.float16).t())
    with pytest.raises(tl.ArgumentValueError, match=r"TileLang's Profiler makes contiguous inputs, and this kernel was "
                       r"built for B with strides \(1, 512\)"):
        seed_gemm.gemm.compile(a, meta(256, 512, dtype=torch.float16).t()).get_profiler()
    assert seed_gemm.gemm(*gemm_args(m=512, n=128)).shape == (512, 128)  # the jit function's own call takes it


@needs_nvcc
def test_a_compiled_kernel_is_one_call_in_a_torch_compiled_graph(sm90, compiled_seed_gemm) -> None:
    """Traced as the jit function is (one op, no graph break), and checked against its specialisation as traced."""
    torch._dynamo.reset()
    doubled = torch.compile(lambda a, b: compiled_seed_gemm(a, b) * 2, fullgraph=True, backend="eager")
    assert doubled(*gemm_args(k=64)).shape == (1024, 256)
    with pytest.raises(Exception, match=r"dim M = 512 \(from A, axis 0\), built for 1024"):
        doubled(*gemm_args(m=512))


def test_a_specialisation_names_what_a_call_changes() -> None:
    """Specialization.differences: each const dim, dtype and layout, the call's beside the compiled kernel's."""
    from tltyped.frontend.signature import Difference, Specialization
    from tltyped.types.dtypes import float16, float32

    built = Specialization({"block": 64}, {"M": 128}, {"A": float16, "B": float16, "C": float16}, {"A": None, "B": None})
    call = Specialization({"block": 64}, {"M": 64}, {"A": float32, "B": float16}, {"A": None, "B": (1, 8)})
    assert built.differences(built, {}) == []
    assert built.differences(call, {"M": "A, axis 0"}) == [  # C, an output the call does not pass, is not compared
        Difference("dim M", "= 64 (from A, axis 0)", "128"), Difference("A dtype", "float32", "float16"),
        Difference("B layout", "strides (1, 8)", "contiguous")]


@needs_nvcc
def test_a_kernel_of_no_arguments_builds(sm90) -> None:
    """TileLang's launch code names no argument after the kernel's (`cudaLaunchKernelEx(&config, kernel, )`, which
    nvcc refuses) where the kernel takes none: the launcher is built all the same."""
    kernel = eager_style.layout_probe.compile(M=4, N=32)
    assert "layout_probe_kernel()" in kernel.get_kernel_source()
    assert "cudaLaunchKernelEx(&config, layout_probe_kernel);" in kernel.launcher_source


@needs_nvcc
def test_launcher_checks_its_argument_count(compiled_seed_gemm) -> None:
    # A, B, dim K, then stream and device (the launcher allocates the output C itself)
    with pytest.raises(TypeError, match=r"gemm: launch takes 5 arguments \(7 with the call's tensors\), got 2"):
        compiled_seed_gemm.launch(0, 0)
    # the call's tensors after them, whose versions it bumps where its kernel writes them: torch.Tensors only
    with pytest.raises(TypeError, match=r"gemm: launch's tensor 1 is a str, not a torch.Tensor"):
        compiled_seed_gemm.launch(0, 0, 512, 0, 0, torch.empty(1), "B")


@needs_nvcc
def test_launcher_names_a_bad_dyn_dim(compiled_seed_gemm) -> None:
    with pytest.raises(TypeError, match=r"gemm: argument 'dim K' expects an int, got str"):
        compiled_seed_gemm.launch(0, 0, "512", 0, 0)


@needs_nvcc
def test_launcher_range_checks_a_dyn_dim(compiled_seed_gemm) -> None:
    with pytest.raises(OverflowError, match=r"gemm: argument 'dim K' = 4294967296 is out of range"):
        compiled_seed_gemm.launch(0, 0, 2**32, 0, 0)


@needs_nvcc
def test_launcher_rejects_a_non_integer_pointer(compiled_seed_gemm) -> None:
    with pytest.raises(TypeError):
        compiled_seed_gemm.launch("A", 0, 512, 0, 0)


# -- TileLang's other inspection names ---------------------------------------------------


def test_get_tir_gives_the_elaborated_prim_func_without_lowering(sm90) -> None:
    from tests.kernels import lazy_style

    prim_func = elementwise.add_or_sub.get_tir(meta(256, 64, dtype=F32), meta(256, 64, dtype=F32), subtract=True)
    assert [prim_func.buffer_map[p].name for p in prim_func.params] == ["A", "B", "C"]
    assert "T.parallel(" in prim_func.script()  # TIR before lowering, which binds the loop to threads
    assert [int(d) for d in prim_func.buffer_map[prim_func.params[0]].shape] == [256, 64]
    factory_tir = lazy_style.copy_block.get_tir(96)  # a factory: its arguments
    assert [int(d) for d in factory_tir.buffer_map[factory_tir.params[0]].shape] == [96]
    assert "__global__" in lazy_style.copy_block.lower(96).cuda_source
    pointers = eager_style.pointers.get_tir(T.ptr(), T.ptr(), 256)  # TileLang's placeholder for any address
    assert [str(p.dtype) for p in pointers.params] == ["handle", "handle"]
    with pytest.raises(tl.ArgumentTypeError, match="'B' expects dtype float32, got float16"):
        elementwise.add_or_sub.get_tir(meta(256, 64, dtype=F32), meta(256, 64))


@needs_nvcc
def test_par_compile_builds_each_configuration_in_order(sm90) -> None:
    from tests.kernels import lazy_style

    subtract = (meta(128, 32, dtype=F32), meta(128, 32, dtype=F32), True)
    kernels = elementwise.add_or_sub.par_compile([{"M": 256, "N": 32}, subtract])
    assert [k.cuda_source for k in kernels] == [elementwise.add_or_sub.compile(M=256, N=32).cuda_source,
                                                elementwise.add_or_sub.compile(*subtract).cuda_source]
    assert kernels[0].cuda_source != kernels[1].cuda_source
    lazy = lazy_style.copy_block.par_compile([(32,), {"N": 96}])
    assert [type(k).__name__ for k in lazy] == ["CompiledKernel", "CompiledKernel"]
    assert lazy[0].get_kernel_source() != lazy[1].get_kernel_source()
    assert lazy_style.copy_block.compile(32).get_kernel_source() == lazy[0].get_kernel_source()  # TileLang's compile
    too_big = (256, 128, 512, 256, 128, 256)  # elaborates; its shared memory is more than a block has
    with pytest.raises(tl.KernelBuildError, match="main_kernel uses 589824 bytes of shared memory"):
        lazy_style.matmul.par_compile([too_big])
    failed = lazy_style.matmul.par_compile([too_big, (256, 128, 64, 64, 64, 32)], ignore_error=True)
    assert failed[0] is None and failed[1] is not None
    for ignore_error in (False, True):  # the body fails: raised whatever ignore_error says, as TileLang's is
        with pytest.raises(tl.ElaborationError, match="running the factory with M=float 256.0"):
            lazy_style.matmul.par_compile([(256.0, 128, 64, 64, 64, 32), (256, 128, 64, 64, 64, 32)], ignore_error=ignore_error)
        with pytest.raises(tl.ArgumentTypeError, match="'B' expects dtype float32, got float16"):
            elementwise.add_or_sub.par_compile([(meta(256, 64, dtype=F32), meta(256, 64))], ignore_error=ignore_error)
    with pytest.raises(tl.ArgumentTypeError, match="par_compile takes each configuration as a dict .* got int 5"):
        lazy_style.copy_block.par_compile([5])


def test_par_compile_ignoring_errors_logs_each_configuration_that_failed_to_build(
    sm90, caplog: pytest.LogCaptureFixture
) -> None:
    """`ignore_error=True`: a configuration that elaborates but cannot be built is None in the result, and a
    warning under the `tltyped` logger names it and why (here refused before nvcc: too much shared memory)."""
    from tests.kernels import lazy_style

    too_big = (256, 128, 512, 256, 128, 256)
    with caplog.at_level(logging.WARNING, logger="tltyped"):
        assert lazy_style.matmul.par_compile([too_big], ignore_error=True) == [None]
    (record,) = [r for r in caplog.records if r.name.startswith("tltyped")]
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith("matmul: configuration tuple (256, 128, 512, 256, 128, 256) failed to build: ")
    assert "main_kernel uses 589824 bytes of shared memory" in record.getMessage()


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [(dict(configs=None), tl.ArgumentTypeError, "par_compile takes a list of configurations, got NoneType None"),
     (dict(configs={"M": 256, "N": 32}), tl.ArgumentTypeError, "par_compile takes a list of configurations, got dict"),
     (dict(configs=[{"M": 256, "N": 32}], num_workers=-1), tl.ArgumentValueError,
      "par_compile's num_workers is the number of builds run at once, an int (0 or None: one per CPU), got int -1"),
     (dict(configs=[{"M": 256, "N": 32}], num_workers="2"), tl.ArgumentTypeError, "par_compile's num_workers .* got str '2'")],
    ids=["configs None", "one dict", "num_workers -1", "num_workers str"],
)
def test_par_compile_refuses_what_is_no_list_of_configurations_or_number_of_workers(
    sm90, arguments: dict[str, object], error: type[Exception], message: str,
) -> None:
    """Refused before anything builds, naming the kernel: Python's `'NoneType' object is not iterable` and the thread
    pool's `max_workers must be greater than 0` came out instead (a dict was taken for its keys)."""
    with pytest.raises(error, match="^add_or_sub: " + (message if ".*" in message else re.escape(message))):
        elementwise.add_or_sub.par_compile(**arguments)  # type: ignore[arg-type]


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread()
                    or signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="Ctrl-C raises KeyboardInterrupt in the main thread only")
def test_ctrl_c_during_parallel_builds_cancels_the_builds_not_started() -> None:
    """Ctrl-C while the tuner's candidates or `par_compile`'s configurations build, one worker at a time: the
    interrupt reaches the caller once the running build ends, without building every configuration queued behind it
    (on two cores, minutes of nvcc for a tuning space of twenty candidates)."""
    from tltyped.callpath.parallel import build_in_parallel

    ran: list[int] = []

    def build(index: int) -> int:
        ran.append(index)
        if index == 0:  # the user presses Ctrl-C during the first build, every build submitted by then
            time.sleep(0.3)
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        time.sleep(0.2)
        return index

    with pytest.raises(KeyboardInterrupt):
        build_in_parallel("scale", [functools.partial(build, i) for i in range(8)], workers=1)
    time.sleep(0.5)  # a build the pool still ran would have started by now
    assert ran == [0]


@pytest.mark.parametrize(("options", "message"), [
    (dict(pass_configs=["tl.disable_tma_lower"]), "pass_configs must be a dict of TileLang's pass configurations "
                                                  "(PassConfigKey, or its string) to their values, got list"),
    (dict(compile_flags=3), "compile_flags must be a string or a list of strings, got int 3")])
def test_jit_options_of_another_type_are_refused_at_decoration(options: dict[str, object], message: str) -> None:
    """Where a list of pass configs raised AttributeError ('list' object has no attribute 'items') and an int of flags
    TypeError."""
    with pytest.raises(tl.ArgumentTypeError, match="^" + re.escape(message)):
        tl.jit(**options)  # type: ignore[call-overload]
