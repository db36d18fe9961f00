"""The disk cache of builds: private, verified, and shared safely between processes.

Each entry is a folder `<root>/<key>/` holding one build's files and, written
last, `manifest.json`: the key, what the entry was built with, and the sha256
of every file. An entry is used only when
- its folder and files are owned by this user and writable by no one else
  (another user must not be able to plant code that then runs in this process),
- its manifest names this key and covers the folder: every other file in it is
  listed under a plain name (no path) with the recorded content, so a file
  that is loaded has always been verified (a truncated, swapped, half-written
  or unlisted file is never loaded: mapping one can kill the process with SIGBUS).
Anything else is reported and rebuilt. Builds of one key are serialised across
processes by a file lock, so N processes starting at once (torchrun ranks)
build it once; a build is assembled in a private folder inside the cache and
renamed into place, so no reader sees a partial entry and nothing moves
between filesystems. Beside the entries live records (small JSON documents,
see records.py) and the lock files; everything is private: folders 0700,
files 0600.

The root is `TLTYPED_CACHE_DIR`, else `$XDG_CACHE_HOME/tltyped`, else
`~/.cache/tltyped`, made absolute when the process first uses it (once per
setting), so a relative setting does not follow a later `os.chdir`. When it
cannot be used (not creatable or writable, a file where a folder should be,
owned by someone else or writable by others, no home folder to put it in),
builds go to a private temporary directory for the life of the process, after
one warning. Where one entry cannot be built in it (its lock another user's,
the folder made read-only or replaced under the process), that entry is built
in the same private directory, and the cache still serves the others; so is a
record the cache refuses (the one naming that build), and records are looked
for there first.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tltyped import locks
from tltyped.errors import CacheRemoved, CacheWarning, UnusableCache
from tltyped.log import warn, warn_once

if TYPE_CHECKING:
    from filelock import FileLock

ENV_CACHE_DIR = "TLTYPED_CACHE_DIR"
MANIFEST = "manifest.json"


Settings = tuple[str | None, str | None, str | None]  # TLTYPED_CACHE_DIR, XDG_CACHE_HOME, HOME


def _settings() -> Settings:
    """The environment variables that say where the cache lives."""
    return os.environ.get(ENV_CACHE_DIR), os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME")


def _configured_root(explicit: str | None, xdg: str | None) -> Path:
    """`TLTYPED_CACHE_DIR`, else `$XDG_CACHE_HOME/tltyped`, else `~/.cache/tltyped`, as an absolute path."""
    if explicit:
        return Path(os.path.abspath(explicit))
    if xdg:
        return Path(os.path.abspath(xdg)) / "tltyped"
    try:
        home = Path.home()
    except RuntimeError as exc:  # no HOME and no passwd entry: a container running as an arbitrary uid
        raise UnusableCache(f"neither {ENV_CACHE_DIR}, XDG_CACHE_HOME nor a home folder is set ({exc})") from None
    return Path(os.path.abspath(home)) / ".cache" / "tltyped"


_roots: dict[Settings, Path | UnusableCache] = {}  # where the environment says the cache is -> the folder builds go to
_roots_lock = locks.Lock()


def root() -> Path:
    """The folder entries live in: the configured cache's, or the process's private fallback.

    Decided once per process and setting: a relative setting is resolved
    against the working directory of the first use, so a later `os.chdir`
    does not start a second cache.
    """
    settings = _settings()
    with _roots_lock:
        if settings not in _roots:
            try:
                _roots[settings] = _usable_root(settings)
            except UnusableCache as exc:  # no folder at all: said once, then raised alike at every use
                _roots[settings] = exc
        found = _roots[settings]
    if isinstance(found, UnusableCache):
        raise UnusableCache(str(found))
    return found


def configured_folder() -> Path:
    """Where the environment puts entries, as a path alone: nothing is made or checked (OSError where a relative
    setting's working directory was removed)."""
    explicit, xdg, _ = _settings()
    return _configured_root(explicit, xdg) / "modules"


def configured_root(*, loadable: bool = True) -> Path:
    """The folder the environment configures for entries, made if missing and checked usable, with no fallback:
    UnusableCache saying why it cannot be used otherwise (what `root()` warns of before it falls back).

    Without `loadable`, a folder on a file system mounted noexec is returned
    too: no process loads a kernel from it, yet what is there (left from
    before the mount, or copied in) can be removed (`cache clear`).
    """
    return _checked_root(_settings(), loadable=loadable)


def _usable_root(settings: Settings) -> Path:
    try:
        return _checked_root(settings)
    except UnusableCache as exc:
        return _private_fallback(str(exc))


def _checked_root(settings: Settings, *, loadable: bool = True) -> Path:
    explicit, xdg, _ = settings
    try:
        wanted = _configured_root(explicit, xdg) / "modules"
    except OSError as exc:  # no place to put it (or a working directory that was removed)
        raise UnusableCache(f"the kernel cache has no place to live: {exc}") from None
    blocked = _not_a_folder(wanted, settings)
    if blocked is not None:
        raise UnusableCache(f"the kernel cache cannot be used: {blocked}")
    try:
        _make_private_dirs(wanted)
        _check_private(wanted, follow_symlinks=True)
        probe = tempfile.mkdtemp(prefix=".probe-", dir=wanted)  # writable, not only by its mode
        os.rmdir(probe)
        noexec = _noexec(wanted) if loadable else None
    except OSError as exc:
        raise UnusableCache(f"the kernel cache {wanted} cannot be used ({exc})") from None
    if noexec:
        raise UnusableCache(f"the kernel cache {wanted} {noexec}")
    return wanted


def _noexec(folder: Path) -> str | None:
    """Why the kernels built in `folder` could not be loaded, None where they can: a file system mounted noexec (as
    Docker mounts /dev/shm, and hardened hosts /tmp) refuses to map a shared library."""
    if os.statvfs(folder).f_flag & getattr(os, "ST_NOEXEC", 0):
        return "is on a file system mounted noexec, which cannot load the kernels built there"
    return None


def _not_a_folder(wanted: Path, settings: Settings) -> str | None:
    """Why `wanted` cannot be a folder, naming the setting that puts it there: it, or the nearest of its parents that
    exists, is a file (or anything else but a folder); None where that one is a folder or nothing exists."""
    existing = next((path for path in (wanted, *wanted.parents) if os.path.exists(path)), None)
    if existing is None or os.path.isdir(existing):
        return None
    problem = "is a file, not a directory" if os.path.isfile(existing) else "is not a directory"
    explicit, xdg, home = settings
    variable, value = (ENV_CACHE_DIR, explicit) if explicit else ("XDG_CACHE_HOME", xdg) if xdg else ("HOME", home)
    if value is None:  # the home folder of the user's passwd entry
        return f"{existing} {problem}"
    if Path(os.path.abspath(value)) == existing:
        return f"{variable}={value} {problem}"
    return f"{existing} {problem} ({variable}={value})"


FALLBACK_PREFIX = "tltyped-cache-"
"""The name the private fallback folder of a process starts with, in the temporary directory."""


def _private_fallback(reason: str, built: str = "kernels are built") -> Path:
    """A temporary directory only this user can reach, removed at exit; warns with `reason` that `built` there."""
    temporary = Path(tempfile.gettempdir())
    noexec = _noexec(temporary)
    if noexec:
        raise UnusableCache(
            f"{reason}, and the temporary folder {temporary} {noexec}: set {ENV_CACHE_DIR} (or TMPDIR) to a "
            "private, writable directory on another file system"
        )
    fallback = Path(tempfile.mkdtemp(prefix=FALLBACK_PREFIX))
    atexit.register(_remove_fallback, fallback, os.getpid())
    warn(f"tltyped: {reason}; {built} in {fallback} for this process only. "
         f"Set {ENV_CACHE_DIR} to a private, writable directory to keep them.", CacheWarning)
    return fallback


def _remove_fallback(folder: Path, owner: int) -> None:
    """Remove the private fallback `folder` at the exit of process `owner`, which made it, and of no other.

    A child forked from it inherits its atexit handlers and runs them when
    it ends normally (a forked worker that returns, `sys.exit`): removing
    the folder then would take the builds and records of the parent, still
    running, from under it (rebuilt at its next miss, or a build of its
    failing as the folder goes).
    """
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


def _make_private_dirs(path: Path) -> None:
    """Create `path` and its missing parents, each readable by this user only (0700)."""
    missing = []
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            break
        missing.append(folder)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it first
            os.mkdir(folder, 0o700)


def _check_private(path: Path, *, follow_symlinks: bool = False) -> os.stat_result:
    """Raise UnusableCache unless `path` is owned by this user and writable by no one else."""
    info = os.stat(path, follow_symlinks=follow_symlinks)
    if stat.S_ISLNK(info.st_mode):
        raise UnusableCache(f"{path} is a symbolic link")
    if info.st_uid != os.getuid():
        raise UnusableCache(f"{path} is owned by another user (uid {info.st_uid})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnusableCache(f"{path} is writable by other users (mode {stat.filemode(info.st_mode)})")
    return info


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _verify(folder: Path, key: str) -> str | None:
    """None when the entry can be loaded, else why not."""
    try:
        if not stat.S_ISDIR(_check_private(folder).st_mode):
            return f"{folder} is not a folder"
        manifest = json.loads((folder / MANIFEST).read_text())
        _check_private(folder / MANIFEST)
        if manifest.get("key") != key:
            return f"its manifest belongs to entry {manifest.get('key')!r}"
        files: dict[str, str] = manifest["files"]
        uncovered = _uncovered(folder, files)
        if uncovered is not None:
            return uncovered
        for name, digest in files.items():
            path = folder / name
            if not stat.S_ISREG(_check_private(path).st_mode):
                return f"{name} is not a regular file"
            if _sha256(path) != digest:
                return f"{name} does not match its recorded sha256 (truncated or replaced)"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _uncovered(folder: Path, files: object) -> str | None:
    """Why a manifest's file list does not cover its folder, or None: it must name every other file in
    it, each by a plain name, so that no file of the entry (the one that is loaded included) goes unverified."""
    if not isinstance(files, dict) or not files:
        return "its manifest lists no files"
    for name in files:
        if name in ("", "..", MANIFEST) or Path(name).name != name:
            return f"its manifest lists {name!r}, which is not a file of the entry"
    unlisted = sorted(set(os.listdir(folder)) - set(files) - {MANIFEST})
    if unlisted:
        return f"its manifest does not list {', '.join(unlisted)}"
    return None


def manifest(folder: Path) -> dict[str, Any]:
    """The manifest of an entry folder (for inspection)."""
    data: dict[str, Any] = json.loads((folder / MANIFEST).read_text())
    return data


def get_or_build(key: str, about: Mapping[str, Any], produce: Callable[[Path], None]) -> tuple[Path, bool]:
    """The verified folder of entry `key`, built by `produce(folder)` unless one exists.

    Returns (folder, whether it was built now). `about` is recorded in the
    manifest (what the entry was built from and with). `produce` writes the
    entry's files into the empty folder it is given.
    """
    try:
        try:
            return _get_or_build(root(), key, about, produce)
        except CacheRemoved as exc:  # `rm -rf` of the cache during the build: once more, in the folder made again
            warn(f"tltyped: {exc}; building it again", CacheWarning)
            return _get_or_build(root(), key, about, produce)
    except UnusableCache as exc:  # this entry cannot be replaced or locked: built where no one else can reach it,
        return _get_or_build(_private_folder(str(exc)), key, about, produce)  # the cache still serving the others


_private: dict[Settings, Path] = {}  # a cache's private folder, once an entry or record of it needed one


def _private_folder(reason: str) -> Path:
    """The process's private folder for the entries and records the cache cannot take, made (and warned of) at the
    first."""
    settings = _settings()
    with _roots_lock:
        if settings not in _private:
            _private[settings] = _private_fallback(reason, "it and anything else the cache cannot take are kept")
        return _private[settings]


def _refused() -> Path | None:
    """The private folder of the entries and records the cache could not take, None while there was none."""
    with _roots_lock:
        return _private.get(_settings())


def _get_or_build(where: Path, key: str, about: Mapping[str, Any], produce: Callable[[Path], None]) -> tuple[Path, bool]:
    folder = where / key
    if _verify(folder, key) is None:  # a published entry never changes: reading one needs no lock
        return folder, False
    lock = _acquired(where, key)
    try:
        if os.path.lexists(folder):
            problem = _verify(folder, key)
            if problem is None:
                return folder, False
            warn(f"tltyped: cache entry {folder} is unusable ({problem}); rebuilding it", CacheWarning)
            _discard(folder)
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=where))
        except OSError as exc:  # made read-only or removed since the lock was taken
            raise UnusableCache(f"the kernel cache {where} cannot take a build ({exc.strerror or exc})") from None
        try:
            produce(staging)
            files = {}
            for path in sorted(staging.iterdir()):
                os.chmod(path, 0o600)
                files[path.name] = _sha256(path)
            record = {"key": key, **about, "files": files}
            (staging / MANIFEST).write_text(json.dumps(record, indent=1, sort_keys=True))
            os.chmod(staging / MANIFEST, 0o600)
            os.rename(staging, folder)
        except Exception as exc:
            if not staging.is_dir():  # what failed was writing into a folder that is no longer there
                raise CacheRemoved(f"the kernel cache {where} was removed while {key} was built in it") from exc
            raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return folder, True
    finally:
        lock.release()


