"""TileLang's kernels (kernels.py), ported by only their decorator and imports, check clean under both checkers.

Every file of SRC is written as port() writes it into one directory, as a user's project:
- mypy with the plugin, the stubs of `tilelang.language` and TileLang's other modules untyped, as the README
  configures a project (not strict: upstream's helpers are unannotated). Upstream's spellings are all here:
  call-form annotations (`A: T.Tensor((M, K), dtype)`, a shape computed in the body), `T.StridedTensor`,
  parameters used as dims, a `T.macro`'s outputs returned, `M = T.dynamic("m")`. Any error is a false positive.
- pyright over the files and the stubs `python -m tltyped.stubs` writes for them, quieted only as the README
  says: in-body annotations are redeclarations, call-form annotations invalid type forms, and `import tvm`
  resolves with TileLang's bundled TVM on `extraPaths`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pyright.checkers import pyright
from tests.upstream.kernels import SRC
from tests.upstream.source import port

ROOT = Path(__file__).resolve().parents[2]

# The checkout, not whichever tltyped the environment installs, on mypy's path and the plugin's: both read this
# tree whatever MYPYPATH an earlier test of this process set (tests/typing/conftest.py sets it for its cases).
MYPY_CONFIG = f"""\
[mypy]
plugins = tltyped.mypy_plugin
mypy_path = {ROOT}{os.pathsep}{ROOT / "stubs"}

[mypy-tilelang.*,tvm.*]
ignore_missing_imports = True
follow_imports = skip
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The ported files, and the stubs tltyped writes for them (typings/)."""
    where = tmp_path_factory.mktemp("upstream_typing")
    modules = []
    for name, source in SRC.items():
        (where / f"upstream_{name}.py").write_text(port(source))
        modules.append(f"upstream_{name}")
    subprocess.run(
        [sys.executable, "-m", "tltyped.stubs", *modules], cwd=where, check=True, capture_output=True, timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(where), str(ROOT)])},
    )
    return where, modules


def test_ported_kernels_have_no_mypy_error(project: tuple[Path, list[str]]) -> None:
    where, modules = project
    (where / "mypy.ini").write_text(MYPY_CONFIG)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--config-file", "mypy.ini", *(f"{m}.py" for m in modules)],
        cwd=where, capture_output=True, text=True, timeout=600,
        env={**{k: v for k, v in os.environ.items() if k != "MYPYPATH"}, "PYTHONPATH": str(ROOT)},
    )
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert not errors and run.returncode == 0, run.stdout + run.stderr


def test_ported_kernels_and_their_stubs_have_no_pyright_error_but_the_documented_ones(
    project: tuple[Path, list[str]],
) -> None:
    import tilelang
    import tvm

    where, modules = project
    config = where / "pyrightconfig.json"
    config.write_text(json.dumps({
        "reportRedeclaration": False,
        "reportInvalidTypeForm": False,
        "extraPaths": [str(Path(tvm.__file__).parents[1])],
    }))
    assert Path(tvm.__file__).is_relative_to(Path(tilelang.__file__).parent)  # TileLang's own TVM
    files = [where / f"{m}.py" for m in modules] + sorted((where / "typings").glob("*.pyi"))
    assert len(files) == 2 * len(modules)
    errors = [d for d in pyright(*files, config=config) if d.severity == "error"]
    assert not errors, "\n".join(f"{d.path.name}:{d.line}: {d.message} ({d.rule})" for d in errors)
