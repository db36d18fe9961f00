"""The plugin's setup and its tables, checked against the runtime they describe."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import tilelang.language as tilelang_language
from tltyped.mypy_plugin import names
from tltyped.mypy_plugin.plugin import SUPPORTED_MYPY, TLTypedPlugin, UnsupportedSetup, plugin
from tltyped.types.dtypes import ALL_DTYPES, PACKED_DTYPES, argument_dtype, as_dtype

ROOT = Path(__file__).resolve().parents[2]


def test_dtype_classes_are_the_runtime_ones() -> None:
    assert list(names.DTYPE_CLASSES) == [d.__name__ for d in (*ALL_DTYPES, *PACKED_DTYPES)]


@pytest.mark.parametrize(("value", "class_name"), sorted(names.LANGUAGE_DTYPE_CLASS.items()))
def test_tilelang_dtype_values_map_as_the_runtime_maps_them(value: str, class_name: str) -> None:
    assert as_dtype(getattr(tilelang_language, value)).__name__ == class_name


def test_unmapped_tilelang_dtypes_are_no_argument_types_to_the_runtime_either() -> None:
    for value in ("float6_e2m3fn", "float8_e4m3fnuz", "tfloat32"):
        assert value not in names.LANGUAGE_DTYPE_CLASS
        assert as_dtype(getattr(tilelang_language, value)).name == value  # a dtype (of a const, T.alloc_*) ...
    for value in ("float6_e2m3fn", "float8_e4m3fnuz"):
        with pytest.raises(TypeError, match="not of its arguments"):
            argument_dtype(getattr(tilelang_language, value))  # ... but no tensor's
    assert argument_dtype(tilelang_language.tfloat32).name == "float32"  # tf32 values are float32 in memory
    for value in ("int4", "float4_e2m1fn"):  # sub-byte argument types, held packed (dtypes.PACKED_DTYPES)
        assert names.LANGUAGE_DTYPE_CLASS[value] == value and argument_dtype(getattr(tilelang_language, value)).name == value


def _public_names(stub: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.Assign):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            found.update(a.asname for a in node.names if a.asname is not None and a.asname == a.name)
    return {n for n in found if not n.startswith("_") or n.startswith("__")}


def _defined_names(source: Path) -> set[str]:
    """Names a module defines itself (functions, classes, assignments), not those it imports."""
    found: set[str] = set()
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.Assign):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return found


def test_both_views_differ_only_where_the_runtime_does() -> None:
    """tltyped.language and TileLang's language share one set of typed definitions;
    each view defines only the names tltyped/language.py replaces at run time."""
    runtime_only = {"GlobalTensor"}  # what `T.alloc_global` returns, read by elaboration: no language name
    typed_alike = {"macro", "prim_func"}  # replaced only to be made lazily or read tltyped annotations: typed as TileLang's, in the shared module
    replaced = {n for n in _defined_names(ROOT / "tltyped" / "language.py") if not n.startswith("_")}
    replaced -= runtime_only | typed_alike
    assert replaced == {"alloc_shared", "alloc_fragment", "alloc_local", "alloc_var", "cast", "empty", "alloc_global"}
    own = {"dtype", "__getattr__"}
    for view in (ROOT / "tltyped" / "language.pyi", ROOT / "stubs" / "tilelang" / "language" / "__init__.pyi"):
        names_of_view = {n for n in _defined_names(view) if not n.startswith("_") or n == "__getattr__"}
        assert names_of_view == replaced | own, view
    shared = _public_names(ROOT / "tltyped" / "_tilelang_language.pyi")
    assert not (shared & replaced), "a replaced name is defined in the shared module too"
    assert typed_alike <= shared


def test_typed_language_names_exist_in_tilelang() -> None:
    language = _public_names(ROOT / "tltyped" / "_tilelang_language.pyi")
    missing = sorted(n for n in language if not hasattr(tilelang_language, n))
    # the stubs' names for the loop frames TileLang's loops return, and for argument types
    assert missing == ["BufferLike", "ForFrame", "ScalarDType", "Shape", "TileLangDType"]


def test_supported_mypy_versions() -> None:
    low, high = SUPPORTED_MYPY
    assert plugin(f"{low[0]}.{low[1]}.0") is TLTypedPlugin
    assert plugin("2.4.1+dev.abc") is TLTypedPlugin
    for version in (f"{high[0]}.{high[1]}.0", "1.19.1"):
        with pytest.raises(UnsupportedSetup, match="supports mypy"):
            plugin(version)


def test_parallel_mypy_is_refused_loudly() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--num-workers", "2", "--no-incremental",
         "--config-file", str(ROOT / "tests" / "typing" / "mypy.ini"), "-c", "x = 1"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )
    assert result.returncode != 0
    assert "--num-workers (parallel checking) is not supported" in result.stderr + result.stdout


def test_the_plugin_imports_neither_torch_nor_tilelang() -> None:
    """Every mypy run loads the plugin: importing torch would add seconds to each (names.py)."""
    probe = "import sys, tltyped.mypy_plugin; print(sorted({'torch', 'tilelang', 'tvm'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.stdout.strip() == "[]", result.stderr


def _kernel_module_project(tmp_path: Path, prefix: str) -> tuple[list[str], Path, Path]:
    """A kernel module importing a helper module, and a user of the kernel; mypy's arguments for the three
    (the cache directory is the one the YAML cases share, so these runs do not check torch afresh)."""
    helper = tmp_path / f"{prefix}_helper.py"
    kernels = tmp_path / f"{prefix}_kernels.py"
    kernels.write_text(
        "import tltyped as tl\n"
        "import tltyped.language as T\n"
        f"import {prefix}_helper as helper\n\n"
        "@tl.jit\n"
        "def f(A, n: int = helper.X):\n"
        '    N = T.const("N")\n'
        "    A: T.Tensor[[N], T.float16]\n"
    )
    user = tmp_path / f"{prefix}_user.py"
    user.write_text(f"from {prefix}_kernels import f\nreveal_type(f)\nf(1)\n")
    args = [
        "--config-file", str(ROOT / "tests" / "typing" / "mypy.ini"),
        "--cache-dir", str(Path(tempfile.gettempdir()) / ".mypy_cache"),
        str(user), str(kernels), str(helper),
    ]
    return args, helper, kernels


def _check_kernel_user(args: list[str]) -> str:
    """mypy's verbose log of one run, after asserting the in-body kernel was read (its type, and the error
    in the user's call that only its rewritten signature gives)."""
    from mypy import api

    out, err, status = api.run(["-v", *args])
    assert "tltyped.types.tensor.MypyPlugin.Tensor[tltyped.types.dtypes.float16, N]" in out, out
    assert 'Argument "A" to "f" has incompatible type "int"; expected a tensor (Tensor[float16, N])' in out, out
    assert out.count("error:") == 1 and status == 1, out
    return err


