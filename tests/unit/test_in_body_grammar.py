"""One table of in-body spellings, read by both readers: each is accepted statically exactly when it is at run time.

The in-body grammar (tltyped/types/in_body_grammar.py) holds the rules; the
runtime (tltyped.frontend.body, at decoration) and the mypy plugin each read
the body with their own AST. Every case below is a module of one kernel:
- the runtime imports it, so `@tl.jit` analyses it (nothing is built): it
  accepts the kernel, or rejects it with a DefinitionError naming a line;
- one mypy run, with the plugin as tests/typing/mypy.ini configures it, checks
  every module: a kernel is accepted when its module checks clean, rejected
  when the plugin reports a tltyped error.
Both must agree, and a rejection must be reported by both on the same line in
the same words (mypy's capitalised).
"""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import tltyped as tl
from tests.pyright.checkers import Diagnostic, mypy


@dataclass(frozen=True)
class Case:
    name: str
    body: str  # the kernel's body; its parameters are `A, B, block: int = 64`
    accepted: bool


ALLOC = 'A: T.Tensor[[64], T.float16]\nwith T.Kernel(1, threads=128) as bx:\n    '  # a body that allocates next

CASES = [
    # -- declarations ------------------------------------------------------------------------------
    Case("const_with_commas", 'M, N = T.const("M, N")\nA: T.Tensor[[M, N], T.float16]', True),
    Case("const_with_spaces", 'M, N = T.const("M N")\nA: T.Tensor[[M, N], T.float16]', True),
    Case("dynamic", 'M = T.dynamic("M")\nA: T.Tensor[[M], T.float16]', True),
    Case("symbolic", 'M = T.symbolic("M")\nA: T.Tensor[[M], T.float16]', True),  # TileLang's older T.dynamic
    Case("one_call_per_dim", 'R, C = T.dynamic("R"), T.const("C")\nA: T.Tensor[[R, C], T.float16]', True),
    Case("variable_unlike_its_dim", 'M = T.dynamic("m")\nA: T.Tensor[[M], T.float16]', True),
    Case("more_names_than_variables", 'M, N = T.const("M, N, K")\nA: T.Tensor[[M, N], T.float16]', False),
    Case("fewer_names_than_variables", 'M, N = T.const("M")\nA: T.Tensor[[M, N], T.float16]', False),
    Case("one_name_for_two_calls", 'R, C = T.dynamic("R, C"), T.const("C")\nA: T.Tensor[[R, C], T.float16]', False),
    Case("no_names", 'M = T.const("")\nA: T.Tensor[[M], T.float16]', False),
    Case("name_not_an_identifier", 'M = T.const("1M")\nA: T.Tensor[[M], T.float16]', False),
    Case("names_not_a_literal", 'names = "M"\nM = T.const(names)\nA: T.Tensor[[M], T.float16]', False),
    Case("variable_declared_twice", 'M = T.const("M")\nM = T.dynamic("M")\nA: T.Tensor[[M], T.float16]', False),
    Case("dim_declared_twice", 'M = T.dynamic("m")\nN = T.dynamic("m")\nA: T.Tensor[[M, N], T.float16]', False),
    Case("variable_rebound_to_another_dim", 'M = T.const("a")\nM = T.const("b")\nA: T.Tensor[[M], T.float16]', False),
    Case("undeclared_dim", 'A: T.Tensor[[Q], T.float16]', False),
    # -- dtypes and derived dims ---------------------------------------------------------------------
    Case("dtype_bound_to_a_name", 'M = T.const("M")\ndtype = T.float16\nA: T.Tensor[[M], dtype]', True),
    Case("call_form", 'M, N = T.const("M, N")\nA: T.Tensor((M, N), T.float16)', True),
    Case(
        "derived_dim",
        'N = T.const("N")\nL = N * 2 + 1\nA: T.Tensor[[N], T.float16]\nB: T.Tensor[[L], T.float16]', True,
    ),
    Case(
        "derived_dim_with_ceildiv",
        'N = T.const("N")\nA: T.Tensor[[N], T.float16]\nB: T.Tensor[[T.ceildiv(N, 4)], T.float16]', True,
    ),
    Case("affine_dim_only", 'N = T.const("N")\nA: T.Tensor[[N * 2], T.float16]', True),  # a size of 2*N gives N
    Case("non_affine_dim_only", 'N = T.const("N")\nA: T.Tensor[[T.ceildiv(N, 4)], T.float16]', False),
    # `T.Tensor[(N), dtype]` is `T.Tensor[N, dtype]`: TileLang's order, a shape of one dim (in_body_grammar.is_shape_first)
    Case("one_dim_shape_in_parentheses", 'N = T.const("N")\nA: T.Tensor[(N), T.float16]', True),
    Case("one_dim_shape_with_a_dtype_name", 'N = T.const("N")\ndtype = T.float16\nA: T.Tensor[(N), dtype]', True),
    Case(
        "one_derived_dim_shape", 'N = T.const("N")\nA: T.Tensor[[N], T.float16]\nB: T.Tensor[(N * 2), T.float16]', True,
    ),
    Case("shape_bound_to_a_name", 'M, N = T.const("M, N")\nshape = (M, N)\nA: T.Tensor[shape, T.float16]', True),
    # -- outputs, buffers and returns -----------------------------------------------------------------
    Case(
        "output_returned", 'M = T.const("M")\nA: T.Tensor[[M], T.float16]\nC = T.empty((M,), T.float32)\nreturn C', True,
    ),
    Case(
        "outputs_returned",
        'M = T.const("M")\nA: T.Tensor[[M], T.float16]\nC = T.empty((M,), T.float32)\n'
        "D = T.alloc_global((M,), T.float16)\nreturn C, D",
        True,
    ),
    Case(
        "one_output_in_a_tuple", 'M = T.const("M")\nA: T.Tensor[[M], T.float16]\nC = T.empty((M,), T.float32)\nreturn (C,)',
        True,
    ),
    Case("buffer_bound_to_a_name", f"{ALLOC}buf = T.alloc_shared((64,), T.float16)\n    T.copy(A, buf)", True),
    Case("buffer_into_a_call", f"{ALLOC}T.clear(T.alloc_fragment((64,), T.float32))", False),
    Case("buffer_as_keyword", f"{ALLOC}T.copy(A, dst=T.alloc_shared((64,), T.float16))", False),
    Case("output_into_a_call", 'A: T.Tensor[[64], T.float16]\nT.copy(A, T.empty((64,), T.float16))', False),
    Case("returns_a_literal", 'A: T.Tensor[[64], T.float16]\nreturn 1', False),
    Case("returns_arithmetic", 'A: T.Tensor[[64], T.float16]\nreturn block * 2', False),
    Case("returns_none", 'A: T.Tensor[[64], T.float16]\nreturn None', False),
    Case("returns_a_subscript", 'A: T.Tensor[[64], T.float16]\nreturn A[0]', False),
    Case("returns_a_local_buffer", 'A: T.Tensor[[64], T.float16]\nreturn T.alloc_shared((64,), T.float16)', False),
]

