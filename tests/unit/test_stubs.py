"""Generated .pyi stubs: what they say, and that a type checker without the plugin accepts them."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mypy import api as mypy_api

import tltyped as tl
from tests.pyright.checkers import marked_lines, pyright, shown_type
from tltyped.stubs import render_stub

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["add", "flash_attention", "gemm", "gemm_in_body", "interleave", "rms_norm", "softmax", "split_k", "tuple_outputs"]


def stub_of(name: str) -> str:
    return render_stub(importlib.import_module(f"examples.{name}"))


def test_derived_dims_read_as_their_expression() -> None:
    stub = stub_of("interleave")
    assert 'Out: tl.Tensor[tl.float32, Annotated[Any, "N * 2 + 1"]],' in stub
    assert 'N = TypeVar("N", bound=int)  # dyn' in stub
    assert "Checks Out.shape[0] == 2 * A.shape[0] + 1." in stub


def test_in_body_annotations_become_the_signature() -> None:
    stub = stub_of("gemm_in_body")
    assert "A: tl.Tensor[tl.float16, M, K]," in stub
    assert "C: tl.Tensor[Any, M, N]," in stub  # dtype computed from the const out_dtype
    assert "block_M: int = ...," in stub
    assert "-> None:" in stub


def test_signature_form_keeps_its_return_type() -> None:
    stub = stub_of("gemm")
    assert "-> tl.Tensor[tl.float32, M, N]:" in stub
    assert "-> tuple[tl.Tensor[DT, M, N], tl.Tensor[tl.float32, Any, N]]:" in stub_of("rms_norm")  # `Any`: any size
    assert 'K = TypeVar("K", bound=int)' in stub and 'M = TypeVar("M")' in stub


def test_compiled_kernels_take_the_runtime_parameters() -> None:
    """`fn.compile(...)`'s kernel takes the tensors, dyn scalars and pointers: its parameters in the stub."""
    stub = ast.parse(stub_of("gemm_in_body"))
    functions = {node.name: node for node in stub.body if isinstance(node, ast.FunctionDef)}
    assert [a.arg for a in functions["_gemm_runtime"].args.args] == ["A", "B", "C"]
    assert ast.unparse(functions["gemm"].decorator_list[0]) == "runtime_parameters(_gemm_runtime)"
    add = ast.parse(stub_of("add"))
    runtime = {node.name: [a.arg for a in node.args.args] for node in add.body if isinstance(node, ast.FunctionDef)}
    assert runtime["_scale_runtime"] == ["X", "alpha"] and runtime["scale"] == ["X", "alpha", "block"]


def test_stubs_of_every_example_check_under_mypy_strict_without_the_plugin(tmp_path: Path) -> None:
    for name in EXAMPLES:
        (tmp_path / f"{name}.pyi").write_text(stub_of(name))
    stdout, stderr, status = mypy_api.run(
        ["--config-file", str(ROOT / "pyproject.toml"), "--strict", "--no-incremental",
         *(str(p) for p in sorted(tmp_path.glob("*.pyi")))]
    )
    assert status == 0, stdout + stderr


def test_cli_writes_into_a_stubs_folder_by_module_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not beside the module (a .pyi there hides the .py from mypy): typings/<module path>.pyi by default."""
    from tltyped.stubs.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main(["examples.interleave", "examples.gemm"]) == 0
    assert (tmp_path / "typings" / "examples" / "interleave.pyi").read_text() == stub_of("interleave")
    assert (tmp_path / "typings" / "examples" / "gemm.pyi").read_text() == stub_of("gemm")
    assert not (ROOT / "examples" / "interleave.pyi").exists()
    out = tmp_path / "elsewhere" / "one.pyi"
    assert main(["examples.interleave", "-o", str(out)]) == 0
    assert out.read_text() == stub_of("interleave")


PACKAGED_MODULE = '''\
from typing import TypeVar

import tltyped as tl
import tltyped.language as T

from .sizes import BLOCK

N = TypeVar("N")


@tl.jit
def copy(A: tl.Tensor[tl.float32, N], B: tl.Tensor[tl.float32, N]) -> None:
    with T.Kernel(T.ceildiv(A.shape[0], BLOCK), threads=BLOCK) as bx:
        for i in T.Parallel(BLOCK):
            B[bx * BLOCK + i] = A[bx * BLOCK + i]
'''


def test_cli_given_a_file_of_a_package_writes_the_stub_of_its_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m tltyped.stubs proj/ops/kernels.py` is the module `proj.ops.kernels` (each folder above it with an
    `__init__.py` is a package, as mypy reads a file's module), so its stub goes where a type checker looks for that
    module, typings/proj/ops/kernels.pyi, and its relative imports resolve."""
    from tltyped.stubs.__main__ import main

    package = tmp_path / "proj" / "ops"
    package.mkdir(parents=True)
    for folder in (tmp_path / "proj", package):
        (folder / "__init__.py").write_text("")
    (package / "sizes.py").write_text("BLOCK = 128\n")
    (package / "kernels.py").write_text(PACKAGED_MODULE)
    monkeypatch.chdir(tmp_path)
    assert main([str(package / "kernels.py")]) == 0
    stub = tmp_path / "typings" / "proj" / "ops" / "kernels.pyi"
    assert "def copy(\n    A: tl.Tensor[tl.float32, N],\n    B: tl.Tensor[tl.float32, N],\n) -> None:" in stub.read_text()
    assert not (tmp_path / "typings" / "kernels.pyi").exists()


