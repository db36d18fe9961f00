"""The disk cache (tltyped/backend/cache.py, build.py) under the conditions users' machines create.

Every test builds a tiny C extension (the host C compiler, well under a second;
one needs a real kernel's launch records, and nvcc) into a cache of its own and
then damages it the way a crash, a full disk, an upgrade, another user or
another process would: the next build must warn and rebuild (or build
privately), never load what it should not, never crash.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from tltyped.backend import build, cache, records
from tltyped import CacheWarning

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyObject* answer(PyObject* self, PyObject* unused) { return PyLong_FromLong(ANSWER); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "probe", NULL, -1, methods};
PyMODINIT_FUNC PyInit_probe(void) { return PyModule_Create(&module); }
"""


def probe_step(answer: int, compiler: str | None = None) -> build.Step:
    command = build.cc_command([])
    if compiler is not None:
        command = [compiler, *command[1:]]
    source = SOURCE.replace("ANSWER", str(answer))
    return build.Step("probe.c", source, command, build.extension_name("probe"))


def build_probe(answer: int, compiler: str | None = None) -> tuple[int, Path, bool]:
    folder, compiled = build.build("probe", [probe_step(answer, compiler)])
    module = build.load_extension("probe", so_of(folder))
    return module.answer(), folder, compiled


PROBE_PROCESS = """
import sys, warnings
sys.path.insert(0, {root!r})
sys.path.insert(0, {tests!r})
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from test_disk_cache import build_probe
    answer, folder, compiled = build_probe({answer}, {compiler!r})
print(answer, compiled, folder, [str(w.message) for w in caught])
"""


def probe_process(answer: int, compiler: str | None = None) -> list[str]:
    """The command of a process of its own that builds the probe `answer` and prints `answer compiled folder
    [each warning's message]`."""
    code = PROBE_PROCESS.format(root=str(ROOT), tests=str(Path(__file__).parent), answer=answer, compiler=compiler)
    return [sys.executable, "-c", code]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, private cache for this test."""
    where = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(where))
    return where


def so_of(folder: Path) -> Path:
    return folder / build.extension_name("probe")


def replace_file(path: Path, content: bytes) -> None:
    """Give `path` new content as a new file, the way another process damages an entry.

    Writing in place would change the pages this process has mapped (the
    module was loaded when it was built) and kill it with SIGBUS; a process
    that starts later sees the same damage either way.
    """
    path.unlink()
    path.write_bytes(content)


# -- 1. builds happen inside the cache, whatever TMPDIR is -------------------------------------


def test_a_build_does_not_use_tmpdir(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With TMPDIR on another filesystem (tmpfs), entries are still assembled and renamed within the cache."""
    elsewhere = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp_path
    scratch = Path(os.path.realpath(elsewhere)) / f"tltyped-tmpdir-{os.getpid()}"
    scratch.mkdir()
    try:
        monkeypatch.setenv("TMPDIR", str(scratch))
        monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
        assert build_probe(101)[0] == 101
        assert list(scratch.iterdir()) == []  # nothing of ours was left there
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if os.stat(scratch.parent).st_dev == os.stat(cache_dir).st_dev:
        pytest.skip("no second filesystem here: checked only that TMPDIR stays unused")


# -- 2. private and owned -----------------------------------------------------------------------


def test_cache_directories_are_private(cache_dir: Path) -> None:
    _, folder, _ = build_probe(201)
    for path in (cache_dir, cache_dir / "modules", folder):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700, path
    for path in folder.iterdir():
        assert stat.S_IMODE(os.stat(path).st_mode) & 0o077 == 0, path


def test_an_entry_writable_by_others_is_not_loaded(cache_dir: Path) -> None:
    _, folder, _ = build_probe(202)
    os.chmod(folder, 0o777)
    with pytest.warns(CacheWarning, match="writable by other users"):
        answer, again, compiled = build_probe(202)
    assert (answer, again, compiled) == (202, folder, True)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700


