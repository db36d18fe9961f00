"""Whose code a Python file is: the user's own, or tltyped's, the standard library's, an installed package's.

The fingerprint keys what a kernel reads from the user's code by its source,
and a library's by its version (frontend/fingerprint.py); a failed build names
the user's line it passed through (frontend/elaborate.py); a warning names the
user's line that called into tltyped (log.py).
"""

from __future__ import annotations

import functools
import sysconfig
from pathlib import Path

from tltyped.templates import GENERATED

PACKAGE = Path(__file__).resolve().parent
INSTALLED_DIRS = tuple({Path(sysconfig.get_paths()[name]).resolve() for name in ("purelib", "platlib")})
STDLIB_DIR = Path(sysconfig.get_paths()["stdlib"]).resolve()
LIBRARY_PACKAGES = frozenset({"tilelang", "tvm", "tvm_ffi", "torch"})  # wherever they are installed from


def is_users_code(path: str, module: str) -> bool:
    """Whether a Python file (of module `module`) is the user's own code: not tltyped's nor a library's."""
    return path.endswith(".py") and not under(path, PACKAGE) and not is_library_code(path, module)


def is_library_code(path: str, module: str) -> bool:
    """Whether code (of module `module`) is the standard library's (frozen modules too), an installed package's,
    or TileLang's, TVM's or torch's from any path."""
    return (path.startswith("<frozen") or module.partition(".")[0] in LIBRARY_PACKAGES
            or under(path, STDLIB_DIR, *INSTALLED_DIRS))


def is_tltyped_code(path: str) -> bool:
    """Whether a file is tltyped's: its package's, or Python it generated (a fast path, a router)."""
    return path.startswith(GENERATED) or under(path, PACKAGE)


@functools.lru_cache(maxsize=4096)
def under(path: str, *folders: Path) -> bool:
    """Whether the file is inside one of the folders (by whole path components: `tltyped_kernels.py` beside the
    package is not inside `tltyped`). Answered once per file and folders, as a process imports a file once: a
    fingerprint asks it for every function and module it reads."""
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(folder) for folder in folders)
