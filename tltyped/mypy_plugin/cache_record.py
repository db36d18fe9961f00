"""When mypy may take a module that defines kernels from its cache.

mypy re-parses a cached module made stale by a dependency without calling
the plugin's after-parse hook (mypy 2.x, build.py: `process_stale_scc`
parses with `post_parse=False`), so the in-body rewrite would not run and
the module would be checked as plain Python, with false errors. The one
hook that can keep a module out of the cache, `report_config_data`, sees
only the module's name and path, before mypy knows what is stale.

So the plugin keeps its own record beside mypy's cache: which modules define
kernels (and at which path), and the size and mtime of every source file
(and of each file's directory) that mypy reported while they were checked.
On the next run, if all of those are unchanged, nothing a kernel module
depends on can have changed, no kernel module can turn stale, and mypy takes
them from its cache like any module. If anything changed, each kernel module
reports data unlike its cache entry's, and mypy parses it afresh, through
the rewrite. A warm run with nothing changed therefore costs what plain
mypy's does; a run after an edit checks the kernel modules again, as a cold
run would.

A record that cannot be read (missing, corrupt, another plugin version)
counts as a change; one that cannot be written (a read-only cache) only
costs the next run that re-check. Should a kernel module still be checked
without the rewrite (a dependency found at a new path while its old file is
unchanged, say), its entry is written with a mark no run reproduces, so
that run's false errors are not served from the cache again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mypy.options import Options

Stamp = list[int]  # [mtime_ns, size]; [] for a path that does not exist


@dataclass
class CacheRecord:
    """The record of one mypy run, read at its start and rewritten whenever a kernel module's entry is."""

    file: Path | None  # None when mypy keeps no cache
    plugin_digest: str
    kernel_modules: dict[str, str] = field(default_factory=dict)  # module -> absolute path
    previous_stamps: dict[str, Stamp] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)  # absolute source paths mypy reported this run
    _stamps: dict[str, Stamp] = field(default_factory=dict)  # taken once per run: sources do not change during one
    _unchanged: bool | None = None
    _cached_as_kernels: set[str] = field(default_factory=set)  # kernel modules this run's checks let mypy take

    @classmethod
    def load(cls, options: Options, plugin_digest: str) -> CacheRecord:
        if options.cache_dir == os.devnull:
            return cls(None, plugin_digest)
        file = Path(options.cache_dir) / "{}.{}".format(*options.python_version) / "tltyped_plugin.json"
        record = cls(file, plugin_digest)
        try:
            data = json.loads(file.read_text())
            if data["plugin"] == plugin_digest:
                record.kernel_modules = dict(data["kernel_modules"])
                record.previous_stamps = {path: list(stamp) for path, stamp in data["stamps"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass  # no usable record: every kernel module is checked afresh
        return record

    def config_data(self, module: str, path: str, *, is_check: bool, parsed: bool, defines_kernels: bool) -> dict[str, Any]:
        """What `report_config_data` returns for `module`, whose source mypy read at `path`; `parsed`: the
        plugin saw this run parse it (its after-parse hook ran), `defines_kernels`: the rewrite found kernels.

        A kernel module's entry is written with a mark; on a later run the
        mark is reproduced only while the record shows nothing changed.
        """
        path = os.path.abspath(path)
        self.seen.add(path)
        if is_check:
            if self.kernel_modules.get(module) == path and self._sources_unchanged():
                self._cached_as_kernels.add(module)
                return self._data("kernels")
            return self._data(None)
        if not parsed and module in self._cached_as_kernels:
            self.kernel_modules.pop(module, None)
            self._save()
            return self._data("checked without the rewrite")
        if defines_kernels:
            self.kernel_modules[module] = path
            self._save()
            return self._data("kernels")
        if self.kernel_modules.pop(module, None) is not None:
            self._save()
        return self._data(None)

    def _data(self, mark: str | None) -> dict[str, Any]:
        return {"tltyped_plugin": self.plugin_digest, **({"module": mark} if mark else {})}

    def _sources_unchanged(self) -> bool:
        if self._unchanged is None:
            self._unchanged = bool(self.previous_stamps) and all(
                self._stamp(path) == stamp for path, stamp in self.previous_stamps.items()
            )
        return self._unchanged

    def _stamp(self, path: str) -> Stamp:
        if path not in self._stamps:
            try:
                stat = os.stat(path)
                self._stamps[path] = [stat.st_mtime_ns, stat.st_size]
            except OSError:
                self._stamps[path] = []
        return self._stamps[path]

    def _save(self) -> None:
        if self.file is None:
            return
        paths = self.seen | {os.path.dirname(path) for path in self.seen}
        data = {
            "plugin": self.plugin_digest,
            "kernel_modules": dict(sorted(self.kernel_modules.items())),
            "stamps": {path: self._stamp(path) for path in sorted(paths)},
        }
        temporary = self.file.with_name(f"{self.file.name}.{os.getpid()}.tmp")
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(data))
            os.replace(temporary, self.file)  # atomic: concurrent runs sharing the cache read a whole record
        except OSError:
            temporary.unlink(missing_ok=True)
