"""The disk cache where users' machines differ: where it is, who can read it, what clears it, what a failure says.

Each test makes the condition the way a user meets it (a relative
TLTYPED_CACHE_DIR and a chdir, a container without a home folder, a build
killed mid-compile, records written by an older tltyped, a full disk, a
missing nvcc, a misspelt target, the ranks of one job asking for a kernel at
once in a shared cache with TMPDIR on another filesystem), in a process of its
own with real environment variables where the environment is the condition,
and checks what the user sees.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import torch

import tltyped as tl
from tests.conftest import has_nvcc, needs_nvcc
from tests.kernels import torch_ops
from tests.kernels.settings import Tile
from tests.unit.test_disk_cache import (  # noqa: F401
    build_probe, cache_dir, compiles, fake_compiler, probe_step, replace_file, so_of,
)
from tltyped.backend import build, cache, records
from tltyped.frontend.const_text import shown
from tltyped.frontend.fingerprint import Reader

ROOT = Path(__file__).resolve().parents[2]


def python(
    *args: str, env: Mapping[str, str | None] | None = None, cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python args` in a new process that imports tltyped and these tests; `env` sets (None: unsets) variables."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name, value in (env or {}).items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=environment, cwd=cwd, timeout=300)


def cache_command(*args: str) -> str:
    """What `python -m tltyped cache args` prints (about the cache TLTYPED_CACHE_DIR names now)."""
    run = python("-m", "tltyped", "cache", *args)
    assert run.returncode == 0, run.stderr
    return run.stdout


def builds_in(folder: Path) -> list[str]:
    return sorted(entry.name for entry in folder.iterdir() if (entry / cache.MANIFEST).is_file())


# -- where the cache is, and that all of it is private ------------------------------------------------


MOVING = """
import os
from tests.unit.test_disk_cache import build_probe
build_probe(701)
os.chdir("elsewhere")
build_probe(702)
"""


def test_a_relative_cache_dir_does_not_follow_chdir(tmp_path: Path) -> None:
    """TLTYPED_CACHE_DIR=kernel-cache names the folder where the process started, not one per working directory."""
    (tmp_path / "elsewhere").mkdir()
    run = python("-c", MOVING, env={cache.ENV_CACHE_DIR: "kernel-cache"}, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert len(builds_in(tmp_path / "kernel-cache" / "modules")) == 2
    assert not (tmp_path / "elsewhere" / "kernel-cache").exists()


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The usual umask (022): what is created without a mode of its own is readable by everyone."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def test_everything_the_cache_makes_is_private(cache_dir: Path, usual_umask: None) -> None:
    """Folders 0700 and files 0600, lock files included; also after the cache folder was removed under a
    running process (the lock file would make it again with default permissions)."""
    build_probe(711)
    shutil.rmtree(cache_dir)
    build_probe(712)
    made = [cache_dir, *cache_dir.rglob("*")]
    assert any(path.suffix == ".lock" for path in made)
    for path in made:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path} is {stat.filemode(os.stat(path).st_mode)}"


def test_a_record_written_after_the_cache_was_removed_makes_it_again(cache_dir: Path) -> None:
    """`rm -rf` of the cache under a running process: its next record is written, with no warning, in a folder
    made again as private as the first."""
    folder, _ = build.build("probe", [probe_step(714)])
    shutil.rmtree(cache_dir)
    record = records.LaunchRecord("mod.scale", "sm_90a", {"consts": {}, "dims": {}, "dtypes": {}, "strides": {}}, folder.name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records.write("a" * 32, record)
    assert records.read(records.LaunchRecord, "a" * 32) == record
    assert stat.S_IMODE(os.stat(cache_dir / "modules").st_mode) == 0o700


NO_HOME = """
import pwd

def no_entry(uid):
    raise KeyError(f"getpwuid(): uid not found: {uid}")

pwd.getpwuid = no_entry  # a container running as a uid that has no passwd entry
"""

USER_MODULE = """
import tltyped as tl

@tl.jit
def double(X: tl.Tensor[tl.float32, 8]) -> None:
    pass

