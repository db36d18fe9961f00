"""The README's type-checking setup, verbatim, on a user's file outside the repository.

A user runs ./scripts/setup.sh, activates the venv, and runs mypy or pyright
in a project of their own with a configuration copied from the README. Here
every configuration block of the README (a fenced ini, toml or json block) is
written as it is into a fresh directory beside one kernel module, and the
checker it configures runs there as an activated venv runs it: no MYPYPATH,
no PYTHONPATH, no path into this checkout. Each run must flag the module's
mistakes (the lines marked `# mistake`), type `tilelang.language` from the
stubs (`T.alloc_shared` is not Any), and report nothing else: an unresolved
`tltyped`, or stubs read as part of a path, fail here.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from configparser import ConfigParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER_MODULE = '''\
from typing import Literal, TypeVar

import tilelang.language as T

import tltyped as tl

M = TypeVar("M")
N = TypeVar("N")


@tl.jit
def copy(A: tl.Tensor[tl.float16, M, N], B: tl.Tensor[tl.float16, M, N], block: int = 128) -> None:
    m, n = A.shape
    with T.Kernel(T.ceildiv(n, block), m) as (bx, by):
        T.copy(A[by, bx * block], B[by, bx * block])


@tl.jit
def scale(A, B, factor: float = 2.0):
    R, C = T.const("R, C")
    A: T.Tensor[[R, C], T.float32]
    B: T.Tensor[[R, C], T.float32]
    with T.Kernel(R, threads=128) as bx:
        for j in T.Parallel(C):
            B[bx, j] = A[bx, j] * factor


def use(a: tl.Tensor[tl.float16, Literal[64], Literal[128]], b: tl.Tensor[tl.float16, Literal[64], Literal[256]]) -> None:
    copy(a, b)  # mistake
    copy(a, a, block="wide")  # mistake
    scale(a)  # mistake


reveal_type(T.alloc_shared)
'''


def readme_config_blocks() -> list[tuple[str, str]]:
    """(language, text) of each fenced ini, toml or json block of the README, indented ones too."""
    readme = (ROOT / "README.md").read_text()
    fences = re.finditer(r"^( *)```(ini|toml|json)\n(.*?)^\1```$", readme, re.MULTILINE | re.DOTALL)
    return [(fence.group(2), textwrap.dedent(fence.group(3))) for fence in fences]


def configured_checkers(language: str, text: str) -> list[tuple[str, str]]:
    """(checker, file name) for each checker the block configures, under the file name it configures it in."""
    if language == "ini":
        parser = ConfigParser()
        parser.read_string(text)
        return [("mypy", "mypy.ini")] if parser.has_section("mypy") else []
    if language == "json":
        json.loads(text)
        return [("pyright", "pyrightconfig.json")]
    tool = tomllib.loads(text).get("tool", {})
    return [(checker, "pyproject.toml") for checker in ("mypy", "pyright") if checker in tool]


CASES = [
    pytest.param(checker, file_name, text, id=f"block{number}-{checker}")
    for number, (language, text) in enumerate(readme_config_blocks(), start=1)
    for checker, file_name in configured_checkers(language, text)
]


def test_every_config_block_of_the_readme_is_run() -> None:
    blocks = readme_config_blocks()
    unknown = [text for language, text in blocks if not configured_checkers(language, text)]
    assert not unknown, f"a README config block that configures neither mypy nor pyright: {unknown}"
    assert {case.values[0] for case in CASES} == {"mypy", "pyright"}


def test_no_ini_value_of_the_readme_carries_a_comment() -> None:
    """mypy's ini parser takes `#` as a comment only at the start of a line: after a value it is part of
    the value (`mypy_path = stubs  # ...` names a folder that does not exist, and nothing says so)."""
    for language, text in readme_config_blocks():
        if language == "ini":
            parser = ConfigParser()
            parser.read_string(text)
            commented = [f"[{s}] {k}" for s in parser.sections() for k, v in parser.items(s) if "#" in v]
            assert not commented, commented


def activated_venv() -> dict[str, str]:
    """The environment of a shell that activated this venv, without anything that points into the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH", "PYTHONHOME")}
    env["VIRTUAL_ENV"] = sys.prefix
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_checker(checker: str, project: Path) -> list[tuple[int, str, str]]:
    """(line, severity, message) of each diagnostic on the user's module."""
    command = {"mypy": ["mypy", "--output", "json", "kernels.py"], "pyright": ["pyright", "--outputjson", "kernels.py"]}
    done = subprocess.run(
        [sys.executable, "-m", *command[checker]],
        capture_output=True, text=True, cwd=project, env=activated_venv(), timeout=600,
    )
    if checker == "pyright":
        report = json.loads(done.stdout)["generalDiagnostics"]
        return [(d["range"]["start"]["line"] + 1, d["severity"], d["message"]) for d in report]
    found = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert found or done.returncode == 0, f"mypy failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    return [(d["line"], d["severity"], d["message"]) for d in found if d["file"] == "kernels.py"]


