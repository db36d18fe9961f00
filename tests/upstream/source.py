"""TileLang's own kernels, loaded from TileLang's sources and run by tltyped as written.

No TileLang code is kept in this repository. `TILELANG_SRC` names a TileLang
git repository (any clone holding COMMIT) or a checkout of COMMIT; `load`
reads the named kernels from one of its files (a test module, an example, a
notebook), rewrites only what a user migrating would rewrite:

- the decorator: `@tilelang.jit(...)` (however TileLang is imported) becomes
  `@tltyped.jit(...)` with the same arguments; TileLang's `@autotune(...)`,
  which wraps TileLang's own jit, is dropped;
- the imports: `tilelang.language` becomes `tltyped.language`;

and imports the result from a file (kernels must live in files). Kernels that
upstream defines inside a test function are taken out of it, dedented. Every
other character of each kernel is upstream's.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

COMMIT = "a35008a42531c62b976ae4cec3855d4383db0f3c"
"""tile-ai/tilelang main of 2026-08-21, the newest commit reachable here (the v0.1.15 tag is not)."""

ENV = "TILELANG_SRC"
_DIR = Path(tempfile.mkdtemp(prefix="tltyped-upstream-"))


def available() -> bool:
    return bool(os.environ.get(ENV))


def upstream_text(path: str) -> str:
    """The text of `path` at COMMIT."""
    root = Path(os.environ[ENV])
    if (root / ".git").exists() or (root / "objects").is_dir():
        return subprocess.run(
            ["git", "-C", str(root), "show", f"{COMMIT}:{path}"], check=True, capture_output=True, text=True
        ).stdout
    return (root / path).read_text()


@dataclass(frozen=True)
class Source:
    """Definitions to take from one upstream file.

    `names`: `name` (a top-level definition or assignment), `name#k` (its k-th
    definition, for a notebook that reuses a name) or `outer.name` (defined
    inside the function `outer`, such as a test).
    """

    path: str
    names: tuple[str, ...]
    drop_imports: tuple[str, ...] = ()  # upstream imports the kernels do not need and that need more than TileLang


def _python(path: str) -> str:
    text = upstream_text(path)
    if path.endswith(".ipynb"):
        cells = json.loads(text)["cells"]
        return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return text


def _find(tree: ast.Module, name: str) -> ast.stmt:
    outer, _, inner = name.rpartition(".")
    inner, _, nth = inner.partition("#")
    body = tree.body
    if outer:
        found = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == outer]
        if not found:
            raise LookupError(f"no function {outer!r}")
        body = found[0].body
    matches = [s for s in body if _defines(s, inner)]
    index = int(nth or 0)
    if len(matches) <= index:
        raise LookupError(f"no definition {name!r}")
    return matches[index]


def _defines(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
        return stmt.name == name
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
    return False


def _tilelang_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names bound to the tilelang module, and names bound to its `jit`."""
    modules, jits = set(), set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):  # `import tilelang.testing` binds `tilelang` too
            modules |= {a.asname or "tilelang" for a in stmt.names if a.name.split(".")[0] == "tilelang" and (a.asname is None or a.name == "tilelang")}
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "tilelang":
            jits |= {a.asname or a.name for a in stmt.names if a.name == "jit"}
    return modules, jits


TILELANG_ONLY = ("verbose", "execution_backend", "target_host", "debug_root_path")
"""TileLang's jit keywords about its own backends and logging, which tltyped's jit does not take."""


def _decorator(text: str, dec: ast.expr, modules: set[str], jits: set[str]) -> str | None:
    """A decorator as tltyped's port has it: TileLang's jit -> tltyped's (less TILELANG_ONLY), autotune dropped."""
    func = dec.func if isinstance(dec, ast.Call) else dec
    written = ast.get_source_segment(text, dec) or ""
    head = ast.unparse(func)
    if head in {f"{m}.jit" for m in modules} | jits:
        if not isinstance(dec, ast.Call):
            return "@_tltyped_jit"
        keywords = [k for k in dec.keywords if k.arg not in TILELANG_ONLY]
        arguments = [ast.get_source_segment(text, a) or "" for a in dec.args]
        arguments += [("**" if k.arg is None else f"{k.arg}=") + (ast.get_source_segment(text, k.value) or "") for k in keywords]
        return f"@_tltyped_jit({', '.join(arguments)})"
    if re.search(r"(^|\.)autotune$", head):
        return None
    return "@" + written


def _segment(text: str, stmt: ast.stmt, modules: set[str], jits: set[str]) -> str:
    lines = text.splitlines()
    decorators = getattr(stmt, "decorator_list", [])
    kept = [d for d in (_decorator(text, dec, modules, jits) for dec in decorators) if d is not None]
    own = textwrap.dedent("\n".join(lines[stmt.lineno - 1 : stmt.end_lineno]))
    return "\n".join([*kept, own])


def _imports(tree: ast.Module, text: str, drop: tuple[str, ...]) -> list[str]:
    out = []
    for stmt in tree.body:
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        written = ast.get_source_segment(text, stmt) or ""
        if any(re.search(rf"\b{re.escape(d)}\b", written) for d in drop):
            continue
        written = re.sub(r"^import tilelang\.language as (\w+)$", r"import tltyped.language as \1", written)
        written = re.sub(r"^from tilelang import language as (\w+)$", r"import tltyped.language as \1", written)
        out.append(written)
    return out


def port(source: Source) -> str:
    """The tltyped port of the named definitions: upstream's text with only decorators and imports rewritten."""
    text = _python(source.path)
    tree = ast.parse(text)
    modules, jits = _tilelang_names(tree)
    parts = [
        f"# Ported from tile-ai/tilelang@{COMMIT}:{source.path}: only decorators and imports differ.",
        "from tltyped import jit as _tltyped_jit",
        *_imports(tree, text, source.drop_imports),
    ]
    for name in source.names:
        parts.append(f"\n\n# {source.path}: {name}\n" + _segment(text, _find(tree, name), modules, jits))
    return "\n".join(parts) + "\n"


_LOADED: dict[Source, ModuleType] = {}


def load(source: Source) -> ModuleType:
    """The ported definitions as a module (written to a file, as kernels must be)."""
    if source in _LOADED:
        return _LOADED[source]
    text = port(source)
    name = "tltyped_upstream_" + hashlib.sha256(repr(source).encode()).hexdigest()[:12]
    path = _DIR / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _LOADED[source] = module
    return module