print("decorated", double.__name__)
"""


@pytest.mark.parametrize("command", ["@tl.jit", "cache info"])
def test_no_home_folder_builds_in_a_private_temporary_cache(tmp_path: Path, command: str) -> None:
    """No HOME and no passwd entry: one warning, then the private fallback; `cache info` says there is no cache and
    why (a folder of its own, gone when it exits, would be no process's cache)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(NO_HOME)
    (tmp_path / "user_kernels.py").write_text(USER_MODULE)
    args = ["user_kernels.py"] if command == "@tl.jit" else ["-m", "tltyped", "cache", "info"]
    nowhere = {"HOME": None, "XDG_CACHE_HOME": None, cache.ENV_CACHE_DIR: None}
    env = {"PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{ROOT}", **nowhere}
    run = python(*args, env=env, cwd=tmp_path)
    assert "neither TLTYPED_CACHE_DIR, XDG_CACHE_HOME nor a home folder is set" in run.stderr
    if command == "@tl.jit":
        assert run.returncode == 0, run.stderr
        assert run.stderr.count("CacheWarning") == 1, run.stderr
        assert run.stdout.strip() == "decorated double"
    else:
        assert (run.returncode, run.stdout, run.stderr.count("CacheWarning")) == (1, "", 0), run.stderr
        fallback = Path(tempfile.gettempdir()) / f"{cache.FALLBACK_PREFIX}*"
        assert f"private temporary folder of its own ({fallback}), removed when it exits" in run.stderr


@pytest.mark.parametrize("command", [["ls"], ["info"], ["clear"], ["clear", "double"]], ids=" ".join)
def test_a_cache_dir_that_is_a_file_is_named_by_the_cache_command(tmp_path: Path, command: list[str]) -> None:
    """TLTYPED_CACHE_DIR naming a file: each command says so and where kernels go instead, and exits 1; it reports
    no folder of its own as the cache (nor clears one), and says what a kernel process's warning says."""
    blocker = tmp_path / "kernel-cache"
    blocker.write_text("not a folder")
    run = python("-m", "tltyped", "cache", *command, env={cache.ENV_CACHE_DIR: str(blocker)})
    assert (run.returncode, run.stdout, run.stderr.count("CacheWarning")) == (1, "", 0), run.stdout + run.stderr
    reason = f"the kernel cache cannot be used: {cache.ENV_CACHE_DIR}={blocker} is a file, not a directory"
    assert run.stderr.startswith(f"python -m tltyped cache {command[0]}: {reason}. "), run.stderr
    fallback = Path(tempfile.gettempdir()) / f"{cache.FALLBACK_PREFIX}*"
    assert f"builds them in a private temporary folder of its own ({fallback}), removed when it exits" in run.stderr
    assert blocker.read_text() == "not a folder"
    (tmp_path / "user_kernels.py").write_text(USER_MODULE)
    user = python("user_kernels.py", env={cache.ENV_CACHE_DIR: str(blocker)}, cwd=tmp_path)
    assert user.returncode == 0 and user.stdout.strip() == "decorated double", user.stderr
    assert user.stderr.count("CacheWarning") == 1 and f"{reason}; kernels are built in " in user.stderr, user.stderr


FORKED_CHILD_EXITS = """
import os, sys
from tltyped.backend import cache
folder = cache.root()
pid = os.fork()
if pid == 0:
    sys.exit(0)  # a forked child that ends normally: the atexit handlers it inherited run
_, status = os.waitpid(pid, 0)
print(folder, os.path.isdir(folder), os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_ending_leaves_the_private_fallback_of_its_parent(tmp_path: Path) -> None:
    """A process builds in its private fallback folder (TLTYPED_CACHE_DIR names a file) and forks a child that ends
    normally: the folder, still the parent's cache, stays until the parent exits, when it is removed."""
    blocker = tmp_path / "kernel-cache"
    blocker.write_text("not a folder")
    run = python("-c", FORKED_CHILD_EXITS, env={cache.ENV_CACHE_DIR: str(blocker)})
    assert run.returncode == 0, run.stderr
    folder, exists, child = run.stdout.split()
    assert Path(folder).name.startswith(cache.FALLBACK_PREFIX) and child == "0", run.stdout
    assert exists == "True", "the forked child's exit removed the fallback folder its parent builds in"
    assert not Path(folder).exists(), "the parent's exit left its fallback folder"


IN_THE_FALLBACK = """
import warnings
from tests.unit.test_disk_cache import build_probe
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    answer, folder, compiled = build_probe(841)
print(answer, compiled, folder.is_dir(), sum("cannot be used" in str(w.message) for w in caught))
print(folder)
"""


@pytest.mark.parametrize(("condition", "reason"), [
    ("a file", "is a file, not a directory"),
    ("writable by others", "is writable by other users (mode drwxrwxrwx)"),
    ("read-only", "Permission denied"),
])
def test_an_unusable_cache_builds_in_a_private_folder_gone_at_exit_and_the_command_exits_1(
    tmp_path: Path, condition: str, reason: str,
) -> None:
    """A cache that cannot be used: the process warns once and builds in a private temporary folder, which is
    removed when it exits (nothing is left in TMPDIR); `cache ls` says why there is no cache and exits 1."""
    configured = tmp_path / "kernel-cache"
    if condition == "a file":
        configured.write_text("")
    else:
        (configured / "modules").mkdir(parents=True)
        os.chmod(configured / "modules", 0o777 if condition == "writable by others" else 0o500)
        os.chmod(configured, 0o700 if condition == "writable by others" else 0o500)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    prefix: list[str] = []
    if condition == "read-only" and os.getuid() == 0:  # root writes anywhere: take away what lets it
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder read-only to this process")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), cache.ENV_CACHE_DIR: str(configured), "TMPDIR": str(temporary)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*prefix, sys.executable, *args], capture_output=True, text=True, env=env, timeout=300)

    built = run("-c", IN_THE_FALLBACK)
    assert built.returncode == 0, built.stderr
    summary, folder = built.stdout.strip().splitlines()
    assert summary == "841 True True 1", built.stdout + built.stderr
    fallback = Path(folder).parent  # the build was in the process's own folder while it ran ...
    assert fallback.parent == temporary and fallback.name.startswith(cache.FALLBACK_PREFIX), folder
    assert list(temporary.iterdir()) == []  # ... and is gone with it
    listing = run("-m", "tltyped", "cache", "ls")
    assert (listing.returncode, listing.stdout) == (1, ""), listing.stdout + listing.stderr
    assert listing.stderr.startswith("python -m tltyped cache ls: ") and reason in listing.stderr, listing.stderr
    assert "There is no kernel cache to list" in listing.stderr


def tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """`folder` as a tmpfs mounted with these options, where this host lets us mount one (root, in most CI)."""
    yield from mount(folder, "tmpfs", options)


def mount(folder: Path, kind: str, options: str) -> Iterator[Path]:
    """`folder` as a file system of this kind mounted with these options, where this host lets us mount one."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", kind, "-o", options, kind, str(folder)],
                             capture_output=True, text=True, check=False) if shutil.which("mount") else None
    if mounted is None or mounted.returncode != 0:
        pytest.skip(f"cannot mount a {kind} here ({mounted.stderr.strip() if mounted else 'no mount'})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


@pytest.fixture
def noexec(tmp_path: Path) -> Iterator[Path]:
    """A folder on a file system mounted noexec (as Docker mounts /dev/shm)."""
    yield from tmpfs(tmp_path / "noexec", "noexec,size=64m")


def test_a_cache_on_a_noexec_file_system_builds_in_a_private_folder(tmp_path: Path, noexec: Path) -> None:
    """Kernels built on a noexec mount could not be loaded (`failed to map segment from shared object`): the
    process warns once, naming the mount, and builds in its private folder; where TMPDIR is noexec too, the first
    build says which settings to change."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    script = "from tests.unit.test_disk_cache import build_probe; print(build_probe(842)[0])"
    run = python("-c", script, env={cache.ENV_CACHE_DIR: str(noexec / "cache"), "TMPDIR": str(temporary)})
    assert run.returncode == 0 and run.stdout.strip() == "842", run.stderr
    assert run.stderr.count("CacheWarning") == 1 and "is on a file system mounted noexec" in run.stderr, run.stderr
    (noexec / "tmp").mkdir()
    run = python("-c", script, env={cache.ENV_CACHE_DIR: str(noexec / "cache"), "TMPDIR": str(noexec / "tmp")})
    assert run.returncode != 0 and "UnusableCache" in run.stderr, run.stderr
    assert f"set {cache.ENV_CACHE_DIR} (or TMPDIR) to a private, writable directory on another file system" in run.stderr
    assert list((noexec / "tmp").iterdir()) == []  # no private folder made where none could serve


def test_clear_empties_a_cache_on_a_noexec_file_system(noexec: Path) -> None:
    """A cache left on a file system since mounted noexec (or one that kernels were built in elsewhere): no process
    can use it, so `ls` says there is no cache, but `clear` removes what is there instead of saying the same."""
    modules = noexec / "cache" / "modules"
    (modules / ("a" * 32)).mkdir(parents=True, mode=0o700)
    os.chmod(noexec / "cache", 0o700)
    (modules / ("a" * 32) / "kernel.cubin").write_bytes(b"\0" * 64)
    (modules / f"{'b' * 32}.json").write_text("{}")
    env = {cache.ENV_CACHE_DIR: str(noexec / "cache")}
    listing = python("-m", "tltyped", "cache", "ls", env=env)
    assert listing.returncode == 1 and "mounted noexec" in listing.stderr, listing.stdout + listing.stderr
    cleared = python("-m", "tltyped", "cache", "clear", env=env)
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.stdout.strip() == f"removed 2 item(s) from {modules}"
    assert list(modules.iterdir()) == []


@pytest.fixture
def image_layer(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(lower, merged): a folder, and an overlayfs mount of it with a writable layer above, as a container sees a
    folder of its image (Docker's storage driver)."""
    lower, upper, work = tmp_path / "lower", tmp_path / "upper", tmp_path / "work"
    for folder in (lower, upper, work):
        folder.mkdir()
    for merged in mount(tmp_path / "merged", "overlay", f"lowerdir={lower},upperdir={upper},workdir={work}"):
        yield lower, merged


def test_a_cache_in_a_container_image_s_layer_is_repaired_and_cleared(
    image_layer: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cache made while the image was built, used in a container: overlayfs cannot rename a folder of the image's
    layer (EXDEV), where an unusable entry is set aside and `clear` removes one. The damaged entry is rebuilt in
    the cache, not the whole process sent to a private folder, and `clear` empties the cache."""
    lower, merged = image_layer
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(lower / "cache"))
    built, _ = build.build("probe", [probe_step(851)])  # by the image's build, before the container started
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(merged / "cache"))
    entry = merged / "cache" / "modules" / built.name
    replace_file(so_of(entry), b"")  # damaged in the container
    with pytest.warns(tl.CacheWarning) as caught:  # built, not loaded: a module loaded from it keeps the mount busy
        assert build.build("probe", [probe_step(851)]) == (entry, True)
    assert [str(w.message).split(" (")[0] for w in caught] == [f"tltyped: cache entry {entry} is unusable"], \
        [str(w.message) for w in caught]
    assert "removed" in cache_command("clear")
    assert list((merged / "cache" / "modules").iterdir()) == []


# -- cache clear ----------------------------------------------------------------------------------------


BUILDING = """
from tests.unit.test_disk_cache import build_probe
build_probe(801, {cc!r})
"""


def test_clear_removes_everything_but_a_build_running_now(cache_dir: Path, tmp_path: Path) -> None:
    """A build in another process keeps its staging folder and lock through `clear`; once it was killed
    (SIGKILL: nothing of it cleans up), the next `clear` leaves the cache folder empty."""
    build_probe(802)  # a build, its lock and a compiler's version record
    with pytest.raises(tl.CompileError):  # a failed compile: its source kept in failed/
        build.build("broken", [build.Step("broken.c", "not C", build.cc_command([]), "broken.so")])
    slow = tmp_path / "slow"
    slow.mkdir()
    cc = fake_compiler(slow, "1.0")
    builder = subprocess.Popen([sys.executable, "-c", BUILDING.format(cc=cc)], start_new_session=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT), "FAKE_CC_DELAY": "300"})
    try:
        deadline = time.monotonic() + 120
        while compiles(slow) == 0:  # the compiler has started: its staging folder is there, its lock held
            assert builder.poll() is None and time.monotonic() < deadline, "the build did not start"
            time.sleep(0.1)
        modules = cache_dir / "modules"
        (staging,) = [p for p in modules.iterdir() if p.name.startswith(".") and p.is_dir()]
        output = cache_command("clear")
        key = staging.name.split(".")[1]
        assert sorted(p.name for p in modules.iterdir()) == sorted([staging.name, f"{key}.lock"])
        assert "kept 2 item(s) of builds running now" in output
    finally:
        os.killpg(builder.pid, signal.SIGKILL)  # the builder, its fake compiler and the compiler's sleep
        builder.wait()
    assert staging.is_dir()  # what a killed build leaves
    cache_command("clear")
    assert list(modules.iterdir()) == []


def test_clear_function_removes_its_records_and_the_builds_only_they_name(cache_dir: Path) -> None:
    """`clear gemm`: gemm's launch and tuning records go, and gemm's own build with them (so its next call
    compiles); a build softmax's record still names stays, as do other functions' records."""
    own, _ = build.build("probe", [probe_step(811)])
    shared, _ = build.build("probe", [probe_step(812)])
    spec = {"consts": {"block": "int:128"}, "dims": {}, "dtypes": {}, "strides": {}}
    launches = {"a" * 32: ("mod.gemm", own), "b" * 32: ("mod.gemm", shared), "c" * 32: ("mod.softmax", shared)}
    for key, (function, folder) in launches.items():
        records.write(key, records.LaunchRecord(function, "sm_90a", spec, folder.name))
    records.write("d" * 32, records.TuningRecord("mod.gemm", "sm_90a", spec, "NVIDIA H100", [{"config": {}, "ms": 1.0, "error": None}], 0))
    output = cache_command("clear", "gemm")
    left = {path.stem: record for path, record in records.every()}
    assert {key for key, record in left.items() if not isinstance(record, records.CompilerRecord)} == {"c" * 32}
    assert builds_in(cache_dir / "modules") == [shared.name]
    assert build_probe(811)[2]  # compiled again, not found on disk
    assert "removed 3 record(s) and 1 build(s)" in output


def test_clear_of_an_empty_function_name_is_refused_removing_nothing(cache_dir: Path) -> None:
    """`clear ""` (an unset shell variable) would match every function: refused, the records kept."""
    folder, _ = build.build("probe", [probe_step(813)])
    spec = {"consts": {}, "dims": {}, "dtypes": {}, "strides": {}}
    records.write("a" * 32, records.LaunchRecord("mod.gemm", "sm_90a", spec, folder.name))
    run = python("-m", "tltyped", "cache", "clear", "")
    assert run.returncode == 2 and "FUNCTION '' would match every function" in run.stderr, run.stderr
    assert "a" * 32 in {path.stem for path, _ in records.every()}


def test_ls_shows_each_kernel_s_consts_target_size_age_and_tuning_results(cache_dir: Path) -> None:
    """`cache ls`: a line per recorded kernel (function, target, consts and dims, its build's size, the record's
    age) and per tuning result (the GPU's name, the winner, each candidate's time or failure)."""
    folder, _ = build.build("probe", [probe_step(831)])
    spec = {"consts": {"block": "int:128", "tile": Reader().text((64, 1))}, "dims": {"N": 4096}, "dtypes": {}, "strides": {}}
    records.write("a" * 32, records.LaunchRecord("mod.softmax", "sm_90a", spec, folder.name))
    candidates = [{"config": {"block": "64"}, "ms": 0.01234, "error": None},
                  {"config": {"block": "128"}, "ms": None, "error": "RuntimeError: ptxas: too many resources requested"}]
    records.write("b" * 32, records.TuningRecord("mod.softmax", "sm_90a", spec, "NVIDIA H100 80GB HBM3", candidates, 0))
    for key, seconds in (("a", 2 * 86400), ("b", 3 * 3600)):
        then = time.time() - seconds
        os.utime(cache_dir / "modules" / f"{key * 32}.json", (then, then))
    lines = cache_command("ls").splitlines()
    assert len(lines) == 2, lines
    assert re.fullmatch(r"mod\.softmax  sm_90a  block=128, tile=\(64, 1\), N=4096  [1-9]\d* KiB  2 d ago", lines[1]), lines
    assert lines[0] == ("mod.softmax  sm_90a  block=128, tile=(64, 1), N=4096    3 h ago  "
                        "tuned on NVIDIA H100 80GB HBM3: best {'block': '64'} of [0.0123 ms, failed]"), lines
    only = [{"config": {"block": "64"}, "ms": None, "error": None}]  # a space of one candidate: nothing to time
    records.write("b" * 32, records.TuningRecord("mod.softmax", "sm_90a", spec, "NVIDIA H100 80GB HBM3", only, 0))
    assert cache_command("ls").splitlines()[0].endswith("best {'block': '64'} of [not timed]")


def test_ls_in_a_process_with_a_private_folder_shows_what_the_cache_s_files_hold(
    cache_dir: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """`cache ls` run inside a process that keeps a newer record of the same key in its private folder (written
    while the cache refused it): the line is what the cache's file holds, not the private copy under the cache's
    path, while the process itself still reads its private copy first."""
    from tltyped.__main__ import main

    folder, _ = build.build("probe", [probe_step(833)])
    spec = {"consts": {}, "dims": {}, "dtypes": {}, "strides": {}}
    cached, private = (records.LaunchRecord(f"mod.{name}", "sm_90a", spec, folder.name) for name in ("cached", "private"))
    records.write("a" * 32, cached)
    modules, aside = cache_dir / "modules", cache_dir / "aside"
    modules.rename(aside)
    modules.write_text("not a folder")  # the cache refuses the next record
    with pytest.warns(tl.CacheWarning, match="cannot take record"):
        records.write("a" * 32, private)
    modules.unlink()
    aside.rename(modules)
    assert records.read(records.LaunchRecord, "a" * 32) == private
    assert dict(records.every())[modules / f"{'a' * 32}.json"] == cached
    main(["cache", "ls"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mod.cached  sm_90a  "), lines


@pytest.mark.parametrize("value", [
    64, -1.5, True, None, "it's a:b", b"q:\\'", (64, 128), (1,), (), [1, (2,), []], {"x": (1, [2.5])}, ((1,), "c,d"),
    "half", torch.float16, ("float", torch.bfloat16), 1 + 2j, (1 + 2j,), [-0.5j],
    set(), {3}, frozenset(), frozenset({1, 2}), ({1: 2, 3: 4},), ({"a": [1, 2]},), ({1, 2},), [{1: 2, 3: 4}],
])
def test_ls_shows_a_const_as_python_writes_it(value: object) -> None:
    """`cache ls` shows consts from their key text: the kind prefixes go, a list keeps its brackets, a tuple of
    one its comma, quoted text its colons and commas."""
    assert shown(Reader().text(value)) == repr(value)


class Color(enum.Enum):
    RED = 1
    PAIR = ("a,b", (1, 2))


def scaled(x: float) -> float:
    return 2 * x


@dataclasses.dataclass(frozen=True)
class Sizes:
    block: int
    tile: tuple[int, ...] = (64,)


@pytest.mark.parametrize("value, written", [
    (scaled, f"{__name__}.scaled"),
    ((scaled, [scaled]), f"({__name__}.scaled, [{__name__}.scaled])"),  # the second is the first read again
    ((tl.jit, Color, int, enum), f"(tltyped.jit_function.jit, {__name__}.Color, builtins.int, enum)"),
    (Sizes(128), f"{__name__}.Sizes(block=128, tile=(64,))"),
    ((torch_ops.scale, torch_ops.scale), "(tests.kernels.torch_ops.scale, tests.kernels.torch_ops.scale)"),
    ((Tile(64), [Tile(32)]), "(tests.kernels.settings.Tile(64), [tests.kernels.settings.Tile(32)])"),
])
def test_ls_shows_a_function_class_or_module_by_its_name_each_time_it_is_read(value: object, written: str) -> None:
    """A const holding code shows its qualified name, not its key's text of the code (digests, closures), nor
    its number where the key names it by the place it was first read; a dataclass instance or a named tuple
    shows its class's name and its values."""
    assert shown(Reader().text(value)) == written


@pytest.mark.parametrize("value, written", [
    (Color.RED, f"{__name__}.Color.RED"),
    ([Color.PAIR, Color.RED, Color.PAIR], f"[{__name__}.Color.PAIR, {__name__}.Color.RED, {__name__}.Color.PAIR]"),
    (float("nan"), "nan"),
    ({"k": (float("nan"), Color.RED)}, f"{{'k': (nan, {__name__}.Color.RED)}}"),
])
def test_ls_shows_an_enum_member_by_name_and_any_nan_as_nan(value: object, written: str) -> None:
    """An enum member reads as its qualified name, not its class's key text and value; a NaN as `nan`, not its
    bits (every NaN is its own key: a body may tell their payloads apart)."""
    assert shown(Reader().text(value)) == written


def test_records_of_another_format_or_kind_are_stale(cache_dir: Path) -> None:
    """Records an older tltyped wrote (of an older format, or keyed by other code), of a kind this one does not
    know, or with a field edited into another type: never listed as kernels, counted as stale by `info`, removed
    by `clear`."""
    folder, _ = build.build("probe", [probe_step(821)])
    spec = {"consts": {"block": "int:256"}, "dims": {}, "dtypes": {}, "strides": {}}
    records.write("a" * 32, records.LaunchRecord("mod.scale", "sm_90a", spec, folder.name))
    old = {"function": "mod.old", "target": "sm_80", "spec": spec, "build": folder.name}
    cache.write_record("b" * 32, {"kind": "launch", "format": records.FORMAT - 1, **old})
    cache.write_record("c" * 32, old)  # from before records had a kind
    cache.write_record("d" * 32, {"kind": "benchmark", "format": records.FORMAT, **old})
    package = records.package_digest()
    cache.write_record("e" * 32, {"kind": "launch", "format": records.FORMAT, "package": "0" * 64, **old})  # upgraded
    cache.write_record("f" * 32, {"kind": "launch", "format": records.FORMAT, "package": package, **old})  # control
    edited = {"kind": "launch", "format": records.FORMAT, "package": package, **old, "spec": []}  # a field retyped
    cache.write_record("0" * 32, edited)
    listing = cache_command("ls")
    assert "mod.scale  sm_90a  block=256" in listing and listing.count("mod.old") == 1, listing
    summary = cache_command("info")
    assert "builds: 1, records: 2," in summary and "stale records: 5," in summary
    cache_command("clear")
    assert "builds: 0, records: 0, generated sources: 0, compiler versions: 0, stale records: 0," in cache_command("info")


SPEC = {"consts": {"block": "int:256"}, "dims": {"N": 64}, "dtypes": {"X": "float16"}, "strides": {"X": [64, 1], "Y": None}}
CANDIDATE = {"config": {"block": "64"}, "ms": 0.5, "error": None}
NESTED_EDITS = [  # (kind, field, value): each breaks the declared type below the top level
    ("launch", "spec", {**SPEC, "consts": ["int:256"]}),
    ("launch", "spec", {**SPEC, "consts": {"block": 256}}),
    ("launch", "spec", {**SPEC, "dims": {"N": "64"}}),
    ("launch", "spec", {**SPEC, "dims": {"N": True}}),
    ("launch", "spec", {**SPEC, "strides": {"X": [64, "1"]}}),
    ("launch", "spec", {k: v for k, v in SPEC.items() if k != "dtypes"}),
    ("launch", "spec", {**SPEC, "extra": {}}),
    ("tuning", "candidates", [{**CANDIDATE, "ms": "fast"}]),
    ("tuning", "candidates", [{**CANDIDATE, "config": [["block", "64"]]}]),
    ("tuning", "candidates", [{k: v for k, v in CANDIDATE.items() if k != "error"}]),
    ("tuning", "candidates", [CANDIDATE, None]),
]


def test_a_record_edited_below_its_top_level_is_stale(cache_dir: Path) -> None:
    """A record whose fields hold values of other types inside (edited by hand, written by a bug) reads as absent,
    as a field retyped at the top does: the process that would load it rebuilds, and `cache ls` and `info` run
    (counting it stale) instead of failing on it."""
    folder, _ = build.build("probe", [probe_step(823)])
    whole = {"launch": records.LaunchRecord("mod.scale", "sm_90a", SPEC, folder.name),  # type: ignore[arg-type]
             "tuning": records.TuningRecord("mod.scale", "sm_90a", SPEC, "H100", [CANDIDATE], 0)}  # type: ignore[list-item]
    saved = {"launch": "a" * 32, "tuning": "b" * 32}
    for kind, record in whole.items():  # the control: each record whole is read back
        records.write(saved[kind], record)
        assert records.read(type(record), saved[kind]) == record
    keys = []
    for i, (kind, field, value) in enumerate(NESTED_EDITS):
        key = f"{i:032x}"
        cache.write_record(key, {**json.loads((cache_dir / "modules" / f"{saved[kind]}.json").read_text()), field: value})
        assert records.read(type(whole[kind]), key) is None, (kind, field, value)
        keys.append(key)
    assert len(cache_command("ls").splitlines()) == 2
    assert "records: 2," in cache_command("info") and f"stale records: {len(keys)}," in cache_command("info")


def test_info_counts_an_unreadable_record_as_stale_and_warns_of_it_once(cache_dir: Path) -> None:
    """A record cut short (a full disk, a killed copy): `info` warns of it once and counts it stale."""
    folder, _ = build.build("probe", [probe_step(822)])
    spec = {"consts": {}, "dims": {}, "dtypes": {}, "strides": {}}
    for key in ("a" * 32, "b" * 32):
        records.write(key, records.LaunchRecord("mod.scale", "sm_90a", spec, folder.name))
    cut = cache_dir / "modules" / f"{'b' * 32}.json"
    cut.write_bytes(cut.read_bytes()[:20])
    run = python("-m", "tltyped", "cache", "info")
    assert run.returncode == 0, run.stderr
    assert "records: 1," in run.stdout and "stale records: 1," in run.stdout, run.stdout
    assert run.stderr.count(f"cache record {cut} is unusable") == 1, run.stderr


@pytest.mark.parametrize("link", ["a loop", "to nothing"])
def test_info_counts_a_record_that_is_a_symbolic_link_as_stale(cache_dir: Path, link: str) -> None:
    """A record's name taken by a symbolic link (to itself, or to a file since removed): `info` counts it stale and
    sizes the link, not what it points to, instead of failing on it."""
    folder, _ = build.build("probe", [probe_step(824)])
    spec = {"consts": {}, "dims": {}, "dtypes": {}, "strides": {}}
    records.write("a" * 32, records.LaunchRecord("mod.scale", "sm_90a", spec, folder.name))
    linked = cache_dir / "modules" / f"{'b' * 32}.json"
    linked.symlink_to(linked if link == "a loop" else cache_dir / "removed.json")
    run = python("-m", "tltyped", "cache", "info")
    assert run.returncode == 0, run.stderr
    assert "records: 1," in run.stdout and "stale records: 1," in run.stdout, run.stdout


def test_ls_shows_a_record_written_by_a_clock_ahead_as_in_the_future(cache_dir: Path) -> None:
    """A record whose time is ahead of this machine's clock (written on a host whose clock runs ahead, over NFS):
    `ls` says so, not `-172800 s ago`."""
    folder, _ = build.build("probe", [probe_step(825)])
    spec = {"consts": {}, "dims": {"N": 64}, "dtypes": {}, "strides": {}}
    records.write("a" * 32, records.LaunchRecord("mod.scale", "sm_90a", spec, folder.name))
    ahead = time.time() + 2 * 86400 + 60
    os.utime(cache_dir / "modules" / f"{'a' * 32}.json", (ahead, ahead))
    (line,) = cache_command("ls").splitlines()
    assert re.fullmatch(r"mod\.scale  sm_90a  N=64  [1-9]\d* KiB  2 d in the future", line), line


@pytest.mark.parametrize("command", [["ls"], ["info"], ["clear"], ["clear", "scale"]], ids=" ".join)
def test_the_cache_command_runs_over_an_unreadable_entry_and_a_lock_that_is_a_folder(
    cache_dir: Path, command: list[str],
) -> None:
    """A cache of this user's holding an entry this user cannot read (another user's, restored from a backup or an
    image as another uid) and a folder where a lock file belongs: each command runs, `clear` removing what this
    user can remove, instead of failing on them."""
    unreadable, _ = build.build("probe", [probe_step(826)])
    named, _ = build.build("probe", [probe_step(827)])
    spec = {"consts": {}, "dims": {"N": 64}, "dtypes": {}, "strides": {}}
    records.write("a" * 32, records.LaunchRecord("mod.scale", "sm_90a", spec, named.name))
    lock = named.with_name(f"{named.name}.lock")
    lock.unlink()
    lock.mkdir()
    prefix: list[str] = []
    if os.getuid() == 0:  # root: the entry is another user's, and the capabilities that let root read it go
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder unreadable to this process")
        for path in (unreadable, *unreadable.iterdir()):
            os.chown(path, 65534, 65534)
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
    else:
        os.chmod(unreadable, 0)
    run = subprocess.run([*prefix, sys.executable, "-m", "tltyped", "cache", *command], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    if command == ["ls"]:
        assert run.stdout.startswith("mod.scale  sm_90a  N=64  "), run.stdout
    elif command == ["info"]:
        assert "builds: 1, records: 1," in run.stdout, run.stdout  # the build named; the other cannot be read
    elif command == ["clear"]:
        assert not lock.exists() and not named.exists() and not unreadable.exists(), sorted(os.listdir(cache_dir / "modules"))
    else:
        assert "removed 1 record(s) and 1 build(s)" in run.stdout, run.stdout


def test_a_record_being_written_or_cut_off_by_a_kill_is_no_record(cache_dir: Path) -> None:
    """A record is written to `.<key>.<random>.json` and renamed into place: that file, half-written by a process
    running now (or killed mid-write), is neither listed nor warned of nor counted stale by `ls` and `info`; `clear`
    removes it."""
    folder, _ = build.build("probe", [probe_step(828)])
    spec = {"consts": {}, "dims": {"N": 64}, "dtypes": {}, "strides": {}}
    records.write("a" * 32, records.LaunchRecord("mod.scale", "sm_90a", spec, folder.name))
    whole = (cache_dir / "modules" / f"{'a' * 32}.json").read_text()
    (cache_dir / "modules" / f".{'b' * 32}.k2j4x9q1.json").write_text(whole[: len(whole) // 2])
    for command in ("ls", "info"):
        run = python("-m", "tltyped", "cache", command)
        assert run.returncode == 0 and "CacheWarning" not in run.stderr, run.stderr
    assert "records: 1," in run.stdout and "stale records: 0," in run.stdout, run.stdout
    assert "removed" in cache_command("clear") and list((cache_dir / "modules").iterdir()) == []


# -- what a failed build says -----------------------------------------------------------------------------


FILE_SIZE_LIMIT = """
import resource, signal
import tltyped as tl
from tests.unit.test_disk_cache import build_probe
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit, write() fails with EFBIG instead of the process dying
resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
try:
    build_probe(901)
except tl.CompileError as exc:
    print(exc)
"""


BUILD_AND_SAY = """
import tltyped as tl
from tests.unit.test_disk_cache import build_probe
try:
    build_probe(902)
except tl.CompileError as exc:
    print(exc)
"""


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a file system with room for a build's sources, not for the compiler's products."""
    yield from tmpfs(tmp_path / "small", "size=12k")


def test_a_compiler_that_fills_the_disk_is_a_full_cache_not_a_failed_compile(small_disk: Path) -> None:
    """The linker's `No space left on device` is the cache's trouble, said as a full disk is, not a compile
    failure with its source kept."""
    run = python("-c", BUILD_AND_SAY, env={cache.ENV_CACHE_DIR: str(small_disk / "cache")})
    assert run.returncode == 0 and "cannot write the build into the kernel cache" in run.stdout, run.stdout + run.stderr
    assert "No space left on device" in run.stdout and "source kept" not in run.stdout, run.stdout
    assert f"free space or set {cache.ENV_CACHE_DIR} to another folder" in run.stdout


def test_a_build_that_cannot_be_written_says_where_and_what_to_do(cache_dir: Path) -> None:
    run = python("-c", FILE_SIZE_LIMIT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == (
        f"probe: cannot write the build into the kernel cache {cache_dir / 'modules'} (File too large): "
        "free space or set TLTYPED_CACHE_DIR to another folder"
    )


MISSING_NVCC = """
import tltyped as tl
from tltyped.backend import build
step = build.Step("kernel.cu", "__global__ void k() {}", build.nvcc_device_command("sm_90a", []), "kernel.cubin")
try:
    build.build("gemm", [step])
except tl.CompileError as exc:
    print(exc)
"""


def test_a_missing_nvcc_is_named_with_what_to_do(cache_dir: Path, tmp_path: Path) -> None:
    """CUDA_HOME names a folder without nvcc (a runtime-only CUDA image)."""
    (tmp_path / "cuda").mkdir()
    run = python("-c", MISSING_NVCC, env={"CUDA_HOME": str(tmp_path / "cuda")})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == (
        f"gemm: the CUDA compiler nvcc was not found at {tmp_path / 'cuda' / 'bin' / 'nvcc'}: "
        "install the CUDA toolkit, put nvcc on PATH or set CUDA_HOME"
    )


KERNEL_CALL = """
import torch
import tltyped as tl
import tltyped.language as T

@tl.jit
def fill(X: tl.Tensor[tl.float32, 8]) -> None:
    with T.Kernel(1, threads=8) as bx:
        for i in T.Parallel(8):
            X[i] = 1.0

fill.compile(torch.empty(8, dtype=torch.float32, device="meta"))
"""


def test_a_misspelt_target_variable_is_named(tmp_path: Path) -> None:
    (tmp_path / "user_kernels.py").write_text(KERNEL_CALL)
    run = python("user_kernels.py", env={"TLTYPED_TARGET": "hopper"}, cwd=tmp_path)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[-1] == (
        "tltyped.errors.TargetError: TLTYPED_TARGET='hopper' is not a target: "
        "name a CUDA architecture such as 'sm_90a' or 'sm_80'"
    )


# -- processes started at once (torchrun ranks), with a real kernel ---------------------------------------


RANK = """
import json, os, subprocess, sys, time, warnings
spawned = []  # every program this process runs (the compilers), with its arguments
popen = subprocess.Popen.__init__
def record(self, args, *rest, **options):
    spawned.append([str(a) for a in args] if isinstance(args, (list, tuple)) else [str(args)])
    popen(self, args, *rest, **options)
subprocess.Popen.__init__ = record
import torch
from tltyped import CacheWarning
from tests.kernels.outputs import two_outputs
ready, go = sys.argv[1:]
open(ready, "x").close()
while not os.path.exists(go):  # every rank has imported what it needs: all ask for the kernel at once
    time.sleep(0.001)
started = time.time()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    kernel = two_outputs.compile(torch.empty(256, 96, dtype=torch.float32, device="meta"))
print(json.dumps({
    "started": started, "finished": time.time(), "compiled": kernel.compiled, "folder": str(kernel.folder),
    "cuda": "__global__" in kernel.cuda_source, "info": two_outputs.cache_info()._asdict(), "spawned": spawned,
    "warnings": [str(w.message) for w in caught if issubclass(w.category, CacheWarning)],
}))
"""


class Ranks:
    """Processes that each compile tests/kernels/outputs.py's two_outputs for one signature, released at once, with
    one shared kernel cache (TLTYPED_CACHE_DIR, TILELANG_CACHE_DIR under it) and TMPDIR elsewhere: tmpfs where
    there is one, another filesystem than the cache's."""

    def __init__(self, where: Path, scratch: Path) -> None:
        self.where = where
        self.cache = where / "cache"
        self.scratch = scratch

    def run(self, count: int) -> list[dict[str, Any]]:
        """Start `count` processes, release them together once all have imported tltyped and the kernel's module,
        and return what each reports (with its `TLTYPED_LOG=info` lines saying where the kernel came from, "log")."""
        gate = Path(tempfile.mkdtemp(prefix="gate-", dir=self.where))
        env = {
            **os.environ, "PYTHONPATH": str(ROOT), cache.ENV_CACHE_DIR: str(self.cache),
            "TILELANG_CACHE_DIR": str(self.cache / "tilelang"), "TLTYPED_TARGET": "sm_90a", "TLTYPED_LOG": "info",
            "TMPDIR": str(self.scratch),
        }
        ranks = [subprocess.Popen([sys.executable, "-c", RANK, str(gate / f"ready-{rank}"), str(gate / "go")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=self.where)
                 for rank in range(count)]
        try:
            deadline = time.monotonic() + 120
            while len(list(gate.glob("ready-*"))) < count:
                failed = [rank for rank in ranks if rank.poll() is not None]
                assert not failed, failed[0].communicate()[1][-3000:]
                assert time.monotonic() < deadline, "the processes did not get ready"
                time.sleep(0.01)
            (gate / "go").touch()
            finished = [rank.communicate(timeout=300) for rank in ranks]
        finally:
            for rank in ranks:
                if rank.poll() is None:
                    rank.kill()
                    rank.wait()
        assert [rank.returncode for rank in ranks] == [0] * count, [err[-3000:] for _, err in finished]
        reports = []
        for out, err in finished:
            report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
            report["log"] = [line.removeprefix("tltyped INFO two_outputs: ") for line in err.splitlines()
                             if line.startswith(("tltyped INFO two_outputs: built ", "tltyped INFO two_outputs: loaded "))]
            report["info"]["says_rebuilding"] = any("rebuilding" in line for line in err.splitlines()
                                                    if line.startswith("tltyped INFO"))
            reports.append(report)
        return reports

    def builds(self) -> list[Path]:
        """The cache's builds of two_outputs (the manifest names the kernel a build is of)."""
        modules = self.cache / "modules"
        return [entry for entry in modules.iterdir()
                if (entry / cache.MANIFEST).is_file() and cache.manifest(entry)["name"] == "two_outputs"]

    def launch_records(self) -> list[Path]:
        """The cache's launch records of two_outputs (each names the build of one specialisation)."""
        return [path for path in (self.cache / "modules").glob("*.json")
                if json.loads(path.read_text()).get("function") == "tests.kernels.outputs.two_outputs"]


def compiler_products(reports: list[dict[str, Any]]) -> list[str]:
    """What the compilers the processes ran wrote (`-o` NAME), one item per compiler run (`--version` writes none)."""
    return [Path(args[args.index("-o") + 1]).name for report in reports for args in report["spawned"] if "-o" in args]


def nvcc_device_runs(reports: list[dict[str, Any]]) -> int:
    return sum(1 for report in reports for args in report["spawned"]
               if Path(args[0]).name.startswith("nvcc") and "--cubin" in args)


def assert_nothing_left_over(ranks: Ranks) -> None:
    """The cache holds entries, records and the lock files of their keys, nothing else: no staging folder, no
    entry set aside, no half-written record, no failed source; and nothing was left in TMPDIR."""
    modules = ranks.cache / "modules"
    leftovers: list[str] = []
    for path in modules.iterdir():
        name = path.name
        if name.startswith("."):  # a staging folder, an entry set aside, a record being written
            leftovers.append(name)
        elif name.endswith(".lock"):
            key = name.removesuffix(".lock")
            if not ((modules / key / cache.MANIFEST).is_file() or (modules / f"{key}.json").is_file()):
                leftovers.append(name)  # the lock of nothing there
        elif not ((path / cache.MANIFEST).is_file() or (name.endswith(".json") and path.is_file())):
            leftovers.append(name)  # neither an entry nor a record (`failed/`: the source of a failed compile)
    assert leftovers == [], sorted(os.listdir(modules))
    assert list(ranks.scratch.iterdir()) == []


def scratch_folder(where: Path) -> Path:
    """A fresh folder for TMPDIR: on tmpfs (/dev/shm) where there is one, so not on the cache's filesystem."""
    elsewhere = Path("/dev/shm") if Path("/dev/shm").is_dir() else where
    return Path(tempfile.mkdtemp(prefix="tltyped-ranks-tmpdir-", dir=elsewhere))


@pytest.fixture
def ranks(tmp_path: Path) -> Iterator[Ranks]:
    scratch = scratch_folder(tmp_path)
    try:
        yield Ranks(tmp_path, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache in which one process built two_outputs (and the C helpers), for tests to copy and damage."""
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    where = tmp_path_factory.mktemp("seeded")
    scratch = scratch_folder(where)
    try:
        (report,) = Ranks(where, scratch).run(1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert report["compiled"], report
    yield where / "cache"


RANK_COUNT = 4


@needs_nvcc
def test_ranks_started_at_once_build_a_kernel_once_and_all_use_it(ranks: Ranks) -> None:
    """An empty shared cache and TMPDIR on another filesystem: 4 processes ask for one kernel at the same moment;
    one elaborates, lowers and runs nvcc, the others wait for it and load its build; every compiler (the kernel's
    and the C helpers') runs once in all."""
    reports = ranks.run(RANK_COUNT)
    assert max(r["started"] for r in reports) < min(r["finished"] for r in reports)  # they did overlap
    outcomes = sorted((r["info"]["compiles"], r["info"]["disk_hits"], r["compiled"]) for r in reports)
    assert outcomes == [(0, 1, False)] * (RANK_COUNT - 1) + [(1, 0, True)], outcomes
    assert all(r["cuda"] for r in reports)
    logs = sorted(r["log"] for r in reports)
    assert [[line.split(" ")[0] for line in log] for log in logs] == [["built"]] + [["loaded"]] * (RANK_COUNT - 1), logs
    assert logs[0] == ["built block=128; M=256 for sm_90a (nvcc)"], logs
    assert nvcc_device_runs(reports) == 1
    products = compiler_products(reports)
    assert len(products) == len(set(products)), sorted(products)  # no build ran twice
    assert [r["warnings"] for r in reports] == [[]] * RANK_COUNT
    (build,) = ranks.builds()
    assert {r["folder"] for r in reports} == {str(build)}
    assert [json.loads(record.read_text())["build"] for record in ranks.launch_records()] == [build.name]
    assert_nothing_left_over(ranks)
    if os.stat(ranks.scratch).st_dev == os.stat(ranks.cache).st_dev:
        pytest.skip("no second filesystem here: checked the rest with TMPDIR on the cache's own")


@needs_nvcc
@pytest.mark.parametrize("damage", ["truncated build", "truncated record"])
def test_ranks_started_at_once_over_a_damaged_entry_rebuild_it_once(seeded: Path, ranks: Ranks, damage: str) -> None:
    """The shared cache holds the kernel, damaged: its launcher module truncated (loading it would kill the process
    with SIGBUS), or its launch record cut short. 4 processes asking for it at once all get the kernel; one of them
    rebuilds it (nvcc runs once for the build, not at all for the record, whose build is intact), the others load
    what it rebuilt."""
    shutil.copytree(seeded, ranks.cache)
    (build_folder,) = ranks.builds()
    (record,) = ranks.launch_records()
    if damage == "truncated build":
        (damaged,) = build_folder.glob("tltyped_kernel*.so")
        replace_file(damaged, damaged.read_bytes()[: damaged.stat().st_size // 3])
    else:
        damaged = record
        record.write_text(record.read_text()[: record.stat().st_size // 2])
    reports = ranks.run(RANK_COUNT)
    assert max(r["started"] for r in reports) < min(r["finished"] for r in reports)  # they did overlap
    rebuilds_build = damage == "truncated build"
    outcomes = sorted((r["info"]["compiles"], r["info"]["disk_hits"], r["compiled"]) for r in reports)
    assert outcomes == [(0, 1, False)] * (RANK_COUNT - 1) + [(1, 0, rebuilds_build)], outcomes
    assert not any(r["info"]["says_rebuilding"] for r in reports)  # the log says what each rank did, not a guess
    logs = sorted(r["log"] for r in reports)
    assert [[line.split(" ")[0] for line in log] for log in logs] == [["built"]] + [["loaded"]] * (RANK_COUNT - 1), logs
    source = "nvcc" if rebuilds_build else "device code from the disk cache"
    assert logs[0] == [f"built block=128; M=256 for sm_90a ({source})"], logs
    assert nvcc_device_runs(reports) == int(rebuilds_build)
    products = compiler_products(reports)
    assert len(products) == len(set(products)), sorted(products)  # no build ran twice
    warned = [message for r in reports for message in r["warnings"]]
    if rebuilds_build:  # only the process that rebuilds it opens the damaged entry under its lock
        assert warned == [f"tltyped: cache entry {build_folder} is unusable ({damaged.name} does not match its "
                          "recorded sha256 (truncated or replaced)); rebuilding it"], warned
    else:  # each process that read the record before it was rewritten
        assert warned and all(m.startswith(f"tltyped: cache record {record} is unusable (") for m in warned), warned
    assert ranks.builds() == [build_folder] and {r["folder"] for r in reports} == {str(build_folder)}
    files = cache.manifest(build_folder)["files"]
    assert {name: hashlib.sha256((build_folder / name).read_bytes()).hexdigest() for name in files} == files
    assert [json.loads(found.read_text())["build"] for found in ranks.launch_records()] == [build_folder.name]
    assert_nothing_left_over(ranks)


@pytest.mark.parametrize("command", [["ls"], ["info"], ["clear"]], ids=" ".join)
def test_the_cache_command_makes_no_cache_where_none_was_made(tmp_path: Path, command: list[str]) -> None:
    """Looking at a cache no process has used says so, and leaves no folder behind."""
    where = tmp_path / "not-yet"
    run = python("-m", "tltyped", "cache", *command, env={cache.ENV_CACHE_DIR: str(where)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"no kernel cache at {where / 'modules'}: nothing has been built with this setting"
    assert not where.exists()


def test_the_cache_command_still_names_a_cache_that_cannot_be_made(tmp_path: Path) -> None:
    """A setting no folder can be made at (a parent under /proc) is reported as unusable, as before a cache
    existed anywhere, not as a cache with nothing built yet."""
    run = python("-m", "tltyped", "cache", "info", env={cache.ENV_CACHE_DIR: "/proc/no-such-folder/cache"})
    assert run.returncode == 1 and "cannot be used" in run.stderr, run.stdout + run.stderr
