"""pyright (no plugin) and mypy (with the plugin) on kernels and their calls, asserted on their JSON output.

- wrong_calls.py: each `# wrong: <kind>` line must get an error of that kind;
- correct_calls.py, kernels.py, reveals.py: no error at all (no false positive);
- reveals.py: each `# reveal: <type>` is the type both checkers infer, and
  each `# hover: <name>: <type>` what pyright's language server shows;
- in-body kernels: pyright reports only the in-body annotations' redeclarations,
  and the README's one line quiets exactly those; mypy with the plugin is clean;
- generated stubs (`python -m tltyped.stubs`, written to a stubs folder) give
  pyright the in-body kernels' signatures, so their callers are checked too;
- out_idx_calls.py: `jit(out_idx=...)` kernels are called without their
  outputs and return them, under mypy and under pyright with the stubs;
- lazy_calls.py: the kernel objects of lazy-style factories (lazy_kernels.py)
  are typed alike by mypy and by pyright with the stubs;
- package_calls.py: kernels a package imports from its module (kernel_package)
  are typed through the package by the stubs of that module alone;
- an out_idx kernel's own module, which pyright reads from its source, calls it
  without its outputs with no error, stubs or none;
- examples/ checks cleanly under the project's pyright configuration.
The flagged fraction of each checker is printed (`pytest -s`) and must reach 80%.
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

from tests.pyright.checkers import (
    HERE,
    IN_BODY_QUIET,
    ROOT,
    Diagnostic,
    hovers,
    marked_lines,
    mypy,
    pyright,
    shown_type,
)

CALL_SETS = [HERE / "kernels.py", HERE / "correct_calls.py", HERE / "wrong_calls.py", HERE / "reveals.py"]
IN_BODY = [
    HERE / "in_body_tilelang.py", HERE / "in_body_tltyped.py",
    HERE / "language_stubs_tilelang.py", HERE / "language_stubs_tltyped.py",
]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
CLEAN = [HERE / "kernels.py", HERE / "correct_calls.py", HERE / "reveals.py"]
WRONG = HERE / "wrong_calls.py"
IN_BODY_CALLS = HERE / "in_body_calls.py"
OUT_IDX_CALLS = HERE / "out_idx_calls.py"
LAZY_CALLS = HERE / "lazy_calls.py"
FOLLOWUPS_CALLS = HERE / "followups_calls.py"
PACKAGE_CALLS = HERE / "package_calls.py"
KERNEL_PACKAGE = HERE / "kernel_package" / "kernels.py"
OUT_IDX_MODULES = [HERE / "in_body_tltyped.py", KERNEL_PACKAGE]
"""Modules that call their own out_idx kernels."""
REQUIRED_FRACTION = 0.8

PYRIGHT_RULES = {"count": {"reportCallIssue"}, "name": {"reportCallIssue"}}
"""The pyright rules that count as each kind of error; any other kind: an argument's type."""
MYPY_CODES = {
    "count": {"call-arg"},
    "name": {"call-arg", "misc"},  # a keyword given twice is [misc] to mypy
    "scalar": {"arg-type"},
    "dtype": {"tltyped-dtype"},
    "rank": {"tltyped-shape"},
    "dim": {"tltyped-shape"},
    "tensor": {"arg-type"},
}


def errors(found: list[Diagnostic], path: Path) -> dict[int, list[Diagnostic]]:
    by_line: dict[int, list[Diagnostic]] = {}
    for d in found:
        if d.path == path and d.severity in ("error", "warning"):
            by_line.setdefault(d.line, []).append(d)
    return by_line


def flagged(
    found: list[Diagnostic], accepted: dict[str, set[str]], default: set[str], path: Path = WRONG
) -> tuple[list[int], list[str]]:
    """The wrong calls flagged with an error of their kind, and a line of text for each one that is not."""
    wrong = marked_lines(path, "wrong")
    by_line = errors(found, path)
    hits, misses = [], []
    for line, kind in sorted(wrong.items()):
        rules = {d.rule for d in by_line.get(line, [])}
        if rules & accepted.get(kind, default):
            hits.append(line)
        else:
            misses.append(f"line {line} ({kind}): {sorted(rules) or 'no error'}")
    return hits, misses


def report_fraction(checker: str, hits: list[int], misses: list[str]) -> float:
    total = len(hits) + len(misses)
    print(f"\n{checker}: {len(hits)}/{total} wrong calls flagged with their kind of error")
    return len(hits) / total