MODULE = """\
import tltyped as tl
import tltyped.language as T


@tl.jit
def kernel(A, B, block: int = 64):
{body}
"""


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("in_body_grammar")
    written = {}
    for case in CASES:
        path = folder / f"case_{case.name}.py"
        path.write_text(MODULE.format(body=textwrap.indent(case.body, "    ")))
        written[case.name] = path
    return written


@pytest.fixture(scope="module")
def static(modules: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[Path, list[Diagnostic]]:
    """Every case's mypy errors, from one run over all of them (errors in other files are not the cases')."""
    found: dict[Path, list[Diagnostic]] = {path.resolve(): [] for path in modules.values()}
    for d in mypy(*modules.values(), cache_dir=tmp_path_factory.mktemp("mypy_cache")):
        if d.severity == "error" and d.path in found:
            found[d.path].append(d)
    return found


@dataclass(frozen=True)
class Rejection:
    line: int | None  # None: the runtime names the kernel, not a line
    message: str


def at_run_time(path: Path) -> Rejection | None:
    """Decorate the case's kernel: None when the runtime accepts it, else where (if it says) and why it refused."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except tl.DefinitionError as exc:
        found = re.search(rf"{re.escape(str(path))}:(\d+): (.*)$", str(exc), re.S)
        return Rejection(int(found.group(1)), found.group(2)) if found else Rejection(None, str(exc))
    finally:
        del sys.modules[path.stem]
    return None


def by_mypy(diagnostics: list[Diagnostic]) -> list[Rejection] | None:
    """None when mypy accepts the case, else the plugin's reports (mypy's own errors must come with one)."""
    if not diagnostics:
        return None
    ours = [Rejection(d.line, d.message) for d in diagnostics if d.rule.startswith("tltyped")]
    assert ours, f"mypy refuses the case, but not for a rule of the in-body form: {diagnostics}"
    return ours


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_both_readers_agree(case: Case, modules: dict[str, Path], static: dict[Path, list[Diagnostic]]) -> None:
    path = modules[case.name]
    runtime = at_run_time(path)
    checked = by_mypy(static[path.resolve()])
    assert (runtime is None, checked is None) == (case.accepted, case.accepted), (
        f"{case.name}: expected {'accepted' if case.accepted else 'rejected'}; "
        f"run time: {runtime or 'accepted'}; mypy: {checked or 'accepted'}"
    )
    if runtime is not None and checked is not None:
        said = Rejection(runtime.line, runtime.message[:1].upper() + runtime.message[1:])
        assert said in checked, f"{case.name}: the runtime says {said}, mypy says {checked}"


def test_t_symbolic_declares_dyn_dims_as_t_dynamic_does(modules: dict[str, Path]) -> None:
    """TileLang's deprecated name is still written (its own examples do): the dim is dyn, not a const."""
    signatures = {}
    for name in ("symbolic", "dynamic"):
        spec = importlib.util.spec_from_file_location(f"case_{name}", modules[name])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        signatures[name] = module.kernel.signature
    assert signatures["symbolic"].dyn_dims == signatures["dynamic"].dyn_dims == ("M",)
