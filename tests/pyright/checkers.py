"""Run pyright and mypy (with the tltyped plugin) as a user would, and read their JSON diagnostics.

Each checker runs in its own process: pyright through its pip package (it
brings its own Node runtime), mypy with tests/typing/mypy.ini, the plugin's
configuration for kernel modules.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MYPY_INI = ROOT / "tests" / "typing" / "mypy.ini"

IN_BODY_QUIET = "# pyright: reportRedeclaration=false"
"""The one line that quiets pyright on a module of in-body kernels (README: Static checks and stubs)."""


@dataclass(frozen=True)
class Diagnostic:
    path: Path
    line: int  # 1-based
    severity: str  # "error", "warning", "information" (pyright) or "error", "note" (mypy)
    rule: str  # pyright's rule or mypy's error code; "" when it has none
    message: str


def pyright(*files: Path, config: Path = ROOT / "pyproject.toml") -> list[Diagnostic]:
    """pyright's diagnostics for `files`, under the project's configuration (or another)."""
    command = [sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable, "-p", str(config)]
    done = subprocess.run([*command, *map(str, files)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"pyright gave no JSON report (exit {done.returncode}):\n{done.stdout}\n{done.stderr}") from None
    return [
        Diagnostic(
            Path(d["file"]), d["range"]["start"]["line"] + 1, d["severity"], d.get("rule", ""), d["message"],
        )
        for d in report["generalDiagnostics"]
    ]


def mypy(*files: Path, cache_dir: Path) -> list[Diagnostic]:
    """mypy's diagnostics for `files`, with the plugin, as tests/typing/mypy.ini configures it."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(MYPY_INI), "--output", "json",
         "--cache-dir", str(cache_dir), *map(str, files)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env={**os.environ, "MYPYPATH": os.pathsep.join([str(ROOT), str(ROOT / "stubs")])},
    )
    found = []
    for line in done.stdout.splitlines():
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        found.append(Diagnostic((ROOT / d["file"]).resolve(), d["line"], d["severity"], d["code"] or "", d["message"]))
    if done.returncode not in (0, 1) or (done.returncode == 1 and not found):
        raise AssertionError(f"mypy failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return found


def marked_lines(path: Path, tag: str) -> dict[int, str]:
    """`{line: text}` for each line ending in `# <tag>: <text>`."""
    pattern = re.compile(rf"  # {tag}: (.+)$")
    return {
        number: found.group(1)
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if (found := pattern.search(line))
    }


def shown_type(text: str) -> str:
    """A type as either checker prints it, spelled one way: no module prefixes, no `@scope` of TypeVars."""
    text = re.sub(r"\btltyped\.types\.(tensor|dtypes)\.", "", text)
    return re.sub(r"@\w+", "", text)
