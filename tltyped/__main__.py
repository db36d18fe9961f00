"""`python -m tltyped cache ls|info|clear`: what the kernel cache holds, and emptying it.

    ls               one line per recorded kernel: function, target, consts, size, age (and tuning results)
    info             where the cache is, how many builds, kernel records, generated sources and compiler versions it holds, their size
    clear [FUNCTION] remove everything, or only the records of functions whose name contains FUNCTION

Builds are shared between functions and processes; `clear FUNCTION` removes
that function's records (its next call elaborates again and finds its build
if nothing else changed), `clear` removes builds too.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tltyped.backend import cache


def _age(path: Path) -> str:
    seconds = time.time() - path.stat().st_mtime
    for unit, length in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= length:
            return f"{seconds / length:.0f} {unit}"
    return f"{seconds:.0f} s"


def _kib(size: int) -> str:
    return f"{size / 1024:.0f} KiB"


def _consts(record: dict[str, Any]) -> str:
    consts = record.get("spec", {}).get("consts", {})
    dims = record.get("spec", {}).get("dims", {})
    parts = [f"{k}={str(v).split(':', 1)[-1]}" for k, v in consts.items()] + [f"{k}={v}" for k, v in dims.items()]
    return ", ".join(parts)


def list_cache() -> None:
    builds = {p.name: p for p in cache.entries()}
    rows = []
    for path, record in cache.records():
        if "build" not in record and "winner" not in record:
            continue  # generated source (a fast path), not a kernel
        function, target = record.get("function", "?"), record.get("target", "?")
        if "winner" in record:
            candidates = record.get("candidates", [])
            winner = candidates[record["winner"]] if 0 <= record["winner"] < len(candidates) else {}
            times = ", ".join(f"{c.get('ms'):.4f} ms" if c.get("ms") is not None else "failed" for c in candidates)
            detail = f"tuned on {record.get('gpu', '?')}: best {winner.get('config')} of [{times}]"
            rows.append((function, target, _consts(record), "", _age(path), detail))
        else:
            build = builds.get(str(record.get("build")))
            rows.append((function, target, _consts(record), _kib(cache.size(build)) if build else "missing",
                         _age(path), ""))
    if not rows:
        print(f"no kernels recorded in {cache.root()}")
        return
    for function, target, consts, size, age, detail in sorted(rows):
        print(f"{function}  {target}  {consts}  {size}  {age} ago  {detail}".rstrip())


def info() -> None:
    entries, records = list(cache.entries()), list(cache.records())
    kernels = sum(1 for _, r in records if "build" in r or "winner" in r)
    compilers = sum(1 for _, r in records if "compiler" in r)
    total = sum(cache.size(p) for p in entries) + sum(cache.size(p) for p, _ in records)
    print(f"cache: {cache.root()}")
    print(f"builds: {len(entries)}, records: {kernels}, generated sources: {len(records) - kernels - compilers}, "
          f"compiler versions: {compilers}, size: {_kib(total)}")


def clear(function: str | None) -> None:
    removed = 0
    for path, record in list(cache.records()):
        if function is None or function in str(record.get("function", "")):
            cache.remove(path)
            removed += 1
    if function is None:
        for entry in list(cache.entries()):
            cache.remove(entry)
            removed += 1
    print(f"removed {removed} item(s) from {cache.root()}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tltyped", description="Inspect or clear tltyped's kernel cache.")
    commands = parser.add_subparsers(dest="area", required=True)
    cache_parser = commands.add_parser("cache", help="the disk cache of compiled kernels")
    actions = cache_parser.add_subparsers(dest="action", required=True)
    actions.add_parser("ls", help="list recorded kernels")
    actions.add_parser("info", help="where the cache is and how big")
    clearing = actions.add_parser("clear", help="remove records and builds")
    clearing.add_argument("function", nargs="?", help="only the records of functions whose name contains this")
    args = parser.parse_args(argv)
    if args.action == "ls":
        list_cache()
    elif args.action == "info":
        info()
    else:
        clear(args.function)


if __name__ == "__main__":
    main()
