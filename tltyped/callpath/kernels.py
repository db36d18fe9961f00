"""The compiled kernels of one jit function, by specialisation: in this process, on disk, or built now.

A call that misses the fast path needs the kernel of its specialisation
(consts, const dims, dtypes, strides) for its target. In a process that has
not used it yet, the disk cache's launch record of that specialisation names
the build folder holding the kernel's launcher and cubin, so the kernel is
loaded without elaborating, lowering, or importing TileLang. Only a true
miss builds it (elaborate -> lower -> nvcc, through the `build` function the
table is given), and then records it for the next process.

A record's key covers the function (`frontend/fingerprint.py`), the
specialisation (each const's type and value), the target, the decorator's
build options, and tltyped's own
source with the TileLang, torch and Python versions; the record lists the
compilers that built the kernel, and an upgraded compiler (another size or
mtime) makes it stale. A const whose text is not stable across processes (an
object shown with its address) is never recorded. Tuning results are
records too (see `tuning`/`save_tuning`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tltyped.backend import build as builds
from tltyped.backend import cache
from tltyped.backend.kernel import CompiledKernel, load
from tltyped.frontend.fingerprint import fingerprint
from tltyped.frontend.signature import Specialization
from tltyped.types.dtypes import DType, is_dtype_like
from tltyped.types.params import Tune

logger = logging.getLogger(__name__)

RECORD_FORMAT = 1


@functools.cache
def package_digest() -> str:
    """sha256 of tltyped's own code, templates and C sources: they decide what a specialisation builds."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]
    for path in sorted(p for p in package.rglob("*") if p.suffix in (".py", ".j2", ".c") and p.is_file()):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def stable_text(value: object) -> str | None:
    """A text of `value` that is the same in every process and tells apart what compiles differently.

    It names the type (`2`, `2.0` and `True` are three kernels) and is None
    when no such text is known (an object whose repr shows its address).
    """
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        if isinstance(value, str) and is_dtype_like(value):
            return f"dtype:{value}"  # TileLang's dtype objects and dtype names alike
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, type) and issubclass(value, DType):
        return f"dtype:{value.name}"
    if isinstance(value, Tune):
        parts = [stable_text(v) for v in value.values]
        return None if None in parts else f"tune:[{', '.join(p for p in parts if p)}]"
    if isinstance(value, (tuple, list, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, frozenset) else value
        parts = [stable_text(v) for v in items]
        return None if None in parts else f"{type(value).__name__}:({', '.join(p for p in parts if p)})"
    if is_dtype_like(value):
        return f"dtype:{value}"
    text = repr(value)
    return None if " at 0x" in text else f"{type(value).__module__}.{type(value).__qualname__}:{text}"


def describe(spec: Specialization) -> dict[str, Any]:
    """The specialisation as text, or None where a const has no stable text."""
    consts = {name: stable_text(value) for name, value in sorted(spec.consts.items())}
    return {
        "consts": consts,
        "dims": dict(sorted(spec.dims.items())),
        "dtypes": {name: d.name for name, d in sorted(spec.dtypes.items())},
        "strides": {name: list(s) if s is not None else None for name, s in sorted(spec.strides.items())},
    }


@dataclass
class _Compilers:
    """The compilers a build ran, by resolved path, with what identifies their binaries."""

    files: dict[str, list[int]]

    @classmethod
    def of(cls, folder: Path) -> _Compilers:
        toolchain = cache.manifest(folder).get("toolchain_files", {})
        return cls(dict(toolchain))

    def unchanged(self) -> bool:
        return all(builds.file_identity(path) == identity for path, identity in self.files.items())


class KernelTable:
    """The kernels of one jit function, keyed by specialisation and target arch."""

    def __init__(
        self, fn: Callable[..., Any], build: Callable[[Specialization, dict[str, Any]], CompiledKernel], options: str = "",
    ) -> None:
        self._fn = fn
        self._build = build
        self._options = options  # how the kernels are built besides their specialisation (`BuildOptions.describe`)
        self._kernels: dict[tuple[Any, ...], CompiledKernel] = {}
        self.compiles = 0  # kernels built (elaborated and lowered) in this process
        self.disk_hits = 0  # kernels loaded from the disk cache without building them

    @functools.cached_property
    def _function(self) -> str:
        return fingerprint(self._fn)

    def record_key(self, spec: Specialization, target: Mapping[str, Any], *extra: str) -> str | None:
        """The key of the specialisation's record, or None when a const has no stable text."""
        about = describe(spec)
        if None in about["consts"].values():
            return None
        identity = [RECORD_FORMAT, self._function, package_digest(), builds.versions(), self._options, about, dict(target), *extra]
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]

    def get(self, spec: Specialization, target: dict[str, Any]) -> CompiledKernel:
        """The compiled kernel of `spec` for `target`: in memory, from its disk record, or built now."""
        about = describe(spec)
        unstable = tuple((k, type(v), v) for k, v in sorted(spec.consts.items()) if about["consts"][k] is None)
        identity = (json.dumps(about, sort_keys=True), target["arch"], unstable)
        kernel = self._kernels.get(identity)
        if kernel is None:
            kernel = self._kernels[identity] = self.load_or_build(spec, target)
        return kernel

    def load_or_build(self, spec: Specialization, target: dict[str, Any]) -> CompiledKernel:
        """The kernel of `spec` from its disk record, or built now and recorded (not kept in memory)."""
        key = self.record_key(spec, target)
        if key is None:
            return self._built(spec, target)
        kernel = self._load(key)
        if kernel is not None:
            return kernel
        with cache.locked(key):  # processes starting at once (torchrun ranks) build a specialisation once
            kernel = self._load(key)
            if kernel is None:
                kernel = self._built(spec, target)
                _write(key, {"function": f"{self._fn.__module__}.{self._fn.__qualname__}", "build": kernel.folder.name,
                             "target": target["arch"], "spec": describe(spec)})
        return kernel

    def _built(self, spec: Specialization, target: dict[str, Any]) -> CompiledKernel:
        kernel = self._build(spec, target)
        self.compiles += 1
        logger.info("%s: built %s for %s (%s)", self._fn.__qualname__, _brief(spec), target["arch"],
                    "nvcc" if kernel.compiled else "device code from the disk cache")
        return kernel

    def _load(self, key: str) -> CompiledKernel | None:
        record = cache.read_record(key)
        if record is None:
            return None
        folder = cache.find(str(record.get("build", "")))
        if folder is None or not _Compilers.of(folder).unchanged():
            logger.info("%s: disk record %s is stale; rebuilding", self._fn.__qualname__, key)
            return None
        kernel = load(folder, compiled=False)
        self.disk_hits += 1
        logger.info("%s: loaded %s from the disk cache (%s)", self._fn.__qualname__, _brief_record(record), folder)
        return kernel

    # -- tuning results ------------------------------------------------------------

    def tuning(self, spec: Specialization, target: Mapping[str, Any], gpu: str) -> dict[str, Any] | None:
        """The saved tuning result of a specialisation whose consts include `Tune` spaces, for this GPU."""
        key = self.record_key(spec, target, "tuning", gpu)
        return None if key is None else cache.read_record(key)

    def save_tuning(self, spec: Specialization, target: Mapping[str, Any], gpu: str, result: Mapping[str, Any]) -> None:
        key = self.record_key(spec, target, "tuning", gpu)
        if key is not None:
            _write(key, {"function": f"{self._fn.__module__}.{self._fn.__qualname__}", "gpu": gpu,
                         "target": target["arch"], "spec": describe(spec), **result})


def _brief(spec: Specialization) -> str:
    consts = ", ".join(f"{k}={v!r}" for k, v in spec.consts.items())
    dims = ", ".join(f"{k}={v}" for k, v in spec.dims.items())
    return "; ".join(p for p in (consts, dims) if p) or "its only specialisation"


def _brief_record(record: Mapping[str, Any]) -> str:
    spec = record.get("spec", {})
    consts = ", ".join(f"{k}={str(v).split(':', 1)[-1]}" for k, v in spec.get("consts", {}).items())
    return consts or "its only specialisation"


def _write(key: str, record: Mapping[str, Any]) -> None:
    try:
        cache.write_record(key, record)
    except OSError as exc:  # a full disk or a read-only cache: the kernel still runs, the next process builds it
        warnings.warn(f"tltyped: cannot save a cache record ({exc})", cache.CacheWarning, stacklevel=3)