def _discard(folder: Path) -> None:
    """Move an unusable entry out of the way, then remove it; UnusableCache if it cannot be.

    Whatever stands at the entry's name goes: a folder, or a file or a symbolic link (which `rmtree` would
    leave behind as `.<key>.discarded-<pid>`). overlayfs (a cache in a container image's lower layer) cannot
    rename a folder of a lower layer (EXDEV): there it is removed where it is, which readers, verifying every
    file before a load, never mistake for an entry.
    """
    aside = folder.with_name(f".{folder.name}.discarded-{os.getpid()}")
    try:
        os.rename(folder, aside)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise UnusableCache(f"cannot replace {folder}: {exc}") from None
        try:
            _remove_tree(folder)
        except OSError as removing:
            raise UnusableCache(f"cannot replace {folder}: {removing}") from None
        return
    with contextlib.suppress(OSError):
        _remove_tree(aside)


def _remove_tree(path: Path) -> None:
    """Remove a folder and everything in it, or a file or symbolic link."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def find(key: str) -> Path | None:
    """The verified folder of entry `key`, or None when there is no usable one (nothing is built).

    Looked for in the cache, then in the process's private folder for the
    entries the cache could not take (`get_or_build`): a launch record names
    such a build too, and would otherwise be lowered again at every load.
    """
    for where in (root(), _refused()):
        if where is not None and _verify(where / key, key) is None:
            return where / key
    return None


def _lock(where: Path, key: str) -> FileLock:
    """The cross-process lock of `key` in the cache folder `where`: a private file (0600), in a folder
    made (privately) first where it was removed, since filelock would make it with default permissions."""
    from filelock import FileLock  # imported on a miss only: it costs tens of milliseconds

    _make_private_dirs(where)
    return FileLock(where / f"{key}.lock", mode=0o600)


def _acquired(where: Path, key: str) -> FileLock:
    """The lock of `key` in `where`, held; UnusableCache where it cannot be made or opened.

    That is a lock file this user cannot open (another user's, restored with
    the cache from a backup or an image; made read-only), a folder in its
    place, or the cache folder replaced by a file under the process. Then
    nothing serialises the build with other processes: the caller builds in
    its private folder instead, after a warning naming the lock, rather than
    failing the user's call.
    """
    path = where / f"{key}.lock"
    try:
        lock = _lock(where, key)
        lock.acquire()
    except OSError as exc:
        raise UnusableCache(f"cannot lock {path} ({exc.strerror or exc})") from None
    return lock


@contextlib.contextmanager
def locked(key: str) -> Iterator[None]:
    """Hold the cross-process lock of `key` (an entry's or a record's); without one if it cannot be made."""
    try:
        lock = _acquired(root(), key)
    except OSError:  # a read-only cache folder: no process writes there (this one's records go to its private folder)
        yield
        return
    try:
        yield
    finally:
        lock.release()


def _record_paths(key: str) -> list[Path]:
    """Where record `key` may be, in the order it is looked for: the private folder holds only what the cache refused
    while this process ran, so a record there is newer than the cache's (a write the cache takes removes it)."""
    return [where / f"{key}.json" for where in (_refused(), root()) if where is not None]


