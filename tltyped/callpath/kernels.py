"""The compiled kernels of one jit function, by specialisation: in this process, on disk, or built now.

A call that misses the fast path needs the kernel of its specialisation
(consts, const dims, dtypes, strides) for its target, built from the values
its elaboration reads now (frontend/fingerprint.py: closure cells, globals,
helpers). In a process that has not used that kernel yet, the disk cache's
launch record of the same specialisation and values names the build folder
holding its launcher and cubin, so the kernel is loaded without elaborating,
lowering, or importing TileLang. Only a true miss builds it (elaborate ->
lower -> nvcc, through the `build` function the table is given), and then
records it for the next process.

The values are read again at every miss, so a kernel is always built from,
and recorded under, the values it was built with; a global or closure cell
rebound after a first call sends the next call here too (the dispatcher
checks the places the values were read from, fingerprint.Watch). Where some value has no text
that is the same in every process (see fingerprint.py), nothing is read from
or written to the disk records; the kernel is elaborated in each process,
and two such values share a kernel in memory only when they are the same
objects. A record lists the compilers that built the kernel, and an upgraded
compiler (another size or mtime) makes it stale.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from tltyped import locks
from tltyped.backend import build as builds
from tltyped.backend import cache, records
from tltyped.backend.kernel import CompiledKernel, load
from tltyped.callpath import torch_direct
from tltyped.errors import CacheWarning
from tltyped.frontend.fingerprint import Reader, fingerprint
from tltyped.frontend.signature import KernelSignature, Specialization
from tltyped.log import warn_once

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Identity:
    """A specialisation with the values it is built from: in this process, and on disk where it can be."""

    memory: str  # tells apart, in this process, every kernel the table may hold
    record: str | None  # the launch record's key; None where some value has no stable text
    about: records.SpecText
    held: tuple[object, ...]  # the values `memory` names by identity, kept alive with the kernel


class KernelTable:
    """The kernels of one jit function, keyed by specialisation, target arch and the values elaboration reads."""

    def __init__(
        self, fn: Callable[..., Any], signature: KernelSignature,
        build: Callable[[Specialization, dict[str, Any]], CompiledKernel[..., Any]], options: Callable[[], str] = lambda: "",
    ) -> None:
        self._fn = fn
        self._signature = str(signature)
        self._kernel_name = signature.name  # what its builds' manifests name them (launcher.py)
        self._build = build
        self._options = options  # how the kernels are built besides their specialisation, now (`BuildOptions.describe`)
        self._name = f"{fn.__module__}.{fn.__qualname__}"
        self._kernels: dict[str, tuple[CompiledKernel[..., Any], tuple[object, ...]]] = {}
        self._chosen: dict[str, tuple[dict[str, Hashable], tuple[object, ...]]] = {}  # tuning winners, as _kernels
        self._lock = locks.Lock()
        self.compiles = 0  # kernels built (elaborated and lowered) in this process
        self.disk_hits = 0  # kernels loaded from the disk cache without building them

    def identity(self, spec: Specialization, target: Mapping[str, Any], *extra: str) -> _Identity:
        """What the specialisation is built from now (the function's values read again)."""
        function = fingerprint(self._fn)
        reader = Reader()
        about = records.describe(spec, reader)
        whole = f"{function.digest} {self._signature}"
        options = self._options()
        memory = hashlib.sha256(json.dumps([whole, about, dict(target), options, *extra], sort_keys=True).encode()).hexdigest()
        stable = function.stable and reader.stable
        record = records.kernel_key(whole, about, target, options, *extra) if stable else None
        return _Identity(memory, record, about, function.held + tuple(reader.held))

    def get(self, spec: Specialization, target: dict[str, Any]) -> CompiledKernel[..., Any]:
        """The compiled kernel of `spec` for `target`: in memory, from its disk record, or built now."""
        identity = self.identity(spec, target)
        with self._lock:
            known = self._kernels.get(identity.memory)
        if known is not None:
            return known[0]
        kernel, held = self._load_or_build(identity, spec, target)
        if not held:
            return kernel
        with self._lock:
            return self._kernels.setdefault(identity.memory, (kernel, identity.held))[0]

    def load_or_build(self, spec: Specialization, target: dict[str, Any]) -> CompiledKernel[..., Any]:
        """The kernel of `spec` from its disk record, or built now and recorded (not kept in memory)."""
        return self._load_or_build(self.identity(spec, target), spec, target)[0]

    def _load_or_build(
        self, identity: _Identity, spec: Specialization, target: dict[str, Any],
    ) -> tuple[CompiledKernel[..., Any], bool]:
        """The kernel of `identity` from its disk record, or built now and recorded, and whether it is that
        identity's (see `_built`)."""
        key = identity.record
        if key is None:
            logger.info("%s: not recorded on disk (a value it reads has no stable text)", self._fn.__qualname__)
            return self._built(identity, spec, target)
        kernel = self._load(key)
        if kernel is not None:
            return kernel, True
        with cache.locked(key):  # processes starting at once (torchrun ranks) build a specialisation once
            kernel = self._load(key)
            if kernel is not None:
                return kernel, True
            kernel, held = self._built(identity, spec, target)
            if held:
                records.write(key, records.LaunchRecord(self._name, target["arch"], identity.about, kernel.folder.name))
        return kernel, held

    def _built(
        self, identity: _Identity, spec: Specialization, target: dict[str, Any],
    ) -> tuple[CompiledKernel[..., Any], bool]:
        """The kernel built now, and whether the values it is built from are still `identity`'s once it is built.

        Elaboration reads them again as it runs, and some may have changed
        since `identity` read them: a global rebound by another thread, or the
        body's file, edited on disk since the process read it, which TileLang
        parses the body from anew. Such a kernel is this call's only: kept
        under `identity` (in memory or on disk), it would be served for values
        it was not built from (a process running the file as it was would
        load the edited file's kernel).

        So a miss that builds reads the values twice, and neither read can
        stand for the other: the first keys the lookup, before anything is
        built; only a read after the build can see what changed during it.
        The second costs about 0.1 ms (a process's first read about 1 ms),
        against 0.3 s to lower a kernel and about 3 s of nvcc; a kernel
        loaded from memory or from its disk record is read once.
        """
        kernel = with_torch(self._build(spec, target))
        self.compiles += 1
        logger.info("%s: built %s for %s (%s)", self._fn.__qualname__, _brief(spec), target["arch"],
                    "nvcc" if kernel.compiled else "device code from the disk cache")
        held = self.identity(spec, target).memory == identity.memory
        if not held:
            logger.info("%s: a value it reads changed while it was built; the kernel is neither kept nor recorded",
                        self._fn.__qualname__)
        return kernel, held

    def _load(self, key: str) -> CompiledKernel[..., Any] | None:
        record = records.read(records.LaunchRecord, key)
        if record is None:
            return None
        folder = cache.find(record.build)
        manifest = cache.manifest(folder) if folder is not None else {}
        if folder is not None and manifest.get("name") != self._kernel_name:  # a record edited, or written by a bug
            warn_once(f"tltyped: cache record {key} of {self._name} names the build of another kernel "
                      f"({manifest.get('name')!r}, {folder}); rebuilding", CacheWarning)
            return None
        toolchain = manifest.get("toolchain_files", {})
        if folder is None or not all(builds.file_identity(path) == identity for path, identity in toolchain.items()):
            # what follows (built, or loaded once another process has rebuilt it) is logged where it happens
            logger.info("%s: disk record %s is stale (its build is gone or was made with other toolchain files)",
                        self._fn.__qualname__, key)
            return None
        kernel = with_torch(load(folder, compiled=False))
        self.disk_hits += 1
        logger.info("%s: loaded %s from the disk cache (%s)", self._fn.__qualname__,
                    records.readable(record.spec) or "its only specialisation", folder)
        return kernel

    # -- tuning results ------------------------------------------------------------

    def chosen(
        self, spec: Specialization, target: Mapping[str, Any], gpu: str, configs: list[dict[str, Hashable]],
    ) -> dict[str, Hashable] | None:
        """What won the search of a specialisation whose consts include `Tune` spaces (`configs`, in order) on this
        GPU: remembered from this process, or saved on disk; None where it was never searched."""
        identity = self.identity(spec, target, "tuning", gpu)
        with self._lock:
            known = self._chosen.get(identity.memory)
        if known is not None:
            return known[0]
        saved = records.read(records.TuningRecord, identity.record) if identity.record is not None else None
        if saved is None or len(saved.candidates) != len(configs) or not 0 <= saved.winner < len(configs):
            return None
        logger.info("%s: tuning result from the disk cache: %s", self._kernel_name, configs[saved.winner])
        with self._lock:
            return self._chosen.setdefault(identity.memory, (configs[saved.winner], identity.held))[0]

    def choose(
        self, spec: Specialization, target: Mapping[str, Any], gpu: str, configs: list[dict[str, Hashable]],
        result: Mapping[str, Any],
    ) -> dict[str, Hashable]:
        """Remember a search's result (`SearchResult.as_record`), on disk where every value has stable text; the
        winner."""
        identity = self.identity(spec, target, "tuning", gpu)
        if identity.record is not None:
            records.write(identity.record, records.TuningRecord(
                self._name, target["arch"], identity.about, gpu, result["candidates"], result["winner"]))
        winner = configs[int(result["winner"])]
        with self._lock:
            self._chosen[identity.memory] = (winner, identity.held)
        return winner


def with_torch(kernel: CompiledKernel[..., Any]) -> CompiledKernel[..., Any]:
    """The kernel, allocating its outputs through torch's own allocator and bumping the versions of the tensors it
    writes through torch's own counters (torch_direct.py) where the helper is built."""
    if kernel.outputs and kernel.module is not None:
        kernel.module.set_allocator(torch_direct.torch_empty())
    if kernel.written and kernel.module is not None:
        kernel.module.set_version_bump(torch_direct.version_bump())
    return kernel


def _brief(spec: Specialization) -> str:
    consts = ", ".join(f"{k}={v!r}" for k, v in spec.consts.items())
    dims = ", ".join(f"{k}={v}" for k, v in spec.dims.items())
    return "; ".join(p for p in (consts, dims) if p) or "its only specialisation"
