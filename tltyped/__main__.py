"""`python -m tltyped cache ls|info|clear`: what the kernel cache holds, and emptying it.

    ls               one line per recorded kernel: function, target, consts, size, age (and tuning results)
    info             where the cache is; how many builds, kernel records, generated sources, compiler versions
                     and stale records (of an older format, kind or tltyped, or unreadable) it holds; their size
    clear            remove everything in the cache folder: builds, records, locks, the leftovers of killed
                     builds and the sources kept of failed compiles; not what a build running right now in
                     another process uses (its staging folder and lock)
    clear FUNCTION   remove the launch and tuning records of the functions whose name contains FUNCTION, and
                     the builds those launch records name that no remaining record names

Builds are shared between functions (two specialisations can generate the
same code): `clear FUNCTION` keeps a build that another function's record
still names. Otherwise the next call of FUNCTION elaborates and compiles again.

Where the configured cache cannot be used (TLTYPED_CACHE_DIR names a file, no
home folder, a folder others can write), each command says why on stderr and
exits with status 1: there is no cache to show or clear, since every process
then builds its kernels in a private temporary folder of its own, removed
when it exits. `clear` alone still empties a cache on a file system mounted
noexec: no process loads a kernel from it, but what is there can go.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tltyped.backend import cache, records
from tltyped.errors import UnusableCache


def _age(path: Path) -> str:
    """`3 h ago`; `2 d in the future` for a time ahead of this machine's clock (a record written on a host whose
    clock runs ahead, as over NFS)."""
    seconds = time.time() - path.stat().st_mtime
    when = "ago" if seconds >= 0 else "in the future"
    seconds = abs(seconds)
    for unit, length in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= length:
            return f"{seconds / length:.0f} {unit} {when}"
    return f"{seconds:.0f} s {when}"


def _kib(size: int) -> str:
    return f"{size / 1024:.0f} KiB"


def list_cache() -> None:
    builds = {p.name: p for p in cache.entries()}
    rows = []
    for path, record in records.every():
        if isinstance(record, records.TuningRecord):
            winner = record.candidates[record.winner]["config"] if 0 <= record.winner < len(record.candidates) else None
            times = ", ".join(f"{c['ms']:.4f} ms" if c["ms"] is not None else "failed" if c["error"] else "not timed"
                              for c in record.candidates)  # not timed: the only candidate
            detail = f"tuned on {record.gpu}: best {winner} of [{times}]"
            rows.append((record.function, record.target, records.readable(record.spec), "", _age(path), detail))
        elif isinstance(record, records.LaunchRecord):
            build = builds.get(record.build)
            size = _kib(cache.size(build)) if build else "missing"
            rows.append((record.function, record.target, records.readable(record.spec), size, _age(path), ""))
    if not rows:
        print(f"no kernels recorded in {cache.root()}")
        return
    for function, target, consts, size, age, detail in sorted(rows):
        print(f"{function}  {target}  {consts}  {size}  {age}  {detail}".rstrip())


def info() -> None:
    builds = list(cache.entries())
    found = dict(records.every())
    stale = [path for path, record in found.items() if record is None]

    def count(*kinds: type[records.Record]) -> int:
        return sum(1 for record in found.values() if isinstance(record, kinds))

    size = sum(cache.size(p) for p in builds) + sum(cache.size(p) for p in found)
    print(f"cache: {cache.root()}")
    print(f"builds: {len(builds)}, records: {count(records.LaunchRecord, records.TuningRecord, records.FactoryRecord)}, "
          f"generated sources: {count(records.SourceRecord)}, compiler versions: {count(records.CompilerRecord)}, "
          f"stale records: {len(stale)}, size: {_kib(size)}")


def clear_all(folder: Path) -> None:
    removed, kept = cache.clear(folder)
    running = f"; kept {kept} item(s) of builds running now in other processes" if kept else ""
    print(f"removed {removed} item(s) from {folder}{running}")


def clear_function(name: str) -> None:
    removed = 0
    named: set[str] = set()  # the builds of the removed launch records
    still_named: set[str] = set()  # the builds of the other launch records
    for path, record in list(records.every()):
        if isinstance(record, (records.LaunchRecord, records.TuningRecord, records.FactoryRecord)) and name in record.function:
            cache.remove(path)
            removed += 1
            if isinstance(record, records.LaunchRecord):
                named.add(record.build)
        elif isinstance(record, records.LaunchRecord):
            still_named.add(record.build)
    builds = {p.name: p for p in cache.entries()}
    unnamed = [builds[key] for key in sorted(named - still_named) if key in builds]
    for build in unnamed:
        cache.remove(build)
    print(f"removed {removed} record(s) and {len(unnamed)} build(s) of functions whose name contains {name!r} "
          f"from {cache.root()}")


_VERBS = {"ls": "list", "info": "describe", "clear": "clear"}


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist, deepest first: what making it would make."""
    return [path for path in (folder, *folder.parents) if not os.path.lexists(path)]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tltyped", description="Inspect or clear tltyped's kernel cache.")
    commands = parser.add_subparsers(dest="area", required=True)
    cache_parser = commands.add_parser("cache", help="the disk cache of compiled kernels")
    actions = cache_parser.add_subparsers(dest="action", required=True)
    actions.add_parser("ls", help="list recorded kernels")
    actions.add_parser("info", help="where the cache is and how big")
    clearing = actions.add_parser("clear", help="remove everything, or one function's records and builds")
    clearing.add_argument("function", nargs="?", help="only the records of functions whose name contains this, "
                          "and the builds only they name")
    args = parser.parse_args(argv)
    if args.action == "clear" and args.function is not None and not args.function.strip():
        clearing.error(f"FUNCTION {args.function!r} would match every function; to remove everything, run `clear` alone")
    try:
        unmade = _missing_folders(cache.configured_folder())
    except OSError:  # configured_root says why
        unmade = []
    emptying = args.action == "clear" and args.function is None  # a noexec cache loads nothing, yet can be emptied
    try:
        folder = cache.configured_root(loadable=not emptying)
    except UnusableCache as exc:  # `cache.root()` would name a folder of this command's own, gone when it exits
        fallback = Path(tempfile.gettempdir()) / f"{cache.FALLBACK_PREFIX}*"
        parser.exit(1, (
            f"python -m tltyped cache {args.action}: {exc}. There is no kernel cache to "
            f"{_VERBS[args.action]}: every process that builds kernels warns of this and builds them in a private "
            f"temporary folder of its own ({fallback}), removed when it exits. Set {cache.ENV_CACHE_DIR} to a private, "
            "writable directory to keep them.\n"
        ))
    if unmade:  # no process had made the cache: nothing to show or clear, and none left behind by this command
        try:
            for folder in unmade:
                os.rmdir(folder)
        except OSError:  # another process made it meanwhile: show that one
            pass
        else:
            print(f"no kernel cache at {unmade[0]}: nothing has been built with this setting")
            return
    if args.action == "ls":
        list_cache()
    elif args.action == "info":
        info()
    elif args.function is None:
        clear_all(folder)
    else:
        clear_function(args.function)


if __name__ == "__main__":
    main()
