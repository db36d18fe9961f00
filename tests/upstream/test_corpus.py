"""TileLang's examples (corpus.py): what CORPUS.md lists as lowered by tltyped still lowers, and the harness itself.

The regression guard runs, on CPU, the examples CORPUS.md lists as lowered by
tltyped (a kernel count, not FAIL or timeout): every one with
TLTYPED_CORPUS=all, else a deterministic subset that keeps CI within its
budget: every CI_STRIDE-th of them in CORPUS.md's (sorted) order, starting at
the first. `python -m tests.upstream.corpus --write` runs them all and
rewrites CORPUS.md.
"""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.upstream import corpus
from tests.upstream.corpus import CORPUS_MD, Result
from tests.upstream.source import REPO, migrate, root

CI_STRIDE = 4
"""CI lowers every CI_STRIDE-th file CORPUS.md lists as lowered (about 4 minutes on 2 cores; see CORPUS.md's time)."""
FILE_TIMEOUT = 300.0
"""Seconds one file may run here: the longest (deepseek_v32/sparse_mla_fwd_pipelined.py) takes about 40 s beside one
other file, and past 90 s (corpus.TIMEOUT) on two cores shared with the other test worker. Still a hang's bound."""


def selection() -> list[str]:
    listed = corpus.lowered_by_tltyped(CORPUS_MD.read_text()) if CORPUS_MD.exists() else []
    return listed if os.environ.get("TLTYPED_CORPUS") == "all" else listed[::CI_STRIDE]


