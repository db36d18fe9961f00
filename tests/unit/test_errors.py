"""One error family: users catch `tl.Error`, or the builtin kind an error also is.

Every exception class tltyped defines derives from `tl.Error` and is defined
in tltyped/errors.py; the package's own code raises no bare builtin
exception except where a protocol asks for one (`__getattr__`'s
AttributeError, `__missing__`'s KeyError); and errors met through the public
API are caught both ways.
"""

import ast
import builtins
import importlib
import pkgutil
from pathlib import Path

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.conftest import meta

PACKAGE = Path(tl.__file__).resolve().parent
PROTOCOL = {"AttributeError": {"__getattr__"}, "KeyError": {"__missing__", "param"}, "SystemExit": {"<module>"}}
"""Builtin exceptions a function may raise because a protocol asks for them: the function names allowed to."""


def package_modules() -> list[str]:
    assert callable(tl.jit)  # the decorator, bound before its module is imported below under the same name
    return ["tltyped", *(m.name for m in pkgutil.walk_packages([str(PACKAGE)], "tltyped."))]


def test_every_exception_class_is_a_tl_error_defined_in_one_module() -> None:
    """Process exits (SystemExit, which no `except Exception` catches) are the one kind that is not an error."""
    classes = {
        value for name in package_modules() for value in vars(importlib.import_module(name)).values()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__.startswith("tltyped")
    }
    errors = {c for c in classes if issubclass(c, Exception)}
    assert len(errors) >= 10, classes  # the walk found them
    assert all(issubclass(c, tl.Error) for c in errors), sorted(c.__qualname__ for c in errors if not issubclass(c, tl.Error))
    assert all(issubclass(c, SystemExit) for c in classes - errors), classes - errors
    assert {c.__module__ for c in classes} == {"tltyped.errors"}


def raised_builtins(path: Path) -> list[tuple[str, str, int]]:
    """(exception, enclosing function, line) of each `raise <builtin exception>(...)` in a source file."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Raise) and child.exc is not None:
                called = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                name = called.id if isinstance(called, ast.Name) else ""
                if isinstance(getattr(builtins, name, None), type) and issubclass(getattr(builtins, name), BaseException):
                    found.append((name, inner, child.lineno))
            visit(child, inner)

    visit(ast.parse(path.read_text()), "<module>")
    return found


def test_the_package_raises_its_own_errors() -> None:
    bare = [
        f"{path.relative_to(PACKAGE)}:{line}: {name} in {function}()"
        for path in sorted(PACKAGE.rglob("*.py")) for name, function, line in raised_builtins(path)
        if function not in PROTOCOL.get(name, set())
    ]
    assert bare == []


def test_a_bad_call_is_caught_as_tl_error_and_as_its_builtin_kind(seed_gemm) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(tl.ArgumentValueError) as info:
        seed_gemm.gemm(torch.empty(256, 512, dtype=torch.float16), torch.empty(512, 128, dtype=torch.float16))
    assert isinstance(info.value, tl.Error) and isinstance(info.value, ValueError)
    with pytest.raises(tl.Error) as typed:
        seed_gemm.gemm.lower(meta(256, 512, dtype=torch.float32), meta(512, 128))
    assert isinstance(typed.value, TypeError) and "expects dtype float16" in str(typed.value)


def test_definition_and_build_errors_are_tl_errors(sm90: str) -> None:
    with pytest.raises(tl.DefinitionError) as definition:
        @tl.jit
        def positional(A: tl.Tensor[tl.float32, 8], /) -> None:
            pass
    assert isinstance(definition.value, (tl.Error, TypeError))

    @tl.jit
    def broken(A: tl.Tensor[tl.float32, 8]) -> None:
        with T.Kernel(1, threads=32) as bx:
            A[bx] = undefined_name  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(tl.Error) as build:
        broken.lower(meta(8, dtype=torch.float32))
    assert isinstance(build.value, tl.KernelBuildError) and "undefined_name" in str(build.value)