def read_record(key: str) -> dict[str, Any] | None:
    """Record `key` (a small JSON document), or None when there is none or it cannot be trusted.

    Records are the mutable part of the cache (what a specialisation's build
    is, tuning results); like entries they must be owned by this user and
    writable by no one else, and they carry their own key. The first place
    holding one decides: an unusable record in the private folder is not
    passed over for an older one in the cache, but rebuilt and written again.
    """
    paths = _record_paths(key)
    return _read_record_file(next((path for path in paths if os.path.lexists(path)), paths[-1]), key)


def _read_record_file(path: Path, key: str) -> dict[str, Any] | None:
    """The record in the file `path`, which must hold record `key`; None where there is none or it cannot be
    trusted (warned of once)."""
    try:
        _check_private(path)
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        warn_once(f"tltyped: cache record {path} is unusable ({exc}); ignoring it", CacheWarning)
        return None
    if not isinstance(data, dict):
        return None
    if data.get("key") != key:  # copied or renamed onto another record's file
        warn_once(f"tltyped: cache record {path} holds the record of another key ({data.get('key')!r}); ignoring it",
                  CacheWarning)
        return None
    return data


def remove_record(key: str) -> None:
    """Remove record `key` (found out of date), wherever it is.

    Where the cache's copy cannot be removed (the cache made read-only under
    the process), an empty record of that key takes its place in the private
    folder, after that folder's one warning: read first, it reads as absent
    (no kind), so the out-of-date copy is not read again, and the record
    written next, which the cache refuses too, replaces it there.
    """
    private = _refused()
    if private is not None:
        with contextlib.suppress(OSError):
            remove(private / f"{key}.json")
    where = root()
    path = where / f"{key}.json"
    with contextlib.suppress(OSError):
        remove(path)
    if os.path.lexists(path):
        reason = f"the kernel cache {where} cannot remove record {key}, found out of date"
        with contextlib.suppress(OSError):  # no private folder either: the copy is read again, as before it was found
            _write_record(_private_folder(reason), key, {})