def test_kernel_module_rechecked_after_a_dependency_changes(tmp_path: Path) -> None:
    """mypy re-parses a cached module whose dependency changed without the plugin's `get_additional_deps`;
    the plugin's cache record keeps such a module from being taken stale from the cache."""
    args, helper, _ = _kernel_module_project(tmp_path, "tltyped_incremental")
    for source in ("X = 1\n", "X = 2\nY: str = 'changed interface'\n"):
        helper.write_text(source)
        _check_kernel_user(args)


def test_kernel_module_taken_from_the_cache_while_nothing_changed(tmp_path: Path) -> None:
    """A warm run costs what plain mypy's does: a kernel module is read from mypy's cache, with its errors,
    until a source changes; a record that cannot be read only costs a re-check."""
    args, helper, kernels = _kernel_module_project(tmp_path, "tltyped_warm")
    helper.write_text("X = 1\n")
    fresh = "Metadata fresh for tltyped_warm_kernels"
    assert fresh not in _check_kernel_user(args)
    assert fresh in _check_kernel_user(args)
    helper.write_text("X = 1\n# an edit\n")
    assert fresh not in _check_kernel_user(args)
    assert fresh in _check_kernel_user(args)
    record = Path(tempfile.gettempdir()) / ".mypy_cache" / "{}.{}".format(*sys.version_info[:2]) / "tltyped_plugin.json"
    record.write_text("{not json")
    assert fresh not in _check_kernel_user(args)
    assert fresh in _check_kernel_user(args)


def test_kernel_module_at_a_new_path_with_a_changed_dependency(tmp_path: Path) -> None:
    """The same modules checked from another directory (another checkout sharing the cache), where the
    dependency differs: mypy reuses the entries of unchanged content, and the kernel module is read afresh."""
    for checkout, source in (("a", "X = 1\n"), ("b", "X = 2\nY: str = 'another checkout'\n"), ("c", "X = 1\n")):
        (tmp_path / checkout).mkdir()
        args, helper, _ = _kernel_module_project(tmp_path / checkout, "tltyped_moved")
        helper.write_text(source)
        _check_kernel_user(args)


def test_kernel_module_checked_without_the_rewrite_is_not_cached(tmp_path: Path) -> None:
    """The case the record cannot foresee: a dependency given at a new path while its old file stays as it
    was. That run checks the kernel module without the rewrite (false errors); its cache entry is marked so
    that the next run reads the module afresh."""
    from mypy import api

    args, helper, _ = _kernel_module_project(tmp_path, "tltyped_relocated")
    for lib, source in (("lib1", "X = 1\n"), ("lib2", "X = 2\nY: str = 'another helper'\n")):
        (tmp_path / lib).mkdir()
        (tmp_path / lib / helper.name).write_text(source)
    _check_kernel_user([*args[:-1], str(tmp_path / "lib1" / helper.name)])
    api.run([*args[:-1], str(tmp_path / "lib2" / helper.name)])
    _check_kernel_user([*args[:-1], str(tmp_path / "lib2" / helper.name)])


def test_examples_check_cleanly_with_the_plugin() -> None:
    """Every file in examples/ (both seed kernels among them) type-checks with zero errors."""
    from mypy import api

    out, err, status = api.run([
        "--config-file", str(ROOT / "tests" / "typing" / "mypy.ini"),
        "--cache-dir", str(Path(tempfile.gettempdir()) / ".mypy_cache"),
        str(ROOT / "examples"),
    ])
    assert status == 0, out + err