def plant(folder: Path, module: bytes) -> None:
    """Give entry `folder` another module and a manifest that records it: only the owner check can tell."""
    so = so_of(folder)
    replace_file(so, module)
    manifest = json.loads((folder / cache.MANIFEST).read_text())
    manifest["files"][so.name] = hashlib.sha256(module).hexdigest()
    (folder / cache.MANIFEST).write_text(json.dumps(manifest))


def test_an_entry_planted_by_another_user_is_never_loaded(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user's entry, whole and matching its manifest, must not run here: it is set aside and rebuilt.

    The entry's files are this user's; os.getuid answering another uid (for this test) makes them
    another user's, so this runs without root.
    """
    folder, _ = build.build("probe", [probe_step(203)])  # built, not loaded: a load below reads the file again
    other, _ = build.build("probe", [probe_step(-1)])
    plant(folder, so_of(other).read_bytes())
    this_user = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: this_user + 1)
    with pytest.warns(CacheWarning, match="owned by another user"):
        answer, built_in, compiled = build_probe(203)
    assert (answer, built_in, compiled) == (203, folder, True)  # not the planted module's -1


# -- 3. integrity ---------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["truncate", "empty", "remove", "manifest", "garbage-manifest"])
def test_a_damaged_entry_is_rebuilt(cache_dir: Path, damage: str) -> None:
    _, folder, _ = build_probe(301)
    so = so_of(folder)
    if damage == "truncate":  # a crash or a full disk mid-write: loading it would SIGBUS
        replace_file(so, so.read_bytes()[: so.stat().st_size // 3])
    elif damage == "empty":
        replace_file(so, b"")
    elif damage == "remove":
        so.unlink()
    elif damage == "manifest":
        (folder / cache.MANIFEST).unlink()
    else:
        (folder / cache.MANIFEST).write_text("{not json")
    with pytest.warns(CacheWarning, match="unusable"):
        answer, again, compiled = build_probe(301)
    assert (answer, again, compiled) == (301, folder, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and now it is whole: loaded without a word
        assert build_probe(301) == (301, folder, False)



@pytest.mark.parametrize("listing", ["nothing", "a file outside by ..", "a file outside by absolute path", "not the module"])
def test_an_entry_its_manifest_does_not_cover_is_rebuilt(cache_dir: Path, listing: str) -> None:
    """The module loaded from an entry must be one its manifest verified. Here the module is truncated
    (loading it kills the process with SIGBUS) and the manifest lists files that do match, but not it."""
    folder, _ = build.build("probe", [probe_step(311)])
    other, _ = build.build("probe", [probe_step(312)])
    so, elsewhere = so_of(folder), so_of(other)
    replace_file(so, so.read_bytes()[: so.stat().st_size // 3])
    manifest = json.loads((folder / cache.MANIFEST).read_text())
    whole = hashlib.sha256(elsewhere.read_bytes()).hexdigest()
    manifest["files"] = {
        "nothing": {},
        "a file outside by ..": {f"../{other.name}/{elsewhere.name}": whole},
        "a file outside by absolute path": {str(elsewhere): whole},
        "not the module": {"probe.c": manifest["files"]["probe.c"]},
    }[listing]
    (folder / cache.MANIFEST).write_text(json.dumps(manifest))
    run = subprocess.run(probe_process(311), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("311 True ") and f"cache entry {folder} is unusable (its manifest" in run.stdout


def test_a_swapped_module_is_not_run(cache_dir: Path) -> None:
    """Another build's .so in this entry's folder (the manifest's sha256 no longer matches)."""
    _, mine, _ = build_probe(302)
    _, other, _ = build_probe(303)
    replace_file(so_of(mine), so_of(other).read_bytes())
    with pytest.warns(CacheWarning, match="does not match its recorded sha256"):
        assert build_probe(302)[0] == 302


def test_a_swapped_folder_is_not_run(cache_dir: Path) -> None:
    """A whole entry moved under another key: its manifest names the other key."""
    _, mine, _ = build_probe(304)
    _, other, _ = build_probe(305)
    shutil.rmtree(mine)
    shutil.copytree(other, mine)
    with pytest.warns(CacheWarning, match="manifest belongs to entry"):
        assert build_probe(304)[0] == 304


def test_a_record_copied_onto_another_record_s_file_is_not_read(cache_dir: Path) -> None:
    """Each record carries its key: one moved or copied onto another's file reads as absent, with a warning."""
    folder, _ = build.build("probe", [probe_step(306)])
    spec = {"consts": {}, "dims": {}, "dtypes": {}, "strides": {}}
    records.write("a" * 32, records.LaunchRecord("mod.one", "sm_90a", spec, folder.name))
    records.write("b" * 32, records.LaunchRecord("mod.two", "sm_90a", spec, folder.name))
    shutil.copyfile(cache_dir / "modules" / f"{'b' * 32}.json", cache_dir / "modules" / f"{'a' * 32}.json")
    with pytest.warns(CacheWarning, match=f"holds the record of another key \\('{'b' * 32}'\\)"):
        assert records.read(records.LaunchRecord, "a" * 32) is None
    assert records.read(records.LaunchRecord, "b" * 32) is not None


# -- 4. the key covers what changes the binary ----------------------------------------------------


def fake_compiler(folder: Path, version: str) -> str:
    """A C compiler that reports `version` and counts its compiles in folder/compiles."""
    real = build.cc_command([])[0]
    script = folder / "cc"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = "--version" ]; then echo "fake cc {version}"; exit 0; fi
        echo x >> {folder / 'compiles'}
        sleep "${{FAKE_CC_DELAY:-0}}"
        exec {shutil.which(real) or real} "$@"
    """))
    script.chmod(0o755)
    return str(script)


def compiles(folder: Path) -> int:
    path = folder / "compiles"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_compiler_upgrade_rebuilds(cache_dir: Path, tmp_path: Path) -> None:
    cc = fake_compiler(tmp_path, "1.0")
    first = build_probe(401, cc)
    assert build_probe(401, cc)[1:] == (first[1], False)
    fake_compiler(tmp_path, "2.0-with-a-longer-version")  # the same path, another compiler
    upgraded = build_probe(401, cc)
    assert upgraded[2] and upgraded[1] != first[1]
    assert compiles(tmp_path) == 2


def test_a_compilers_version_is_asked_once_per_binary_not_per_process(
    cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    cc = fake_compiler(tmp_path, "3.0")
    assert build.compiler_version(cc) == "fake cc 3.0"
    build._compiler_version.cache_clear()  # as in a new process: only the disk cache remembers

    def no_compiler(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a compiler was run: {args}")

    monkeypatch.setattr(build.subprocess, "run", no_compiler)
    assert build.compiler_version(cc) == "fake cc 3.0"


@pytest.mark.parametrize("package", ["tltyped", "tilelang", "torch"])
def test_a_package_upgrade_changes_the_key(package: str, monkeypatch: pytest.MonkeyPatch) -> None:
    step = probe_step(402)
    before, about = build.build_key([step])
    assert about["versions"][package]  # type: ignore[index]
    upgraded = {**records.versions(), package: "999.0"}
    monkeypatch.setattr(records, "versions", lambda: upgraded)
    assert build.build_key([step])[0] != before


def test_the_target_arch_is_in_the_key() -> None:
    sources = build.Step("kernel.cu", "__global__ void k() {}", build.nvcc_device_command("sm_90a", []), "kernel.cubin")
    other = build.Step("kernel.cu", "__global__ void k() {}", build.nvcc_device_command("sm_80", []), "kernel.cubin")
    assert build.build_key([sources])[0] != build.build_key([other])[0]


# -- 5. processes at once, unusable caches ----------------------------------------------------------



def test_ranks_starting_at_once_compile_once(cache_dir: Path, tmp_path: Path) -> None:
    """torchrun-style: 4 processes ask for one kernel at the same moment; nvcc (here cc) runs once."""
    cc = fake_compiler(tmp_path, "1.0")
    env = {**os.environ, "FAKE_CC_DELAY": "1"}
    ranks = [subprocess.Popen(probe_process(501, cc), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(4)]
    results = [rank.communicate(timeout=300) for rank in ranks]
    assert [rank.returncode for rank in ranks] == [0] * 4, results
    outputs = [out.strip().split(" ", 3) for out, _ in results]
    assert sorted((answer, compiled) for answer, compiled, _, _ in outputs) == [("501", "False")] * 3 + [("501", "True")]
    assert [said for *_, said in outputs] == ["[]"] * 4  # a healthy shared cache warns about nothing
    assert compiles(tmp_path) == 1


def test_a_file_where_the_cache_should_be(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel still builds, after one warning that says the setting names a file (`cache` commands say the same)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(blocker))
    with pytest.warns(CacheWarning, match="cannot be used") as record:
        assert build_probe(502)[0] == 502
    assert len(record) == 1
    assert str(record[0].message).startswith(
        f"tltyped: the kernel cache cannot be used: {cache.ENV_CACHE_DIR}={blocker} is a file, not a directory; "
        "kernels are built in "
    ), record[0].message
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per process, not one per build
        assert build_probe(503)[0] == 503


def test_a_cache_writable_by_everyone_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "modules").mkdir(mode=0o777)
    os.chmod(shared / "modules", 0o777)
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(shared))
    with pytest.warns(CacheWarning, match="writable by other users"):
        _, folder, _ = build_probe(504)
    assert shared not in folder.parents



def test_a_read_only_cache(tmp_path: Path) -> None:
    """An unwritable cache directory: one clear warning, and the kernel still builds."""
    ro = tmp_path / "ro"
    (ro / "modules").mkdir(parents=True)
    os.chmod(ro / "modules", 0o500)
    os.chmod(ro, 0o500)
    command = probe_process(505)
    if os.getuid() == 0:  # root writes anywhere: take away the capabilities that let it ignore permissions
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder read-only to this process")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    env = {**os.environ, cache.ENV_CACHE_DIR: str(ro), "HOME": str(tmp_path)}
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("505 ")
    assert "cannot be used" in run.stdout and run.stdout.count("cannot be used") == 1


@pytest.mark.parametrize("replacement", ["a file", "a symbolic link to itself"])
def test_an_entry_that_is_no_folder_is_rebuilt_leaving_nothing_aside(cache_dir: Path, replacement: str) -> None:
    """An entry's name taken by a file or a symbolic link (a loop): rebuilt, and what stood there is removed, not
    left in the cache as `.<key>.discarded-<pid>` for good."""
    _, folder, _ = build_probe(506)
    shutil.rmtree(folder)
    if replacement == "a file":
        folder.write_text("not an entry")
    else:
        folder.symlink_to(folder)
    with pytest.warns(CacheWarning, match="unusable"):
        assert build_probe(506) == (506, folder, True)
    assert [p.name for p in folder.parent.iterdir() if p.name.startswith(".")] == []


def test_a_lock_that_cannot_be_taken_builds_in_a_private_folder(cache_dir: Path) -> None:
    """A folder where an entry's lock file belongs (copied in, made by hand): the build cannot be serialised with
    other processes, so it is built where no other process looks, after a warning naming the lock; not refused as
    a full disk."""
    step = probe_step(507)
    key, _ = build.build_key([step])
    (cache.root() / f"{key}.lock").mkdir()
    with pytest.warns(CacheWarning, match=f"cannot lock {cache.root() / key}.lock") as caught:
        answer, folder, compiled = build_probe(507)
    assert (answer, compiled) == (507, True)
    assert cache_dir not in folder.parents, folder
    assert len(caught) == 1, [str(w.message) for w in caught]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once
        assert build_probe(507) == (507, folder, False)  # found where it was built
        assert cache.find(key) == folder  # and by what only looks (a launch record's build, a helper not built now)
        answer, other, compiled = build_probe(512)  # the cache still takes and serves every other kernel
        assert (answer, compiled) == (512, True) and cache_dir in other.parents, other



def test_an_entry_and_lock_of_another_user_in_a_private_cache(cache_dir: Path) -> None:
    """A cache folder of this user's holding another user's entry and lock (restored from a backup or a
    container image as another uid): the entry is not loaded, and the lock, which cannot be opened, does not
    fail the build."""
    folder, _ = build.build("probe", [probe_step(508)])
    lock = folder.with_name(f"{folder.name}.lock")
    command = probe_process(508)
    if os.getuid() == 0:  # root: the entry is another user's; the capabilities that let root open any file go
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a file unopenable to this process")
        os.chown(folder, 65534, 65534)
        os.chown(lock, 65534, 65534)
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", *command]
    else:  # not root: another user's files cannot be made; a lock this user cannot open stands for one
        os.chmod(lock, 0)
    run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("508 True "), run.stdout
    assert f"cannot lock {lock}" in run.stdout, run.stdout


def test_a_cache_replaced_by_a_file_while_the_process_runs(cache_dir: Path) -> None:
    """The cache folder replaced by a file after the process first used it: the next build warns and is built in
    a private folder, not refused."""
    build_probe(509)
    modules = cache_dir / "modules"
    shutil.rmtree(modules)
    modules.write_text("not a folder")
    with pytest.warns(CacheWarning, match=f"cannot lock {modules}"):
        answer, folder, compiled = build_probe(510)
    assert (answer, compiled) == (510, True) and cache_dir not in folder.parents



READ_ONLY_LATER = """
import json, os, tempfile, warnings
from pathlib import Path

def compile(rows):
    two_outputs.compile(torch.empty(rows, 96, dtype=torch.float32, device="meta"))

def damage_launch_records():
    places = [cache.configured_folder(), *Path(tempfile.gettempdir()).glob(cache.FALLBACK_PREFIX + "*")]
    damaged = 0
    for path in (record for where in places for record in where.glob("*.json")):
        try:
            kind = json.loads(path.read_text()).get("kind")
        except ValueError:  # damaged by an earlier process
            continue
        if kind == "launch":
            path.write_text("{not json")  # in place: the folder may be read-only, the file is not
            damaged += 1
    return damaged

with warnings.catch_warnings(record=True) as said:  # from the imports: a cache read-only from the start is said then
    warnings.simplefilter("always")
    import torch
    from tltyped import CacheWarning
    from tltyped.backend import cache
    from tests.kernels.outputs import two_outputs
    compile(256)
    os.chmod(cache.configured_folder(), 0o500)  # read-only from here on (from the start, for a later process)
    compile(128)
    compile(128)
    read_only = two_outputs.cache_info()._asdict()
    damaged = damage_launch_records()
    for rows in (256, 128, 256, 128):
        compile(rows)
print(json.dumps({"read_only": read_only, "damaged": damaged, "after": two_outputs.cache_info()._asdict(),
                  "warnings": [str(w.message) for w in said if issubclass(w.category, CacheWarning)]}))
"""


def test_a_cache_made_read_only_under_the_process_keeps_its_records_privately(tmp_path: Path) -> None:
    """The cache made read-only after the process first used it: a kernel built now goes to the private folder, and
    so does its launch record, so that its next compile loads it instead of lowering it again (as does a process
    started later, for which the cache is read-only from the start). A damaged launch record, in the cache or in
    the private folder, is rebuilt once; the private folder is warned of once."""
    from tests.conftest import has_nvcc  # not at the top: a probe's process imports this module, without pytest

    if not has_nvcc():
        pytest.skip("nvcc is not available")
    command = [sys.executable, "-c", READ_ONLY_LATER]
    if os.getuid() == 0:  # root writes anywhere: take away the capabilities that let it ignore permissions
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder read-only to this process")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), cache.ENV_CACHE_DIR: str(tmp_path / "cache"),
           "TILELANG_CACHE_DIR": str(tmp_path / "tilelang"), "TLTYPED_TARGET": "sm_90a",
           "TMPDIR": str(tmp_path / "tmp")}  # where the private folders are, to damage the records in them
    for started in ("writable", "read-only"):
        run = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert run.returncode == 0, (started, run.stderr[-3000:])
        report = json.loads(run.stdout.splitlines()[-1])
        read_only, after, said = report["read_only"], report["after"], report["warnings"]
        assert (read_only["compiles"], read_only["disk_hits"]) == (2, 1), (started, read_only, said)  # lowered once
        assert report["damaged"] == 2, started  # the first kernel's record and the second's
        assert (after["compiles"], after["disk_hits"]) == (4, 3), (started, after, said)  # each rebuilt once
        private = [message for message in said if "for this process only" in message]  # the private folder, once
        unusable = [message for message in said if "is unusable" in message]  # each damaged record, once
        assert (len(private), len(unusable), len(said)) == (1, 2, 3), (started, said)


def test_a_cache_removed_while_a_build_runs_in_it(cache_dir: Path, tmp_path: Path) -> None:
    """`rm -rf` of the cache while a process compiles into it: the compiler's output folder is gone, and the build
    is made again in the cache made anew (after a warning), not refused as a full disk."""
    cc = fake_compiler(tmp_path, "1.0")
    builder = subprocess.Popen(probe_process(511, cc), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "FAKE_CC_DELAY": "2"})
    try:
        deadline = time.monotonic() + 120
        while compiles(tmp_path) == 0:  # the compiler is running, in the staging folder inside the cache
            assert builder.poll() is None and time.monotonic() < deadline, builder.communicate()
            time.sleep(0.05)
        shutil.rmtree(cache_dir)
        out, err = builder.communicate(timeout=300)
    finally:
        if builder.poll() is None:
            builder.kill()
            builder.wait()
    assert builder.returncode == 0, err[-3000:]
    assert out.startswith(f"511 True {cache_dir / 'modules'}/"), out + err[-3000:]
    assert "was removed while" in out and compiles(tmp_path) == 2, out


def test_a_folder_where_a_record_belongs_is_replaced_by_the_record(cache_dir: Path) -> None:
    """A folder in a record's place (made by hand, or by a bug) reads as no record, with a warning; the next write
    of the record replaces it, as a rebuilt entry replaces an unusable one, instead of failing in every process."""
    folder, _ = build.build("probe", [probe_step(512)])
    record = records.LaunchRecord("mod.scale", "sm_90a", {"consts": {}, "dims": {}, "dtypes": {}, "strides": {}}, folder.name)
    (cache.root() / f"{'a' * 32}.json").mkdir()
    (cache.root() / f"{'a' * 32}.json" / "inside").write_text("")
    with pytest.warns(CacheWarning, match="Is a directory"):
        assert records.read(records.LaunchRecord, "a" * 32) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records.write("a" * 32, record)
    assert records.read(records.LaunchRecord, "a" * 32) == record
    assert [p.name for p in cache.root().iterdir() if p.name.startswith(".")] == []


def test_a_record_the_cache_refuses_is_kept_privately_until_the_cache_takes_one(cache_dir: Path) -> None:
    """The cache folder replaced by a file under the process: records are written in the private folder (after one
    warning) and read from there. Once the cache takes a record again, its private copy goes, so the older one
    never shadows it; removing a record removes it wherever it is."""
    folder, _ = build.build("probe", [probe_step(513)])
    spec = {"consts": {}, "dims": {}, "dtypes": {}, "strides": {}}
    first = records.LaunchRecord("mod.first", "sm_90a", spec, folder.name)
    second = records.LaunchRecord("mod.second", "sm_90a", spec, folder.name)
    modules = cache_dir / "modules"
    shutil.rmtree(modules)
    modules.write_text("not a folder")
    with pytest.warns(CacheWarning, match=f"the kernel cache {modules} cannot take record {'a' * 32}") as caught:
        records.write("a" * 32, first)
        records.write("b" * 32, first)
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert records.read(records.LaunchRecord, "a" * 32) == first
    modules.unlink()
    modules.mkdir(mode=0o700)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records.write("a" * 32, second)  # taken by the cache again
        assert records.read(records.LaunchRecord, "a" * 32) == second
        assert records.read(records.LaunchRecord, "b" * 32) == first  # still found where the cache refused it
        cache.remove_record("b" * 32)
        assert records.read(records.LaunchRecord, "b" * 32) is None


STALE_UNDER_READ_ONLY = """
import json, os, warnings
from tltyped import CacheWarning
from tltyped.backend import cache, records

spec = {"consts": {}, "dims": {}, "dtypes": {}, "strides": {}}
stale, fresh = (records.LaunchRecord(f"mod.{name}", "sm_90a", spec, "0" * 32) for name in ("stale", "fresh"))
key = "c" * 32
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    records.write(key, stale)
    os.chmod(cache.root(), 0o500)  # read-only from here on
    read = []
    for _ in range(2):  # found out of date twice: the second time in the private folder
        cache.remove_record(key)
        read.append(records.read(records.LaunchRecord, key))
        records.write(key, fresh)
        read.append(records.read(records.LaunchRecord, key))
print(json.dumps({"read": [r.function if r else None for r in read],
                  "warnings": [str(w.message) for w in said if issubclass(w.category, CacheWarning)]}))
"""


def test_a_stale_record_the_read_only_cache_keeps_is_shadowed_by_the_private_folder(tmp_path: Path) -> None:
    """A record found out of date (a factory record whose factory now returns another signature) in a cache made
    read-only under the process: the cache keeps its copy, so an empty record of its key takes its place in the
    private folder, after that folder's one warning. It reads as absent, and the fresh record, which the cache
    refuses, is kept there and read first; the stale copy is never read again (read again, it would be found out
    of date at every call)."""
    command = [sys.executable, "-c", STALE_UNDER_READ_ONLY]
    if os.getuid() == 0:  # root writes anywhere: take away the capabilities that let it ignore permissions
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder read-only to this process")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    env = {**os.environ, "PYTHONPATH": str(ROOT), cache.ENV_CACHE_DIR: str(tmp_path / "cache")}
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.splitlines()[-1])
    assert report["read"] == [None, "mod.fresh", None, "mod.fresh"], report
    assert len(report["warnings"]) == 1 and "cannot remove record " + "c" * 32 in report["warnings"][0], report


FACTORY_UNDER_READ_ONLY = """
import json, os, warnings
import tltyped as tl
from tests.kernels import lazy_style as ks
from tltyped.backend import cache, records

with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    made = ks.widened(64)  # its signature read with WIDTH = 2, and recorded
    old = records.read(records.FactoryRecord, ks.widened._record_key({"N": 64}))
    ks.WIDTH = 3
    records.write(ks.widened._record_key({"N": 64}), old)  # an edited record: WIDTH = 3's holds WIDTH = 2's signature
    os.chmod(cache.root(), 0o500)  # read-only from here on
    outcomes = []
    for _ in range(2):
        kernel = ks.widened(64)
        try:
            kernel.lower()
            outcomes.append(str(kernel.signature.params[0].tensor))
        except tl.KernelBuildError:
            outcomes.append("refused")
print(json.dumps({"outcomes": outcomes,
                  "warnings": [str(w.message) for w in said if issubclass(w.category, tl.CacheWarning)]}))
"""


def test_a_factory_record_found_out_of_date_in_a_read_only_cache_is_not_read_again(tmp_path: Path) -> None:
    """A factory record that names another signature than its factory returns now, in a cache made read-only
    under the process: the call that finds it out is refused, as the error says, and the factory's next call makes
    the kernel anew; the record, which the cache cannot remove, is not read again (it was at every call, each
    refused)."""
    command = [sys.executable, "-c", FACTORY_UNDER_READ_ONLY]
    if os.getuid() == 0:  # root writes anywhere: take away the capabilities that let it ignore permissions
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder read-only to this process")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    env = {**os.environ, "PYTHONPATH": str(ROOT), cache.ENV_CACHE_DIR: str(tmp_path / "cache"),
           "TILELANG_CACHE_DIR": str(tmp_path / "tilelang"), "TLTYPED_TARGET": "sm_90a"}
    run = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.splitlines()[-1])
    assert report["outcomes"] == ["refused", "Tensor[float32, 192]"], report
    assert len(report["warnings"]) == 1 and "cannot remove record" in report["warnings"][0], report


def test_the_cache_follows_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cache.ENV_CACHE_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _, folder, _ = build_probe(601)
    assert folder.parent == tmp_path / "xdg" / "tltyped" / "modules"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _, folder, _ = build_probe(602)
    assert folder.parent == tmp_path / "home" / ".cache" / "tltyped" / "modules"