def test_cli_writes_the_stub_of_a_package_importing_the_module_kernels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`from .kernels import copy` in a package's `__init__.py`: pyright resolves that relative import beside the
    package's source, never in typings/, so the package's stub is written too (its `__init__.pyi`: as `ops.pyi`,
    pyright would find no stub of its submodules), importing the kernel from the module's stub by its absolute
    name (bound to the package's name for it) and re-exporting its submodules; a package above it that imports no
    kernel gets none; a package stub written by hand is left as it is."""
    from tltyped.stubs.__main__ import main

    package = tmp_path / "reexporting_lib" / "ops"
    package.mkdir(parents=True)
    (tmp_path / "reexporting_lib" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from .kernels import copy as copy_kernel\n")
    (package / "sizes.py").write_text("BLOCK = 128\n")
    (package / "kernels.py").write_text(PACKAGED_MODULE)
    monkeypatch.chdir(tmp_path)
    assert main([str(package / "kernels.py")]) == 0
    typings = tmp_path / "typings" / "reexporting_lib"
    assert "def copy(" in (typings / "ops" / "kernels.pyi").read_text()
    stub = (typings / "ops" / "__init__.pyi").read_text()
    assert "import reexporting_lib.ops.kernels\n" in stub and "copy_kernel = reexporting_lib.ops.kernels.copy\n" in stub
    assert "from reexporting_lib.ops import kernels as kernels\n" in stub
    assert "from reexporting_lib.ops import sizes as sizes\n" in stub
    assert "def copy" not in stub
    assert sorted(p.name for p in typings.rglob("*.pyi")) == ["__init__.pyi", "kernels.pyi"]
    # a package stub written by hand is not replaced: it was not asked for by name
    (typings / "ops" / "__init__.pyi").write_text("from typing import Any\ncopy_kernel: Any\n")
    assert main([str(package / "kernels.py")]) == 0
    assert (typings / "ops" / "__init__.pyi").read_text() == "from typing import Any\ncopy_kernel: Any\n"
    assert "left " in capsys.readouterr().err


@pytest.mark.parametrize(("target", "message"), [
    ("os", "os defines no jit function"),  # its stub would hide the standard library's types from pyright
    ("no_such_module_here", "No module named 'no_such_module_here'"),
    ("missing.py", "No such file or directory"),
])
def test_cli_writes_nothing_for_a_module_without_jit_functions_or_not_found(
    target: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tltyped.stubs.__main__ import main

    monkeypatch.chdir(tmp_path)
    assert main([target]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "typings").exists()


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_jit_function_of_the_module_is_stubbed(name: str) -> None:
    module = importlib.import_module(f"examples.{name}")
    stub = stub_of(name)
    jitted = [n for n, v in vars(module).items() if isinstance(v, tl.JitFunction)]
    assert jitted and all(f"def {n}(" in stub for n in jitted)


DOCSTRINGS = ["C = A \\ B, a backslash", 'C = A "times" B', 'a """ inside', "a ''' inside", 'ends with a quote"']


def test_docstrings_read_back_from_the_stub_as_written(tmp_path: Path) -> None:
    """Whatever a kernel's docstring holds (backslashes, quotes, a closing quote at its end), the stub parses
    and each function's docstring reads back as the kernel's."""
    from tltyped.stubs.__main__ import main

    kernels = ["import tltyped as tl", ""]
    for number, doc in enumerate(DOCSTRINGS):
        kernels += ["@tl.jit", f"def kernel{number}(X: tl.Tensor[tl.float32, 8]) -> None:", f"    {doc!r}", "    pass", ""]
    (tmp_path / "quoted_kernels.py").write_text("\n".join(kernels))
    stub = tmp_path / "quoted_kernels.pyi"
    assert main([str(tmp_path / "quoted_kernels.py"), "-o", str(stub)]) == 0
    functions = [node for node in ast.parse(stub.read_text()).body if isinstance(node, ast.FunctionDef)]
    kernels = [f for f in functions if f.decorator_list]  # each beside its compiled kernels' parameters
    assert [ast.get_docstring(f, clean=False) for f in kernels] == DOCSTRINGS


SHARED_DIM_MODULE = '''\
from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N")
R = TypeVar("R", bound=tl.dyn[int])


@tl.jit
def fixed(A: tl.Tensor[tl.float32, N]) -> None:
    (n,) = A.shape


@tl.jit
def rows(A, B):
    N = T.dynamic("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]


@tl.jit
def halves(A):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    Lo = T.empty((N // 2,), T.float32)
    Hi = T.empty((N // 2,), T.float32)
    return Lo, Hi


def helper(x: int) -> int:  # the module's other names: not stubbed, still importable
    return x


LIMIT = 4
'''

CALLER = '''\
from typing import TypeVar

import torch

import tltyped as tl
from shared_dims import LIMIT, fixed, halves, helper, rows

D = TypeVar("D")


def use(a: tl.Tensor[tl.float32, D], b: torch.Tensor) -> None:
    fixed(a)  # a caller's own unbound dim fits the const kernel
    rows(b, b)
    lo, hi = halves(b)
    lo.sum() + hi.sum()
    rows(b)  # mistake
    helper(LIMIT)
'''


def test_a_dim_dyn_in_one_kernel_and_const_in_another_keeps_each_bound_and_outputs_are_tensors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shared_dims.py").write_text(SHARED_DIM_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    stub = render_stub(importlib.import_module("shared_dims"))
    assert 'N = TypeVar("N")\n' in stub and 'N_dyn = TypeVar("N_dyn", bound=int)' in stub
    assert "A: tl.Tensor[tl.float32, N]," in stub and "A: tl.Tensor[tl.float32, N_dyn]," in stub
    assert "-> tuple[tl.Tensor[Any, *tuple[Any, ...]], tl.Tensor[Any, *tuple[Any, ...]]]:" in stub
    (tmp_path / "typings").mkdir()
    (tmp_path / "typings" / "shared_dims.pyi").write_text(stub)
    (tmp_path / "caller.py").write_text(CALLER)
    (tmp_path / "pyrightconfig.json").write_text('{"stubPath": "typings"}')
    errors = [d for d in pyright(tmp_path / "caller.py", config=tmp_path / "pyrightconfig.json") if d.severity == "error"]
    mistakes = [n for n, line in enumerate(CALLER.splitlines(), start=1) if line.endswith("# mistake")]
    assert [d.line for d in errors] == mistakes, errors


RETURNS_DIMS = '''\
from typing import TypeVar

M = TypeVar("M")
'''

RETURNS_MODULE = '''\
# pyright: reportRedeclaration=false
from typing import Tuple, TypeVar

import returns_dims as dims
import tltyped as tl
import tltyped.language as T

N = TypeVar("N", bound=tl.dyn[int])
DT = TypeVar("DT", tl.float16, tl.bfloat16)
F = TypeVar("F", bound=tl.float32)
F32 = tl.float32


@tl.jit
def pair(X: tl.Tensor[tl.float32, N, dims.M]) -> Tuple[tl.Tensor[F32, N, dims.M], tl.Tensor[tl.float32, 4]]:
    n, m = X.shape
    A = T.empty((n, m), tl.float32)
    B = T.empty((4,), tl.float32)
    return A, B


@tl.jit
def half(X: tl.Tensor[DT, N], Y: tl.Tensor[DT, N]) -> None:
    pass


@tl.jit
def scale(X: tl.Tensor[F, N]) -> None:
    pass


@tl.jit
def zero(A):  # its const N makes the dyn one N_dyn
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
'''

RETURNS_CALLER = '''\
from typing import Literal

import tltyped as tl
from returns_kernels import half, pair

X = tl.Tensor[tl.float32, Literal[8], Literal[2]]


def use(x: X, f: tl.Tensor[tl.float32, Literal[8]], h: tl.Tensor[tl.bfloat16, Literal[8]]) -> None:
    reveal_type(pair(x))  # reveal: tuple[Tensor[float32, Literal[8], Literal[2]], Tensor[float32, Literal[4]]]
    half(h, h)
    half(f, f)  # mistake
'''

UNION_BOUND_MODULE = '''\
from typing import TypeVar, Union

import tltyped as tl

N = TypeVar("N")
H = TypeVar("H", bound=tl.float16 | tl.bfloat16)
U = TypeVar("U", bound=Union[tl.float16, tl.bfloat16])


@tl.jit
def half(X: tl.Tensor[H, N], Y: tl.Tensor[U, N]) -> None:
    pass
'''


def test_a_dtype_variable_bound_to_a_union_keeps_its_dtypes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bound=tl.float16 | tl.bfloat16` (or `Union[...]`) limits a dtype variable to those dtypes, as constraints
    do: its stub keeps them, so that a checker reading the stub refuses a float32 tensor as one reading the source."""
    (tmp_path / "union_bound_kernels.py").write_text(UNION_BOUND_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    stub = render_stub(importlib.import_module("union_bound_kernels"))
    assert 'H = TypeVar("H", bound=tl.float16 | tl.bfloat16)' in stub
    assert 'U = TypeVar("U", bound=tl.float16 | tl.bfloat16)' in stub


MYPY_CONFIG = '''\
[mypy]
strict = True
{setting}

[mypy-tltyped.*]
follow_imports = silent

[mypy-tilelang.*,tvm.*,tvm_ffi.*]
ignore_missing_imports = True
follow_imports = skip
'''


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mypy cache of this module's checks: torch's modules are analysed once, not in every check. Made afresh
    for each session, as mypy reads the plugin's package from it unchecked (it fingerprints the entry module only)."""
    return tmp_path_factory.mktemp("mypy-cache")


def mypy_lines(folder: Path, setting: str, cache: Path) -> tuple[dict[int, str], list[str]]:
    """mypy on caller.py in `folder` under MYPY_CONFIG with `setting`: `{line: revealed type}` of the caller,
    and the `file:line` of each error in `folder` (the stub's own included; not tltyped's). A cache under `cache`
    per setting: mypy drops a cache made with other plugins whole."""
    (folder / "mypy.ini").write_text(MYPY_CONFIG.format(setting=setting))
    cache_dir = cache / re.sub(r"\W+", "_", setting)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir", str(cache_dir), "caller.py"],
        capture_output=True, text=True, cwd=folder, timeout=600,
        env={**os.environ, "MYPYPATH": os.pathsep.join([str(ROOT), str(ROOT / "stubs")])},
    )
    found = [line.split(": ", 2) for line in done.stdout.splitlines() if re.match(r"[^ :]+:\d+: ", line)]
    reveals = {int(where.split(":")[1]): shown_type(text.partition('Revealed type is "')[2].rstrip('"'))
               for where, severity, text in found if severity == "note" and "Revealed type" in text}
    return reveals, [where for where, severity, _ in found if severity == "error" and not Path(where).is_absolute()]


def test_returns_and_dtype_variables_read_as_the_frontend_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mypy_cache: Path
) -> None:
    """A return annotation spelled with names the stub doesn't define (`typing.Tuple`, an alias, another module's
    TypeVar) or a bare int dim is the type it stands for, its dims the parameters' TypeVars (`N_dyn`); a
    constrained or bound dtype variable keeps its dtypes. mypy with the plugin on the source, and mypy and pyright
    with the stub, type the calls alike."""
    (tmp_path / "returns_dims.py").write_text(RETURNS_DIMS)
    (tmp_path / "returns_kernels.py").write_text(RETURNS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    stub = render_stub(importlib.import_module("returns_kernels"))
    assert "-> tuple[tl.Tensor[tl.float32, N_dyn, M], tl.Tensor[tl.float32, Literal[4]]]:" in stub
    assert 'DT = TypeVar("DT", bound=tl.float16 | tl.bfloat16)' in stub and 'F = TypeVar("F", bound=tl.float32)' in stub
    caller = tmp_path / "caller.py"
    caller.write_text(RETURNS_CALLER)
    expected = {line: shown_type(text) for line, text in marked_lines(caller, "reveal").items()}
    mistakes = [f"caller.py:{n}" for n, line in enumerate(RETURNS_CALLER.splitlines(), start=1) if line.endswith("# mistake")]
    with_plugin = mypy_lines(tmp_path, "plugins = tltyped.mypy_plugin", mypy_cache)
    assert with_plugin == (expected, mistakes * 2)  # the plugin reports each argument of the wrong dtype
    (tmp_path / "typings").mkdir()
    (tmp_path / "typings" / "returns_kernels.pyi").write_text(stub)
    assert mypy_lines(tmp_path, "mypy_path = typings", mypy_cache) == (expected, mistakes)
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"stubPath": "typings", "extraPaths": [str(ROOT), str(ROOT / "stubs")]}))
    found = pyright(caller, config=tmp_path / "pyrightconfig.json")
    revealed = {d.line: shown_type(d.message.partition('" is "')[2].rstrip('"')) for d in found if d.severity == "information"}
    assert revealed == expected
    assert sorted({f"caller.py:{d.line}" for d in found if d.severity == "error"}) == mistakes, found


def test_keyword_only_parameters_stay_keyword_only() -> None:
    """In the jit function and in its compiled kernels' runtime parameters: a type checker refuses them by
    position, as the call does."""
    stub = render_stub(importlib.import_module("tests.kernels.keyword_only"))
    assert "def scaled(\n    A: tl.Tensor[tl.float32, M],\n    *,\n    alpha: float = ...,\n    block: int = ...,\n)" in stub
    assert "def _scaled_runtime(\n    A: tl.Tensor[tl.float32, M],\n    *,\n    alpha: float = ...,\n)" in stub


AHEAD_MODULE = '''\
from typing import TypeVar

import tltyped as tl
import tltyped.language as T

M = TypeVar("M")
N = TypeVar("N")
K = TypeVar("K", bound=tl.dyn[int])


@tl.jit
def gemm(
    A: tl.Tensor[tl.float16, M, K], B: tl.Tensor[tl.float16, K, N], block_M: int = 128, block_N: int = 128,
) -> tl.Tensor[tl.float32, M, N]:
    (m, _), (_, n) = A.shape, B.shape
    C = T.empty((m, n), tl.float32)
    return C


@tl.jit
def sum_and_difference(
    X: tl.Tensor[tl.float32, K], Y: tl.Tensor[tl.float32, K], scale: tl.dyn[float], block: int = 128,
) -> tuple[tl.Tensor[tl.float32, K], tl.Tensor[tl.float32, K]]:
    (n,) = X.shape
    S = T.empty((n,), tl.float32)
    D = T.empty((n,), tl.float32)
    return S, D
'''

AHEAD_CALLER = '''\
from typing import Literal

import tltyped as tl
from ahead_kernels import gemm, sum_and_difference

A = tl.Tensor[tl.float16, Literal[1024], Literal[512]]
B = tl.Tensor[tl.float16, Literal[512], Literal[256]]


def use(a: A, b: B, v: tl.Tensor[tl.float32, Literal[100]]) -> None:
    kernel = gemm.compile(a, b)
    reveal_type(kernel(a, b))  # reveal: Tensor[float32, Literal[1024], Literal[256]]
    by_dims = gemm.compile(M=1024, N=256, K=512)
    reveal_type(by_dims(a, b))  # reveal: Any
    c: tl.Tensor[tl.float32, Literal[1024], Literal[256]] = by_dims(a, b)
    pair = sum_and_difference.compile(v, v, 2.0)
    s, d = pair(v, v, 0.5)
    reveal_type(s)  # reveal: Tensor[float32, Literal[100]]
    print(c, d, gemm.lower(M=1024, N=256, K=512).cuda_source)
    kernel(a, a)  # mistake: B's dim 0 is K, A's dim 1 (the stub's runtime parameters say so)
'''


@pytest.mark.parametrize("stubbed", [False, True], ids=["source", "stub"])
def test_kernels_compiled_ahead_of_a_call_type_alike_without_the_plugin(
    stubbed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mypy_cache: Path
) -> None:
    """`fn.compile(...)`, given tensors or dims by name, under plain mypy and pyright (basic and strict), from the
    kernel's source or its stub: nothing is left to infer (mypy's `Need type annotation`), no type is Unknown
    (pyright strict), and a call by dims gives no dims of the kernel's own TypeVars, which its caller cannot
    solve. The stub's `runtime_parameters` types the compiled kernel's call; the source leaves it unchecked."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "ahead_kernels.py").write_text(AHEAD_MODULE)
    folder = tmp_path / "checked"
    if stubbed:
        monkeypatch.syspath_prepend(str(source))
        (folder / "typings").mkdir(parents=True)
        (folder / "typings" / "ahead_kernels.pyi").write_text(render_stub(importlib.import_module("ahead_kernels")))
    else:
        folder = source
    caller = folder / "caller.py"
    caller.write_text(AHEAD_CALLER)
    expected = {line: shown_type(text) for line, text in marked_lines(caller, "reveal").items()}
    mistakes = [f"caller.py:{line}" for line in marked_lines(caller, "mistake")] if stubbed else []
    assert mypy_lines(folder, "mypy_path = typings", mypy_cache) == (expected, mistakes)
    for mode in ("basic", "strict"):
        config = folder / "pyrightconfig.json"
        config.write_text(json.dumps({
            "typeCheckingMode": mode, "stubPath": "typings", "extraPaths": [str(ROOT), str(ROOT / "stubs")],
        }))
        found = pyright(caller, config=config)
        revealed = {d.line: shown_type(d.message.partition('" is "')[2].rstrip('"')) for d in found if d.severity == "information"}
        assert revealed == expected, mode
        assert sorted(f"caller.py:{d.line}" for d in found if d.severity == "error") == mistakes, (mode, found)


APPLIED_MODULE = '''\
# pyright: reportRedeclaration=false
from typing import TypeVar

import tltyped as tl
import tltyped.language as T

N = TypeVar("N")


def _scale(X: tl.Tensor[tl.float32, N], alpha: tl.dyn[float]) -> None:
    pass


def _copy(A, B):
    M = T.const("M")
    A: T.Tensor[[M], T.float16]
    B: T.Tensor[[M], T.float16]


def _matmul(M, N, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        pass

    return main


scale = tl.jit(_scale)
copy_out = tl.jit(out_idx=[-1])(_copy)
matmul = tl.jit(out_idx=[-1])(_matmul)
'''


def test_jit_applied_by_a_call_is_stubbed_under_the_name_it_is_bound_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scale = tl.jit(_scale)`, `tl.jit(out_idx=[-1])(_copy)` (TileLang's `tilelang.jit(out_idx=[-1])(func)`): the
    kernels a module's names hold, whatever their functions' names."""
    (tmp_path / "applied_kernels.py").write_text(APPLIED_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    stub = render_stub(importlib.import_module("applied_kernels"))
    assert "def scale(\n    X: tl.Tensor[tl.float32, N],\n    alpha: float,\n) -> None:" in stub
    assert "def copy_out(\n    A: tl.Tensor[tl.float16, M],\n) -> tl.Tensor[tl.float16, M]:" in stub
    assert "matmul: _matmul_factory" in stub
    assert "def __call__(self, M: Hashable, N: Hashable, dtype: Hashable=...) -> _matmul_kernel: ..." in stub
    assert "def _scale(" not in stub and "def _copy(" not in stub


UNANNOTATED_MODULE = '''\
# pyright: reportRedeclaration=false
import tltyped as tl
import tltyped.language as T


@tl.jit
def copy(A, B, dtype="float16", block_N=128, block: int = 64):
    N = T.const("N")
    A: T.Tensor[[N], dtype]
    B: T.Tensor[[N], dtype]
'''

UNANNOTATED_CALLER = '''\
import torch

import tilelang.language as T
from unannotated_consts import copy


def use(a: torch.Tensor, b: torch.Tensor) -> None:
    copy(a, b)
    copy(a, b, T.bfloat16)
    copy(a, b, dtype=torch.bfloat16, block_N=(64, 2))
    copy(a, b, block=32)
    copy(a, b, block_N=[64])  # mistake
    copy(a, b, block="32")  # mistake
'''


def test_an_unannotated_const_takes_any_hashable_value_whatever_its_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mypy_cache: Path
) -> None:
    """`dtype="float16"` takes `T.bfloat16` and torch's dtypes at run time: its default says nothing of its type.
    An annotated const keeps its annotation. mypy and pyright with the stub read the calls as the plugin reads the
    source."""
    (tmp_path / "unannotated_consts.py").write_text(UNANNOTATED_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    stub = render_stub(importlib.import_module("unannotated_consts"))
    assert "dtype: Hashable = ...,\n    block_N: Hashable = ...,\n    block: int = ...," in stub
    caller = tmp_path / "caller.py"
    caller.write_text(UNANNOTATED_CALLER)
    mistakes = [f"caller.py:{n}" for n, line in enumerate(UNANNOTATED_CALLER.splitlines(), start=1) if line.endswith("# mistake")]
    assert mypy_lines(tmp_path, "plugins = tltyped.mypy_plugin", mypy_cache)[1] == mistakes
    (tmp_path / "typings").mkdir()
    (tmp_path / "typings" / "unannotated_consts.pyi").write_text(stub)
    assert mypy_lines(tmp_path, "mypy_path = typings", mypy_cache)[1] == mistakes
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"stubPath": "typings", "extraPaths": [str(ROOT), str(ROOT / "stubs")]}))
    found = pyright(caller, config=tmp_path / "pyrightconfig.json")
    assert sorted({f"caller.py:{d.line}" for d in found if d.severity == "error"}) == mistakes, found


NO_DTYPE_MODULE = '''\
{future}
import tltyped as tl
import tltyped.language as T


@tl.jit
def by_call(M, K):
    @T.prim_func
    def main(A: T.Tensor((M, K)), B: T.Tensor((128,))):
        pass

    return main


@tl.jit
def by_subscript(M, K):
    @T.prim_func
    def main(A: T.Tensor[(M, K)], B: T.Tensor[(128,)], C: T.Tensor[(M,)]):
        pass

    return main


@tl.jit
def signature(A: T.Tensor((64, 32)), B: T.Tensor((128,))) -> None:
    pass
'''

NO_DTYPE_CALLER = '''\
from typing import Literal

import tltyped as tl
from {module} import by_call, by_subscript, signature


def use(h: tl.Tensor[tl.float16, int, int], v: tl.Tensor[tl.float32, Literal[128]], m: tl.Tensor[tl.float32, int, int]) -> None:
    by_subscript(4, 4)(m, v, v)
    by_subscript(4, 4)(m, m, v)  # mistake: B is of rank 1
    by_call(4, 4)(h, v)  # mistake: A is float32
    signature(m, v)  # mistake: A is 64 x 32, m any size, which pyright refuses too
'''


@pytest.mark.parametrize("future", ["", "from __future__ import annotations"])
def test_a_tensor_annotation_naming_no_dtype_is_float32_of_its_rank(
    future: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mypy_cache: Path
) -> None:
    """`T.Tensor((M, K))`, `T.Tensor[(M, K)]`, `T.Tensor[(128,)]`: the dtype the runtime gives them (float32) and
    their rank, in a lazy factory's prim_func and (call form) in a kernel's signature; pyright reading the stub
    refuses a call of the wrong rank or dtype."""
    module = "nodtype_postponed" if future else "nodtype_kernels"
    (tmp_path / f"{module}.py").write_text(NO_DTYPE_MODULE.format(future=future))
    monkeypatch.syspath_prepend(str(tmp_path))
    stub = render_stub(importlib.import_module(module))
    by_subscript = stub[stub.index("class _by_subscript_kernel:"):]
    assert "A: tl.Tensor[tl.float32, Any, Any]," in by_subscript
    assert "B: tl.Tensor[tl.float32, Literal[128]]," in by_subscript
    assert "C: tl.Tensor[tl.float32, Any]," in by_subscript
    assert "A: tl.Tensor[tl.float32, Literal[64], Literal[32]]," in stub
    folder = tmp_path / "checked"
    (folder / "typings").mkdir(parents=True)
    (folder / "typings" / f"{module}.pyi").write_text(stub)
    caller = folder / "caller.py"
    caller.write_text(NO_DTYPE_CALLER.format(module=module))
    mistakes = sorted(f"caller.py:{line}" for line in marked_lines(caller, "mistake"))
    config = folder / "pyrightconfig.json"
    config.write_text(json.dumps({"typeCheckingMode": "basic", "stubPath": "typings", "extraPaths": [str(ROOT), str(ROOT / "stubs")]}))
    found = pyright(caller, config=config)
    assert sorted(f"caller.py:{d.line}" for d in found if d.severity == "error") == mistakes, found
    assert sorted(mypy_lines(folder, "mypy_path = typings", mypy_cache)[1]) == mistakes