def write_record(key: str, data: Mapping[str, Any]) -> None:
    """Write (or replace) record `key` atomically: readers see the old record or the new one, whole.

    Where the cache refuses it (made read-only or replaced under the process,
    full), it is written in the private folder, as the build it names was:
    left unwritten, the kernel would be lowered again at every load in this
    process. One the cache takes removes the private folder's, which would
    otherwise be read before it.
    """
    where = root()
    try:
        _write_record(where, key, data)
    except OSError as exc:
        reason = f"the kernel cache {where} cannot take record {key} ({exc.strerror or exc})"
        _write_record(_private_folder(reason), key, data)
        return
    private = _refused()
    if private is not None:
        with contextlib.suppress(OSError):
            os.unlink(private / f"{key}.json")


def _write_record(where: Path, key: str, data: Mapping[str, Any]) -> None:
    """Write record `key` in the folder `where`.

    A folder in the record's place (made by hand, or by a bug), which no
    rename can replace, goes first, as an unusable entry does before its
    rebuild; left, it would cost every process a rebuild and a warning.
    """
    _make_private_dirs(where)  # removed while the process ran (`rm -rf` of the cache): made again, as a build's is
    target = where / f"{key}.json"
    if os.path.isdir(target) and not os.path.islink(target):
        _discard(target)
    handle, staging = tempfile.mkstemp(prefix=f".{key}.", suffix=".json", dir=where)  # created 0600
    try:
        with os.fdopen(handle, "w") as out:
            json.dump({**data, "key": key}, out, indent=1, sort_keys=True)
        os.replace(staging, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging)
        raise