def in_body_parameter_annotations(path: Path) -> set[tuple[int, str]]:
    """(line of the `def`, name) of every parameter a kernel annotates in its body."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.FunctionDef):
            continue
        params = {a.arg: a for a in node.args.args}
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and stmt.value is None and isinstance(stmt.target, ast.Name):
                if stmt.target.id in params:
                    found.add((params[stmt.target.id].lineno, stmt.target.id))
    return found


@pytest.fixture(scope="module")
def pyright_report() -> list[Diagnostic]:
    return pyright(*CALL_SETS, *IN_BODY, IN_BODY_CALLS, KERNEL_PACKAGE, *EXAMPLES)


@pytest.fixture(scope="module")
def mypy_report(tmp_path_factory: pytest.TempPathFactory) -> list[Diagnostic]:
    return mypy(
        *CALL_SETS, *IN_BODY, IN_BODY_CALLS, OUT_IDX_CALLS, LAZY_CALLS, FOLLOWUPS_CALLS, PACKAGE_CALLS, KERNEL_PACKAGE,
        cache_dir=tmp_path_factory.mktemp("mypy-cache"),
    )


@pytest.fixture(scope="module")
def stubbed_pyright_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pyright configuration whose stubs folder holds what `python -m tltyped.stubs` writes for the in-body
    kernels, the lazy-style factories and the module whose kernels kernel_package imports."""
    from tltyped.stubs.__main__ import main

    folder = tmp_path_factory.mktemp("stubbed")
    typings = folder / "typings"
    stubbed = ["in_body_tltyped", "lazy_kernels", "followups_kernels", "kernel_package.kernels"]
    assert main([*(f"tests.pyright.{name}" for name in stubbed), "-d", str(typings)]) == 0
    assert (typings / "tests" / "pyright" / "in_body_tltyped.pyi").is_file()
    assert (typings / "tests" / "pyright" / "lazy_kernels.pyi").is_file()
    config = folder / "pyrightconfig.json"
    config.write_text(json.dumps({
        "pythonVersion": "3.11", "stubPath": str(typings), "extraPaths": [str(ROOT), str(ROOT / "stubs")],
    }))
    return config


def revealed_types(found: list[Diagnostic], path: Path, severity: str, prefix: str) -> dict[int, str]:
    """`{line: type}` of the checker's reveal_type reports in `path`, spelled as `shown_type` spells them."""
    return {
        d.line: shown_type(d.message.partition(prefix)[2].rstrip('"'))
        for d in found
        if d.path == path and d.severity == severity
    }


def expected_reveals(path: Path) -> dict[int, str]:
    return {line: shown_type(t) for line, t in marked_lines(path, "reveal").items()}


def test_an_editor_shows_tensors_as_users_write_them() -> None:
    """Hovering a tensor (`# hover: <name>: <type>`, the name's first use on its line) shows `Tensor[...]` as
    users write it, for parameters and for the results of kernel calls alike, not the alias's expansion."""
    path = HERE / "reveals.py"
    marked = {line: text.partition(": ") for line, text in marked_lines(path, "hover").items()}
    lines = path.read_text().splitlines()
    positions = [(line, lines[line - 1].index(name)) for line, (name, _, _) in marked.items()]
    shown = hovers(path, positions)
    assert len(marked) == 3 and all(f"{name}: {typ}" in hover for (name, _, typ), hover in zip(marked.values(), shown)), shown


def test_the_kernels_are_ones_the_runtime_accepts() -> None:
    """Decorating analyses each signature and in-body annotation: every kernel here is a real one."""
    for module in ("kernels", "in_body_tilelang", "in_body_tltyped", "kernel_package.kernels"):
        loaded = importlib.import_module(f"tests.pyright.{module}")
        assert [name for name, value in vars(loaded).items() if hasattr(value, "signature")]


def test_the_wrong_call_set_is_big_enough() -> None:
    kinds = marked_lines(WRONG, "wrong").values()
    assert len(kinds) >= 40 and set(kinds) == set(MYPY_CODES)


def test_pyright_flags_wrong_calls(pyright_report: list[Diagnostic]) -> None:
    hits, misses = flagged(pyright_report, PYRIGHT_RULES, {"reportArgumentType"})
    assert report_fraction("pyright", hits, misses) >= REQUIRED_FRACTION, misses
    assert not misses  # today's figure: every one


def test_pyright_reports_nothing_on_correct_code(pyright_report: list[Diagnostic]) -> None:
    for path in [*CLEAN, *EXAMPLES]:
        assert errors(pyright_report, path) == {}, path


def test_pyright_infers_the_returned_tensors(pyright_report: list[Diagnostic]) -> None:
    reveals = HERE / "reveals.py"
    assert revealed_types(pyright_report, reveals, "information", '" is "') == expected_reveals(reveals)


def test_pyright_reports_only_the_in_body_redeclarations(pyright_report: list[Diagnostic]) -> None:
    for path in IN_BODY:
        found = errors(pyright_report, path)
        assert {d.rule for ds in found.values() for d in ds} == {"reportRedeclaration"}, path
        named = {(d.line, d.message.split('"')[1]) for ds in found.values() for d in ds}
        assert named == in_body_parameter_annotations(path), path


