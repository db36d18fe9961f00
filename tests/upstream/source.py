"""TileLang's own kernels, loaded from TileLang's sources and run by tltyped as written.

No TileLang code is kept in this repository. `TILELANG_SRC` names a TileLang
git repository (any clone holding COMMIT) or a checkout of COMMIT (by
default: DEFAULT, `../shared/tilelang-a35008a` from the repository root); `load`
reads the named kernels from one of its files (a test module, an example, a
notebook), rewrites only what a user migrating would rewrite:

- the decorator: `@tilelang.jit(...)` (however TileLang is imported) becomes
  `@tltyped.jit(...)` with the same arguments, and TileLang's `@autotune(...)` becomes
  `@tltyped.autotune(...)`;
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
REPO = Path(__file__).resolve().parents[2]
DEFAULT = REPO.parent / "shared" / "tilelang-a35008a"
"""Where CI keeps TileLang's sources at COMMIT: `../shared/tilelang-a35008a` from the repository root."""
_DIR = Path(tempfile.mkdtemp(prefix="tltyped-upstream-"))


def root() -> Path | None:
    """TileLang's sources: `TILELANG_SRC` if set, else DEFAULT if it exists, else None."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    return DEFAULT if DEFAULT.is_dir() else None


def available() -> bool:
    return root() is not None


def upstream_text(path: str) -> str:
    """The text of `path` at COMMIT."""
    src = root()
    assert src is not None, f"set {ENV} or provide {DEFAULT}"
    if (src / ".git").exists() or (src / "objects").is_dir():
        return subprocess.run(
            ["git", "-C", str(src), "show", f"{COMMIT}:{path}"], check=True, capture_output=True, text=True
        ).stdout
    return (src / path).read_text()


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


def _decorator(text: str, dec: ast.expr, modules: set[str], jits: set[str], package: str) -> str:
    """A decorator as tltyped's port has it: TileLang's jit -> `jit` (less TILELANG_ONLY), autotune -> tltyped's."""
    func = dec.func if isinstance(dec, ast.Call) else dec
    written = ast.get_source_segment(text, dec) or ""
    head = ast.unparse(func)
    if head in {f"{m}.jit" for m in modules} | jits:
        if not isinstance(dec, ast.Call):
            return f"@{package}.jit"
        keywords = [k for k in dec.keywords if k.arg not in TILELANG_ONLY]
        arguments = [ast.get_source_segment(text, a) or "" for a in dec.args]
        arguments += [("**" if k.arg is None else f"{k.arg}=") + (ast.get_source_segment(text, k.value) or "") for k in keywords]
        return f"@{package}.jit({', '.join(arguments)})"
    if re.search(r"(^|\.)autotune$", head):
        return f"@{package}.autotune" + written[len(ast.get_source_segment(text, func) or ""):]
    return "@" + written


def _segment(text: str, stmt: ast.stmt, modules: set[str], jits: set[str]) -> str:
    lines = text.splitlines()
    decorators = getattr(stmt, "decorator_list", [])
    kept = [_decorator(text, dec, modules, jits, "_tltyped") for dec in decorators]
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
        "import tltyped as _tltyped",
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


def _language_import(stmt: ast.Import | ast.ImportFrom) -> str | None:
    """`stmt` with `tilelang.language` imported from tltyped instead, or None if it imports no such thing."""
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module == "tilelang.language":
        names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in stmt.names)
        return f"from tltyped.language import {names}"
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module == "tilelang":
        if any(a.name == "language" for a in stmt.names):
            parts = []
            rest = [a for a in stmt.names if a.name != "language"]
            if rest:
                parts.append("from tilelang import " + ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in rest))
            for a in stmt.names:
                if a.name == "language":
                    parts.append(f"import tltyped.language as {a.asname or 'language'}")
            return "; ".join(parts)
    if isinstance(stmt, ast.Import) and any(a.name == "tilelang.language" and a.asname for a in stmt.names):
        return "; ".join(
            f"import tltyped.language as {a.asname}" if a.name == "tilelang.language" and a.asname
            else f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
            for a in stmt.names
        )
    return None


def migrate(text: str) -> str:
    """A whole file migrated to tltyped, as a user would migrate it, every line number kept.

    - every decorator `@tilelang.jit(...)` (however TileLang or its `jit` is
      imported, at any nesting) becomes `@tltyped.jit(...)` with the same
      arguments less TILELANG_ONLY; TileLang's `@autotune(...)` becomes
      `@tltyped.autotune(...)` with the same arguments;
    - imports of `tilelang.language` (`import tilelang.language as T`, `from
      tilelang import language as T`, `from tilelang.language import x`) import
      `tltyped.language` instead;
    - `import tltyped` is added after the first top-level import.

    Nothing else changes: calls of `tilelang.compile(...)`, TileLang's
    profiler, `@T.prim_func` and the kernel bodies stay upstream's.
    """
    tree = ast.parse(text)
    modules, jits = _tilelang_names(tree)
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(lineno: int, col: int) -> int:  # ast columns are UTF-8 byte offsets
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode(errors="replace"))

    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), non-overlapping
    for node in ast.walk(tree):
        for dec in getattr(node, "decorator_list", []):
            new = _decorator(text, dec, modules, jits, "tltyped")
            written = "@" + (ast.get_source_segment(text, dec) or "")
            if new == written:
                continue
            at = text.rfind("@", 0, offset(dec.lineno, dec.col_offset))
            end = offset(dec.end_lineno or dec.lineno, dec.end_col_offset or 0)
            edits.append((at, end, new + "\n" * (text.count("\n", at, end) - new.count("\n"))))  # keep the line count
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            new = _language_import(node)
            if new is not None:
                start, end = offset(node.lineno, node.col_offset), offset(node.end_lineno or node.lineno, node.end_col_offset or 0)
                edits.append((start, end, new + "\n" * text.count("\n", start, end)))
    first = next(
        (s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom)) and getattr(s, "module", None) != "__future__"),
        None,
    )
    if first is not None:
        end = offset(first.end_lineno or first.lineno, first.end_col_offset or 0)
        edits.append((end, end, "; import tltyped"))
    out = text
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + new + out[end:]
    return out