def entries() -> Iterator[Path]:
    """Every entry folder of the cache (for inspection): each with a manifest this user can reach (one in a
    folder it cannot read, another user's, is no entry of its: its processes never load it)."""
    for path in sorted(root().iterdir()):
        if os.path.isfile(path / MANIFEST):
            yield path


def records() -> Iterator[tuple[Path, dict[str, Any] | None]]:
    """Every record file of the cache with what it holds, None where it cannot be trusted (for inspection).

    Not `.<key>.<random>.json`: a record being written (`write_record`) by a
    process running now, or cut off by a kill, is no record (`clear` removes
    what a kill left). Each is read from its own file, never from the private
    folder of this process (`read_record` looks there first): what is listed
    with a path is what that file holds.
    """
    for path in sorted(root().glob("*.json")):
        if not path.name.startswith("."):
            yield path, _read_record_file(path, path.stem)


def size(path: Path) -> int:
    """Bytes a cache entry or record takes: its files', a symbolic link's own (never what it points to: a link
    in a record's place may point nowhere, or to itself); 0 for one removed meanwhile (by another process's
    `clear`)."""
    try:
        if not stat.S_ISDIR(path.lstat().st_mode):
            return path.lstat().st_size
        return sum(p.lstat().st_size for p in path.rglob("*") if p.is_symlink() or not p.is_dir())
    except FileNotFoundError:
        return 0


