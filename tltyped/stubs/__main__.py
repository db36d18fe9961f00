"""`python -m tltyped.stubs MODULE_OR_FILE...`: write typed stubs of modules' jit functions into a stubs folder.

By default each stub goes to `typings/<module path>.pyi` (`typings/examples/gemm.pyi`
for `examples.gemm`, `typings/pkg/__init__.pyi` for a package): pyright's default
`stubPath`, and a folder mypy reads when it is on `mypy_path`. A package above the
module that imports its kernels (`from .kern import gemm`) gets its stub there too
(see `importing_packages`). Not beside the module: a `.pyi` next to a `.py` hides the source from
mypy, and so the kernels from the tltyped plugin.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tltyped.errors import ArgumentValueError
from tltyped.stubs import defining_module, kernels_bound, render_stub

DEFAULT_DIR = "typings"


def load(target: str) -> ModuleType:
    if target.endswith(".py"):
        path = Path(target).resolve()
        name, root = file_module(path)
        if name != path.stem:  # a package or its module: imported by its name (relative imports resolve), not as a file
            if str(root) not in sys.path:
                sys.path.insert(0, str(root))
            return importlib.import_module(name)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(target)


def file_module(path: Path) -> tuple[str, Path]:
    """The dotted name of the module a .py file is, and the folder it is imported from: each folder above the file
    holding an `__init__.py` is a package, as mypy reads a file's module. A type checker looks for the stub of
    `proj/ops/kernels.py` as `proj.ops.kernels`; written under its bare file name, it would be no module's."""
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts) or path.stem, folder


def stub_path(module: ModuleType, folder: Path) -> Path:
    """Where a type checker looks for the module's stub in `folder`: its dotted name as a path, a package's
    `__init__.pyi` in its folder (as `pkg.pyi`, pyright would find no stub of its submodules there)."""
    path = folder.joinpath(*module.__name__.split("."))
    return path / "__init__.pyi" if hasattr(module, "__path__") else path.with_suffix(".pyi")


def importing_packages(module: ModuleType) -> list[ModuleType]:
    """The packages above the module that bind one of its kernels (`from .kern import gemm` in `__init__.py`),
    outermost first. Each needs a stub of its own, importing the kernel from the module's: pyright resolves
    the package's relative import beside its `__init__.py`, never in the stubs folder, so `from pkg import
    gemm` would be typed from the kernel's source."""
    own = {id(k) for k in kernels_bound(module).values() if defining_module(k) == module.__name__}
    parts = module.__name__.split(".")
    packages = [sys.modules.get(".".join(parts[:end])) for end in range(1, len(parts))]
    return [p for p in packages if p is not None and any(id(k) in own for k in kernels_bound(p).values())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tltyped.stubs", description=__doc__)
    parser.add_argument("modules", nargs="+", metavar="module", help="a module name (examples.gemm) or a .py file")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-d", "--dir", default=DEFAULT_DIR, help=f"the stubs folder (default: {DEFAULT_DIR})")
    where.add_argument("-o", "--out", help="write one module's stub to this file ('-' for standard output)")
    opts = parser.parse_args(argv)
    if opts.out is not None and len(opts.modules) != 1:
        parser.error("-o/--out takes one module; use -d/--dir for several")
    for target in opts.modules:
        try:
            module = load(target)
            text = render_stub(module)
        except (ImportError, OSError, ArgumentValueError) as exc:  # a module not found, a file not there, no jit function
            print(f"python -m tltyped.stubs: {target}: {exc}; nothing written for it", file=sys.stderr)
            return 1
        if opts.out == "-":
            sys.stdout.write(text)
            continue
        if opts.out is not None:
            write(Path(opts.out), text)
            continue
        write(stub_path(module, Path(opts.dir)), text)
        for package in importing_packages(module):
            write(stub_path(package, Path(opts.dir)), render_stub(package))
    return 0


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
