"""TileLang's kernels (kernels.py), ported by only their decorator and imports, check clean under mypy with the plugin.

Every file of SRC is written as port() writes it into one directory and checked in one mypy run with the plugin,
the stubs of `tilelang.language` and TileLang's other modules untyped, as the README configures a project (but
not strict: upstream's helpers are unannotated). Upstream's spellings are all here: call-form annotations
(`A: T.Tensor((M, K), dtype)`, a shape computed in the body), `T.StridedTensor`, parameters used as dims, a
`T.macro`'s outputs returned, `M = T.dynamic("m")`. Any error is a false positive.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.upstream.kernels import SRC
from tests.upstream.source import port

ROOT = Path(__file__).resolve().parents[2]

CONFIG = f"""\
[mypy]
plugins = tltyped.mypy_plugin
mypy_path = {ROOT / "stubs"}

[mypy-tilelang.*,tvm.*]
ignore_missing_imports = True
follow_imports = skip
"""


def test_ported_kernels_have_no_mypy_error(tmp_path: Path) -> None:
    files = []
    for name, source in SRC.items():
        path = tmp_path / f"upstream_{name}.py"
        path.write_text(port(source))
        files.append(path.name)
    (tmp_path / "mypy.ini").write_text(CONFIG)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--config-file", "mypy.ini", *files],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert not errors and run.returncode == 0, run.stdout + run.stderr
