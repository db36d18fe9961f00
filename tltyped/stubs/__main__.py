"""`python -m tltyped.stubs MODULE_OR_FILE [-o OUT.pyi]`: write typed stubs of a module's jit functions."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tltyped.stubs import render_stub


def load(target: str) -> ModuleType:
    if target.endswith(".py"):
        path = Path(target).resolve()
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tltyped.stubs", description=__doc__)
    parser.add_argument("module", help="a module name (examples.gemm) or a .py file")
    parser.add_argument("-o", "--out", help="write here instead of standard output")
    opts = parser.parse_args(argv)
    text = render_stub(load(opts.module))
    if opts.out:
        Path(opts.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