@pytest.mark.parametrize(("checker", "file_name", "config"), CASES)
def test_readme_config_flags_a_users_mistakes(checker: str, file_name: str, config: str, tmp_path: Path) -> None:
    (tmp_path / file_name).write_text(config)
    (tmp_path / "kernels.py").write_text(USER_MODULE)
    lines = USER_MODULE.splitlines()
    mistakes = {number for number, line in enumerate(lines, start=1) if line.endswith("# mistake")}
    reveal = next(number for number, line in enumerate(lines, start=1) if line.startswith("reveal_type"))

    found = run_checker(checker, tmp_path)

    errors = {(line, message) for line, severity, message in found if severity == "error"}
    assert {line for line, _ in errors} == mistakes, sorted(errors)
    revealed = [message for line, severity, message in found if line == reveal and severity != "error"]
    assert len(revealed) == 1 and "Buffer" in revealed[0], revealed


FACTORY_MODULE = '''\
from typing import Literal, TypeVar

import tilelang.language as T

import tltyped as tl

N = TypeVar("N")


def make(scale: float) -> object:
    @tl.jit
    def scaled(A: tl.Tensor[tl.float32, N], B: tl.Tensor[tl.float32, N], block: int = 128) -> None:
        (n,) = A.shape
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * scale

    def use(a: tl.Tensor[tl.float32, Literal[64]], b: tl.Tensor[tl.float32, Literal[32]]) -> None:
        scaled(a, a)
        scaled(a, b)  # mistake
        scaled(a, a, block="wide")  # mistake

    return scaled


def make_unannotated(scale):
    @tl.jit
    def scaled(A: tl.Tensor[tl.float32, N], B: tl.Tensor[tl.float32, N], block: int = 128) -> None:
        (n,) = A.shape
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * scale

    def use(a: tl.Tensor[tl.float32, Literal[64]], b: tl.Tensor[tl.float32, Literal[32]]) -> None:
        scaled(a, a)
        scaled(a, b)  # mistake in a body mypy checks only when told to
        scaled(a, a, block="wide")  # mistake in a body mypy checks only when told to

    return scaled
'''


@pytest.mark.parametrize(("checker", "flags"), [("mypy", []), ("mypy", ["--check-untyped-defs"]), ("pyright", [])],
                         ids=["mypy", "mypy --check-untyped-defs", "pyright"])
def test_a_kernel_made_in_a_factory_is_checked_where_the_checker_checks_the_factory(
    checker: str, flags: list[str], tmp_path: Path,
) -> None:
    """A kernel made inside a factory function: mypy (the README's mypy.ini, the plugin) checks its calls where it
    checks the factory's body, in an annotated factory, and in an unannotated one only with
    `--check-untyped-defs`; pyright, with no configuration, checks them in either."""
    if checker == "mypy":
        (config,) = [text for name, file_name, text in (case.values for case in CASES) if name == "mypy"]
        (tmp_path / "mypy.ini").write_text(config)
    (tmp_path / "kernels.py").write_text(FACTORY_MODULE)
    lines = FACTORY_MODULE.splitlines()
    annotated = {number for number, line in enumerate(lines, start=1) if line.endswith("# mistake")}
    unannotated = {number for number, line in enumerate(lines, start=1) if line.endswith("only when told to")}
    command = {"mypy": ["mypy", *flags, "--output", "json", "kernels.py"], "pyright": ["pyright", "--outputjson", "kernels.py"]}
    done = subprocess.run([sys.executable, "-m", *command[checker]], capture_output=True, text=True, cwd=tmp_path,
                          env=activated_venv(), timeout=600)
    if checker == "pyright":
        found = [(d["range"]["start"]["line"] + 1, d["severity"]) for d in json.loads(done.stdout)["generalDiagnostics"]]
    else:
        reported = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        found = [(d["line"], d["severity"]) for d in reported if d["file"] == "kernels.py"]
    errors = {line for line, severity in found if severity == "error"}
    expected = annotated if (checker, flags) == ("mypy", []) else annotated | unannotated
    assert errors == expected, (sorted(errors), done.stdout[-3000:], done.stderr[-3000:])