def remove(path: Path) -> None:
    """Remove an entry or a record (and its lock, a folder in its place too)."""
    if path.is_dir():
        _discard(path)
    else:
        path.unlink(missing_ok=True)
    lock = path.with_suffix(".lock")
    if os.path.lexists(lock):
        _remove_tree(lock)


def clear(where: Path | None = None) -> tuple[int, int]:
    """Remove everything in the cache folder but what a build running now in another process uses.

    That is builds, records, locks, the staging folders of builds that were
    killed, entries set aside as unusable and `failed/` (the sources of failed
    compiles). A running build holds the lock of its key; everything under a
    key whose lock is held (its staging folder, its lock) stays. Returns how
    many items were removed and how many kept. `where` is the cache folder,
    `root()` unless given (`configured_root(loadable=False)`).
    """
    where = root() if where is None else where
    items = sorted(where.iterdir())
    kept = 0
    for path in items:
        key = path.name.lstrip(".").split(".")[0]  # of <key>, <key>.json, <key>.lock, .<key>.<staging>
        with _unless_held(where / f"{key}.lock") as free:
            if not free:
                kept += 1
            elif path.is_dir() and not path.is_symlink():
                _discard(path)
            else:
                path.unlink(missing_ok=True)
    return len(items) - kept, kept


@contextlib.contextmanager
def _unless_held(lock_path: Path) -> Iterator[bool]:
    """Hold `lock_path` while the body runs and yield True; yield False where another process holds it.

    Makes no lock file: where there is none, nothing is being built under it;
    nor where it cannot be opened (another user's, a folder in its place),
    which no build of this user's can hold either.
    """
    from filelock import FileLock, Timeout

    if not lock_path.exists():
        yield True
        return
    lock = FileLock(lock_path, mode=0o600)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        yield False
        return
    except OSError:
        yield True
        return
    try:
        yield True
    finally:
        lock.release()