def test_one_line_quiets_pyright_on_in_body_kernels(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    assert IN_BODY_QUIET in readme
    copies = []
    for path in IN_BODY:
        copy = tmp_path / path.name
        copy.write_text(f"{IN_BODY_QUIET}\n{path.read_text()}")
        copies.append(copy)
    found = pyright(*copies)
    assert [d for d in found if d.severity != "information"] == []


def test_stubs_folder_gives_pyright_the_in_body_signatures(
    stubbed_pyright_config: Path, pyright_report: list[Diagnostic]
) -> None:
    """`python -m tltyped.stubs` writes typings/<module>.pyi; with it, calls of in-body kernels are checked."""
    found = pyright(IN_BODY_CALLS, config=stubbed_pyright_config)
    hits, misses = flagged(found, PYRIGHT_RULES, {"reportArgumentType"}, IN_BODY_CALLS)
    assert hits and not misses
    without = errors(pyright_report, IN_BODY_CALLS)  # the project's configuration: no stubs folder
    assert set(without) < set(hits)


@pytest.mark.parametrize("calls", [OUT_IDX_CALLS, LAZY_CALLS, FOLLOWUPS_CALLS], ids=["out_idx", "lazy_style", "followups"])
def test_stubs_type_kernels_returning_outputs(stubbed_pyright_config: Path, calls: Path) -> None:
    """An out_idx kernel's stub, or a factory's kernel object's, takes the parameters but its outputs and
    returns them."""
    found = pyright(calls, config=stubbed_pyright_config)
    hits, misses = flagged(found, PYRIGHT_RULES, {"reportArgumentType"}, calls)
    assert hits and not misses
    assert set(errors(found, calls)) == set(hits)
    assert revealed_types(found, calls, "information", '" is "') == expected_reveals(calls)


def test_stubs_of_a_module_type_the_kernels_a_package_imports_from_it(stubbed_pyright_config: Path) -> None:
    """`from .kernels import add_rows` in a package's `__init__.py`: pyright resolves that relative import beside
    the package's source, never in the stubs folder, so the kernels would be typed from their source; stubbing
    their module writes the package's stub too, importing them from the module's."""
    found = pyright(PACKAGE_CALLS, config=stubbed_pyright_config)
    hits, misses = flagged(found, PYRIGHT_RULES, {"reportArgumentType"}, PACKAGE_CALLS)
    assert hits and not misses
    assert set(errors(found, PACKAGE_CALLS)) == set(hits)
    assert revealed_types(found, PACKAGE_CALLS, "information", '" is "') == expected_reveals(PACKAGE_CALLS)


def test_pyright_takes_out_idx_calls_in_the_kernels_own_module(
    stubbed_pyright_config: Path, pyright_report: list[Diagnostic]
) -> None:
    """pyright reads the module defining a kernel from its source, whether or not a stub types its importers:
    there `jit(out_idx=...)` makes a kernel whose calls are unchecked (no type drops a ParamSpec's last
    parameters), so calling it without its outputs is no error. Only the in-body redeclarations are reported."""
    for found in (pyright(*OUT_IDX_MODULES, config=stubbed_pyright_config), pyright_report):
        for path in OUT_IDX_MODULES:
            rules = {d.rule for ds in errors(found, path).values() for d in ds}
            assert rules <= {"reportRedeclaration"}, (path, errors(found, path))


@pytest.mark.parametrize(
    "calls", [OUT_IDX_CALLS, LAZY_CALLS, FOLLOWUPS_CALLS, PACKAGE_CALLS], ids=["out_idx", "lazy_style", "followups", "package"]
)
def test_mypy_types_kernels_returning_outputs(mypy_report: list[Diagnostic], calls: Path) -> None:
    hits, misses = flagged(mypy_report, MYPY_CODES, set(), calls)
    assert hits and not misses
    assert set(errors(mypy_report, calls)) == set(hits)
    assert revealed_types(mypy_report, calls, "note", 'Revealed type is "') == expected_reveals(calls)


def test_mypy_flags_wrong_calls(mypy_report: list[Diagnostic]) -> None:
    hits, misses = flagged(mypy_report, MYPY_CODES, set())
    assert report_fraction("mypy with the plugin", hits, misses) >= REQUIRED_FRACTION, misses
    assert not misses


def test_mypy_flags_wrong_calls_of_in_body_kernels(mypy_report: list[Diagnostic]) -> None:
    hits, misses = flagged(mypy_report, MYPY_CODES, set(), IN_BODY_CALLS)
    assert hits and not misses


def test_mypy_reports_nothing_on_correct_code(mypy_report: list[Diagnostic]) -> None:
    for path in [*CLEAN, *IN_BODY, KERNEL_PACKAGE]:
        assert errors(mypy_report, path) == {}, path


def test_mypy_infers_the_returned_tensors(mypy_report: list[Diagnostic]) -> None:
    reveals = HERE / "reveals.py"
    assert revealed_types(mypy_report, reveals, "note", 'Revealed type is "') == expected_reveals(reveals)
