"""What the mypy plugin costs: mypy with the plugin against plain mypy, cold and warm, on users' kernel files.

Both runs use the README's configuration (the `tilelang.language` stubs
found through the editable install, TileLang's other modules untyped); the
plain run only drops `plugins = tltyped.mypy_plugin`, so the ratio is the
plugin's own cost. Three kinds of run, each on a copy of the files in a
fresh directory:

  cold     an empty cache directory (a first run, or CI)
  warm     the cache of a previous identical run, nothing changed
  edit     that cache, one kernel file changed (what an editor's daemon-less run does)

Rows alternate plugin / plain within each round, and a row's figure is its
median over rounds, so load on the host weighs on both alike.

    .venv/bin/python benchmarks/mypy_plugin.py [--rounds 5] [--out table.md] [FILES...]

Default files: examples/*.py (kernels as users write them, eager and tuned).
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = """[mypy]
{plugins}
[mypy-tilelang.*]
ignore_missing_imports = True
follow_imports = skip
"""


def run_mypy(project: Path, config: str, cache: Path) -> float:
    """Seconds one mypy run takes on the project's files (its errors do not matter here, only its time)."""
    files = sorted(str(p) for p in project.glob("*.py"))
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", config, "--cache-dir", str(cache), *files],
        cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
    )
    return time.perf_counter() - start


def one_round(files: list[Path], work: Path) -> dict[tuple[str, str], float]:
    times: dict[tuple[str, str], float] = {}
    for flavour, plugins in (("plugin", "plugins = tltyped.mypy_plugin"), ("plain", "")):
        project = work / flavour
        shutil.rmtree(project, ignore_errors=True)
        project.mkdir(parents=True)
        for f in files:
            shutil.copy(f, project / f.name)
        config = project / "mypy.ini"
        config.write_text(CONFIG.format(plugins=plugins))
        cache = project / ".mypy_cache"
        times[flavour, "cold"] = run_mypy(project, str(config), cache)
        times[flavour, "warm"] = run_mypy(project, str(config), cache)
        edited = project / files[0].name
        edited.write_text(edited.read_text() + "\n# edited\n")
        times[flavour, "edit"] = run_mypy(project, str(config), cache)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    files = args.files or sorted(p for p in (ROOT / "examples").glob("*.py") if p.name != "__init__.py")
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            rounds.append(one_round(files, Path(tmp)))
            print(f"round {i + 1}: " + ", ".join(f"{k[0]} {k[1]} {v:.2f}s" for k, v in rounds[-1].items()), flush=True)
    lines = [
        f"mypy on {len(files)} files ({', '.join(f.name for f in files)}), median of {args.rounds} rounds",
        "",
        "| run | plain s | plugin s | plugin / plain |",
        "|---|---|---|---|",
    ]
    for kind in ("cold", "warm", "edit"):
        plain = statistics.median(r["plain", kind] for r in rounds)
        plugin = statistics.median(r["plugin", kind] for r in rounds)
        lines.append(f"| {kind} | {plain:.2f} | {plugin:.2f} | {plugin / plain:.2f} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