def test_what_corpus_md_lists_as_lowered_still_lowers(tmp_path: Path) -> None:
    """Run by the corpus command in a process of its own, with caches of its own: its children are forked from a
    process that has run nothing else (no thread of another test holding a lock), and share no cache with the tests
    running beside it."""
    files = selection()
    if not files:
        pytest.skip("CORPUS.md lists no file as lowered by tltyped")
    env = {k: v for k, v in os.environ.items() if k not in ("TLTYPED_CACHE_DIR", "TILELANG_CACHE_DIR")}
    command = [sys.executable, "-m", "tests.upstream.corpus", "--modes", "tltyped", "--timeout", str(FILE_TIMEOUT),
               "--json", str(tmp_path / "results.json")]
    run = subprocess.run([*command, *files], cwd=REPO, env=env, capture_output=True, text=True, timeout=3600, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = [Result(**r) for r in json.loads((tmp_path / "results.json").read_text())]
    assert [r.file for r in results] == files
    broken = [f"{r.file}: {r.lowered} kernels, {r.phase}: {r.error}\n{r.stacks}".rstrip() for r in results if not r.lowers]
    assert not broken, "no longer lowered by tltyped:\n" + "\n".join(broken)


# --- the harness's own logic ---------------------------------------------------------------------------------------


def test_the_corpus_is_every_example_but_checks() -> None:
    files = corpus.example_files()
    assert files and all(f.startswith("examples/") and f.endswith(".py") for f in files)
    assert not any(Path(f).name.startswith("test_") or Path(f).name == "conftest.py" for f in files)
    assert files == sorted(files)


def test_migration_keeps_every_line_and_rewrites_only_the_decorators_and_imports() -> None:
    text = '''import torch
import tilelang as tl
from tilelang import jit
from tilelang import language as T
from tilelang.autotuner import autotune


@autotune(
    configs=[{"b": 1}],
)
@tl.jit(
    out_idx=[-1],
    verbose=True,
)
def f(M, b):
    @T.prim_func
    def k(A: T.Tensor((M,), "float32")):
        pass
    return k


def outer():
    @jit
    def g(A):
        pass
    return tl.compile(g)
'''
    out = migrate(text)
    assert out.count("\n") == text.count("\n")
    ast.parse(out)
    assert out.splitlines()[0] == "import torch; import tltyped"
    assert "import tltyped.language as T" in out
    assert "@tltyped.jit(out_idx=[-1])" in out and "verbose" not in out  # TileLang's logging keyword dropped
    assert '@tltyped.autotune(\n    configs=[{"b": 1}],\n)' in out  # TileLang's autotune -> tltyped's, arguments kept
    assert "    @tltyped.jit\n" in out
    assert "tl.compile(g)" in out  # calls stay TileLang's
    assert out.splitlines()[14] == "def f(M, b):"  # same line as upstream


def test_every_example_migrates_to_valid_python_of_the_same_lines() -> None:
    for file in corpus.example_files():
        text = (corpus.examples_dir().parent / file).read_text()
        out = migrate(text)
        assert out.count("\n") == text.count("\n"), file
        ast.parse(out)


def test_cuda_is_the_meta_device() -> None:
    with corpus.meta_cuda_mode():
        tensors = [
            torch.randn(2, 3, device="cuda"),
            torch.empty(4, device=torch.device("cuda", 0)),
            torch.zeros(2).cuda(),
            torch.ones(2).to("cuda"),
            torch.ones(2).to(device="cuda:0"),
            torch.ones(2, dtype=torch.float16).to(torch.device("cuda"), torch.float32),
        ]
        cpu = torch.ones(2)
    assert all(t.is_meta for t in tensors), [t.device for t in tensors]
    assert tensors[-1].dtype == torch.float32 and not cpu.is_meta
    torch.testing.assert_close(tensors[0], torch.empty(2, 3, device="meta"))  # passes: shapes only


def test_meta_outputs_bind_dyn_dims_from_the_inputs() -> None:
    import tilelang.language as T

    n = T.dynamic("n")

    @T.prim_func
    def k(A: T.Tensor((n, 8), "float16"), B: T.Tensor((n * 2, 8), "float32")):  # no __future__ import here: TileLang reads these
        with T.Kernel(1) as _:
            pass

    a = torch.empty(5, 8, dtype=torch.float16, device="meta")
    (b,) = corpus.meta_outputs(k, {0: a}, [1])
    assert b.shape == (10, 8) and b.dtype == torch.float32 and b.is_meta


def test_lowered_files_are_read_back_from_the_table() -> None:
    text = "\n".join([
        "| file | TileLang | tltyped | reason (TileLang lowers, tltyped does not) |",
        "|---|---|---|---|",
        "| a/x.py | 2 | 2 after |  |",
        "| a/y.py | 1 | 0 FAIL | TypeError: no |",
        "| a/z.py | 0 before | 0 before |  |",
        "| b/w.py | 1 | 3 |  |",
        "| b/v.py | 1 | 1 FAIL | LoweringError: a |",
    ])
    assert corpus.lowered_by_tltyped(text) == ["examples/a/x.py", "examples/b/w.py"]


def test_results_render_with_the_share_tltyped_lowers() -> None:
    results = [
        Result("examples/a.py", "tilelang", 1), Result("examples/a.py", "tltyped", 1, "RuntimeError: item", "after"),
        Result("examples/b.py", "tilelang", 2), Result("examples/b.py", "tltyped", 0, "LoweringError: k: bad | x", "lower"),
        Result("examples/c.py", "tilelang", 0, "ModuleNotFoundError: triton", "before"),
        Result("examples/c.py", "tltyped", 0, "ModuleNotFoundError: triton", "before"),
    ]
    assert corpus.summary(results)[:2] == (2, 1)
    text = corpus.render(results, 60.0)
    assert "tltyped lowers 1 (50.0%)" in text
    assert "| b.py | 2 | 0 FAIL | LoweringError: k: bad \\| x |" in text
    assert corpus.lowered_by_tltyped(text) == ["examples/a.py"]


def test_an_empty_corpus_renders() -> None:
    assert "tltyped lowers 0 (0.0%)" in corpus.render([], 0.0)


def test_gpu_mode_reports_json_and_markdown(tmp_path: Path) -> None:
    results = [Result("examples/a.py", "gpu", seconds=1.5), Result("examples/b.py", "gpu", error="AssertionError: x", phase="check")]
    data, text = corpus.gpu_report(results)
    assert data["files"] == 2 and data["passed"] == 1 and data["results"][1]["error"] == "AssertionError: x"
    assert "1 of 2 files pass" in text and "| b.py | AssertionError: x |" in text
    md = tmp_path / "CORPUS.md"
    md.write_text("| file | TileLang | tltyped | reason |\n| g/a.py | 1 | 1 |  |\n")
    assert corpus.gpu_files(md) == ["examples/g/a.py"]
    assert corpus.gpu_files(tmp_path / "none.md") == []


def test_sources_default_to_the_shared_folder() -> None:
    if os.environ.get("TILELANG_SRC"):
        pytest.skip("TILELANG_SRC overrides the default")
    assert root() == Path(__file__).resolve().parents[3] / "shared" / "tilelang-a35008a"


def test_test_files_give_one_unit_per_test_called_with_the_first_parameters(tmp_path: Path) -> None:
    path = tmp_path / "test_corpus_sample_units.py"
    path.write_text('''import pytest
import tilelang

pytestmark = pytest.mark.skipif(False, reason="a module's mark")


def helper():
    pass


@pytest.mark.parametrize("block", [64, 128])
@pytest.mark.parametrize("m, n", [(1, 2), (3, 4)])
def test_pairs(m, n, block, dtype="float16"):
    return m, n, block, dtype


@pytest.mark.parametrize("x", [pytest.param(7, id="seven"), 8])
def test_param(x):
    return x


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.skipif(True, reason="No device exists for target cuda")
def test_needs_a_device():
    pass


def test_fixture(tmp_dir):
    pass


@tilelang.jit
def test_kernel(A):
    pass


class TestNotCollected:
    def test_method(self):
        pass
''')
    units = corpus.units_of(path, "t.py")
    assert units == ["t.py::test_pairs", "t.py::test_param", "t.py::test_skipped", "t.py::test_needs_a_device", "t.py::test_fixture"]
    try:
        module = corpus.load_test_module(path, path.read_text())
    finally:
        sys.modules.pop(path.stem, None)
    assert corpus.call_arguments(module.test_pairs, module) == {"m": 1, "n": 2, "block": 64}  # the module's mark too
    assert module.test_pairs(**corpus.call_arguments(module.test_pairs)) == (1, 2, 64, "float16")
    assert corpus.call_arguments(module.test_param) == {"x": 7}
    assert corpus.call_arguments(module.test_needs_a_device) == {}  # CUDA is faked: a device's absence is no skip
    with pytest.raises(pytest.skip.Exception, match="not today"):
        corpus.call_arguments(module.test_skipped)
    with pytest.raises(corpus.NeedsFixture, match="tmp_dir"):
        corpus.call_arguments(module.test_fixture)


def test_the_readme_states_the_shares_the_corpora_record() -> None:
    """The README's counts of what each corpus lowers are the headlines CORPUS.md and CORPUS_TESTS.md were last
    written with (regenerating a corpus changes them), and its count of TileLang's kernels is kernels.py's."""
    import re

    from tests.upstream.kernels import CASES

    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())

    def headline(md: Path, unit: str) -> tuple[str, str]:
        found = re.search(rf"\*\*Of the (\d+) {unit} TileLang lowers, tltyped lowers (\d+) ", md.read_text())
        assert found, f"{md.name} has no headline"
        return found.group(1), found.group(2)

    files, files_lowered = headline(CORPUS_MD, "files")
    assert f"of the {files} files TileLang lowers, tltyped lowers {files_lowered})" in readme
    units, units_lowered = headline(corpus.CORPUS_TESTS_MD, "units")
    assert f"of the {units} tests TileLang lowers, tltyped lowers {units_lowered}." in readme
    assert f"): {len(CASES)} kernels lowered at two shapes" in readme
