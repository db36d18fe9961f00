"""`@tl.autotune(configs=[...])`, TileLang's decorator above `@tl.jit`: its configurations become tuning spaces of
the parameters they set (each its own where they are every combination, else one group searched as listed), for
eager kernels and lazy-style factories; what it cannot take is refused at decoration, naming it (CPU, sm_90a)."""

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.conftest import meta
from tests.kernels import eager_style as es
from tests.kernels import lazy_style as ks
from tltyped.autotuner import candidates, first_candidates, tuned


@tl.autotune(configs=[{"block": 32}, {"block": 64}])
@tl.jit
def first_of_blocks(A, firsts, block=None):
    """A tensor whose shape depends on a configured parameter (as blocksparse_gemm's mask does): calls give it."""
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    firsts: T.Tensor((N // block,), T.float32)
    with T.Kernel(N // block, threads=32) as bx:
        firsts[bx] = A[bx * block]


def test_an_eager_kernel_s_configured_parameters_are_tuned_consts(sm90) -> None:
    defaults = {p.name: p.default for p in es.gemv.signature.params}
    assert defaults["block_N"] == tl.Tune((2, 4)) and defaults["reduce_threads"] == tl.Tune((4, 8))
    a, b = meta(1024, dtype=torch.float16), meta(512, 1024, dtype=torch.float16)
    assert es.gemv(a, b).shape == (512,)  # every candidate elaborated, all returning alike
    first = es.gemv.lower(a, b).cuda_source  # inspection shows the first candidate, as for `tl.tune`
    assert first == es.gemv.lower(a, b, block_N=2, reduce_threads=4).cuda_source
    assert first != es.gemv.lower(a, b, block_N=4, reduce_threads=8).cuda_source  # a value given is not tuned


def test_a_configured_parameter_that_shapes_a_tensor_must_be_given_at_the_call(sm90) -> None:
    a, firsts = meta(256, dtype=torch.float32), meta(4, dtype=torch.float32)
    first_of_blocks.lower(a, firsts, 64)  # given: a value like any other
    with pytest.raises(tl.DefinitionError, match=r"first_of_blocks: a tensor annotation depends on 'block', so it "
                       r"cannot be tuned: pass a value"):
        first_of_blocks(a, firsts)


def test_a_factory_s_configured_argument_is_tuned_at_the_kernel_object_s_first_call(sm90) -> None:
    row_sum = tl.autotune(configs=[{"block": 64}, {"block": 128}])(ks.row_sum)  # in place of its tl.tune([32, 64])
    kernel = row_sum(256, 64)
    assert kernel.arguments["block"] == tl.Tune((64, 128))
    assert kernel(meta(256, 64, dtype=torch.float32)).shape == (256,)
    assert kernel.lower().cuda_source == ks.row_sum(256, 64, 64).lower().cuda_source


def test_configurations_that_are_not_every_combination_are_searched_as_listed(sm90) -> None:
    configs = [{"block_M": 64, "block_N": 64, "block_K": 32}, {"block_M": 128, "block_N": 64, "block_K": 32},
               {"block_M": 64, "block_N": 128, "block_K": 64}]
    kernel = tl.autotune(configs=configs)(ks.matmul)(256, 128, 64)
    assert candidates(kernel.arguments) == configs  # one group: its configurations, not their product
    a, b = meta(256, 64, dtype=torch.float16), meta(64, 128, dtype=torch.float16)
    assert kernel(a, b).shape == (256, 128)
    assert kernel.lower().cuda_source == ks.matmul(256, 128, 64, 64, 64, 32).lower().cuda_source
    # every combination: each parameter its own space, so one given leaves the others searched
    product = [{"block_M": m, "block_N": n, "block_K": 32} for m in (64, 128) for n in (64, 128)]
    spaces = tuned(tl.autotune(configs=product)(ks.matmul)(256, 128, 64, block_M=64).arguments)
    assert spaces == {"block_N": tl.Tune((64, 128)), "block_K": tl.Tune((32,))}
    assert candidates(spaces) == [{"block_N": 64, "block_K": 32}, {"block_N": 128, "block_K": 32}]


def test_a_member_of_a_group_given_a_value_leaves_the_configurations_listed_with_it(sm90) -> None:
    """Configurations that are not every combination: giving one member searches the others over the
    configurations that have the given value, never a combination no configuration lists."""
    configs = [{"block_M": 64, "block_N": 64}, {"block_M": 128, "block_N": 128}, {"block_M": 64, "block_N": 128}]
    matmul = tl.autotune(configs=[{**c, "block_K": 32} for c in configs])(ks.matmul)
    assert candidates(matmul(256, 256, 64, block_M=128).arguments) == [{"block_N": 128, "block_K": 32}]
    assert candidates(matmul(256, 256, 64, block_M=64).arguments) == [{"block_N": 64, "block_K": 32},
                                                                      {"block_N": 128, "block_K": 32}]
    assert candidates(matmul(256, 256, 64, block_N=64).arguments) == [{"block_M": 64, "block_K": 32}]
    # a value no configuration lists: the others' configurations as listed
    assert candidates(matmul(256, 256, 64, block_M=32).arguments) == [{"block_N": 64, "block_K": 32},
                                                                      {"block_N": 128, "block_K": 32}]
    # what inspection and the torch op stand on: the first configuration listed with the given value
    assert first_candidates(matmul(256, 256, 64, block_M=128).arguments)["block_N"] == 128
    # a value equal to a listed one agrees with it; a space given at the call is searched on its own
    group = ("a", "b")
    b = tl.Tune((2, 3), group, ((1, 2), (4, 3)))
    assert candidates({"a": 1.0, "b": b}) == [{"b": 2}]
    assert candidates({"a": tl.Tune((5, 6)), "b": b}) == [{"a": 5, "b": 2}, {"a": 5, "b": 3}, {"a": 6, "b": 2},
                                                           {"a": 6, "b": 3}]


def test_what_autotune_refuses_it_names() -> None:
    tune_block = tl.autotune(configs=[{"block": 32}, {"block": 64}])
    with pytest.raises(tl.DefinitionError, match=r"autotune: row_sum has no parameter 'blocks'"):
        tl.autotune(configs=[{"blocks": 32}])(ks.row_sum)
    with pytest.raises(tl.DefinitionError, match=r"put it above @tl.jit \(it got function"):
        tune_block(lambda block: block)
    with pytest.raises(tl.ArgumentTypeError, match=r"configs must be a non-empty list of dicts, got dict"):
        tl.autotune(configs={"block": [32, 64]})  # type: ignore[arg-type]
    with pytest.raises(tl.DefinitionError, match=r"every configuration sets the same parameters; \{'block': 64\} sets "
                       r"no 'threads'"):
        tl.autotune(configs=[{"block": 32, "threads": 128}, {"block": 64}])
    with pytest.raises(tl.ArgumentTypeError, match=r"a configuration's block=list \[32\] is unhashable"):
        tl.autotune(configs=[{"block": [32]}])
    with pytest.raises(tl.ArgumentTypeError, match=r"unexpected keyword warmups"):
        tl.autotune(configs=[{"block": 32}], warmups=3)

    @tl.jit(out_idx=-1)
    def follows(N, block, dtype):
        @T.prim_func
        def main(A: T.Tensor((N,), dtype)):
            with T.Kernel(1, threads=block):
                pass

        return main

    with pytest.raises(tl.DefinitionError, match=r"follows: non-default argument follows default argument.*give it a "
                       r"default, or make it keyword-only"):
        tune_block(follows)


def test_per_configuration_pass_configs_are_not_tuned_and_that_is_said() -> None:
    with pytest.warns(UserWarning, match=r"the configurations' pass_configs are not tuned"):
        tune = tl.autotune(configs=[{"block": b, "pass_configs": {"tl.disable_warp_specialized": w}}
                                    for b in (32, 64) for w in (True, False)])
    assert tune(ks.row_sum)(256, 64).arguments["block"] == tl.Tune((32, 64))  # one candidate per block


def test_a_warning_names_the_line_of_code_run_by_python_c() -> None:
    """Code that is no file (`python -c`, a notebook cell, exec) is the program's own: a warning names its line."""
    code = "import tltyped as tl\ntl.autotune(configs=[{'block': 32}], ref_prog=lambda x: x)"
    run = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith("<string>:2: UserWarning: autotune: ref_prog is not run"), run.stderr


def test_tilelang_s_reference_check_is_not_run_and_says_so() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tl.autotune(configs=[{"block": 32}], ref_prog=lambda x: x, warmup=3, rep=20, cache_input_tensors=True)
    assert [w.filename for w in caught] == [__file__]
    assert [str(w.message) for w in caught] == [
        "autotune: ref_prog is not run; tltyped checks no candidate against a reference (check the tuned kernel's "
        "result yourself)"
    ]
