"""The records of the disk cache: what each is, the key of each, and how it is read back.

Builds (cubins, launchers) are content-addressed folders (cache.py). Records
are the small JSON documents beside them that say what a build is for:

    LaunchRecord    a jit function's specialisation -> the build holding its kernel
    TuningRecord    a tuned specialisation on one GPU model -> every candidate's time, the winner
    FactoryRecord   a lazy-style factory's arguments -> the signature of the kernel it returns
    SourceRecord    generated Python (a fast path), so a warm process renders nothing
    CompilerRecord  a compiler binary -> its `--version`, so a warm process spawns no compiler

Each is stored with its `kind`, the `FORMAT` it was written in and the digest
of the tltyped that wrote it; a record of another kind or format, or one whose
fields are not of their declared types all the way down (cut short, edited by
hand), reads as absent (and is overwritten by the next build). Every key
covers tltyped's own code, so a record another version wrote is never read
again: `python -m tltyped cache` counts it stale. The keys of the records that
name kernels are made here only (`kernel_key`): a kernel's key covers what
its elaboration reads (frontend/fingerprint.py), the signature it was read
with, its specialisation, the target, the decorator's build options, and
tltyped's own code with the TileLang, torch and Python versions.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypedDict, TypeVar, Union

from tltyped.backend import cache
from tltyped.errors import CacheWarning
from tltyped.frontend.const_text import shown
from tltyped.frontend.fingerprint import Reader
from tltyped.frontend.signature import Specialization
from tltyped.log import warn

FORMAT = 2


class SpecText(TypedDict):
    """A specialisation as records show it (`describe`)."""

    consts: dict[str, str]  # `Reader.text` of each const
    dims: dict[str, int]
    dtypes: dict[str, str]
    strides: dict[str, list[int] | None]


class Candidate(TypedDict):
    """One tuning candidate as `SearchResult.as_record` writes it."""

    config: dict[str, str]  # each tuned const's repr
    ms: float | None
    error: str | None


@dataclass(frozen=True)
class LaunchRecord:
    """The build of one specialisation of a jit function."""

    KIND: ClassVar[str] = "launch"
    function: str  # module.qualname, for `cache ls` and `cache clear FUNCTION`
    target: str  # the arch
    spec: SpecText
    build: str  # the key of the build folder (cache.find)


@dataclass(frozen=True)
class TuningRecord:
    """What a search found for one tuned specialisation on one GPU model."""

    KIND: ClassVar[str] = "tuning"
    function: str
    target: str
    spec: SpecText  # with each tuned const as its `Tune` space
    gpu: str
    candidates: list[Candidate]
    winner: int


@dataclass(frozen=True)
class FactoryRecord:
    """The signature of the kernel a lazy-style factory returns for some arguments (frontend/lazy.py's JSON form)."""

    KIND: ClassVar[str] = "factory"
    function: str
    signature: dict[str, Any]


@dataclass(frozen=True)
class SourceRecord:
    """Generated source text, checked against its own sha256 when read."""

    KIND: ClassVar[str] = "source"
    what: str
    source: str
    sha256: str


@dataclass(frozen=True)
class CompilerRecord:
    """A compiler's `--version` output, keyed by its binary's identity."""

    KIND: ClassVar[str] = "compiler"
    compiler: str
    version: str


Record = Union[LaunchRecord, TuningRecord, FactoryRecord, SourceRecord, CompilerRecord]
KINDS: dict[str, type[Record]] = {r.KIND: r for r in (LaunchRecord, TuningRecord, FactoryRecord, SourceRecord, CompilerRecord)}
R = TypeVar("R", LaunchRecord, TuningRecord, FactoryRecord, SourceRecord, CompilerRecord)


def read(kind: type[R], key: str) -> R | None:
    """Record `key` if it is there, trusted (cache.read_record), of this kind and format, and whole."""
    try:
        data = cache.read_record(key)
    except OSError:  # an unusable cache: as if nothing were recorded
        return None
    record = _parse(data) if data is not None else None
    if not isinstance(record, kind):
        return None
    if isinstance(record, SourceRecord) and hashlib.sha256(record.source.encode()).hexdigest() != record.sha256:
        return None
    return record


def write(key: str, record: Record) -> None:
    """Save a record: in the cache, else in the process's private folder (cache.write_record); where neither can take
    it, a warning, and its next load builds again."""
    try:
        cache.write_record(key, {"kind": record.KIND, "format": FORMAT, "package": package_digest(),
                                 **dataclasses.asdict(record)})
    except OSError as exc:
        warn(f"tltyped: cannot save a cache record ({exc})", CacheWarning)


def every() -> Iterator[tuple[Path, Record | None]]:
    """Every record file in the cache with its record (for `python -m tltyped cache`), read once each.

    None for a stale one: of an older format or a kind this version lacks,
    written by another version of tltyped (whose keys this one never makes),
    or unusable (unreadable, not private, another key's: `cache.read_record`
    warns of it).
    """
    for path, data in cache.records():
        yield path, _parse(data) if data is not None and data.get("package") == package_digest() else None


def _parse(data: Mapping[str, Any]) -> Record | None:
    kind = KINDS.get(str(data.get("kind")))
    if kind is None or data.get("format") != FORMAT:
        return None
    fields = _FIELDS[kind]
    values: dict[str, Any] = {name: data.get(name) for name in fields}
    if not all(_fits(values[name], hint) for name, hint in fields.items()):
        return None  # a field missing, or edited into another type at any depth
    return kind(**values)


_declared: Callable[[type], dict[str, Any]] = functools.cache(typing.get_type_hints)
"""A class's declared field types, read once (a TypedDict's are asked for each record read)."""


def _fits(value: object, hint: Any) -> bool:
    """Whether a value read from JSON is of the type `hint` declares, all the way down, so that no reader of a
    record meets a value of another type."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if typing.is_typeddict(hint):
        fields = _declared(hint)
        return (isinstance(value, dict) and value.keys() == fields.keys()
                and all(_fits(value[k], fields[k]) for k in fields))
    if origin is dict:
        return isinstance(value, dict) and all(_fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items())
    if origin is list:
        return isinstance(value, list) and all(_fits(item, args[0]) for item in value)
    if isinstance(value, bool):  # JSON's true is not a number
        return hint is bool
    return isinstance(value, (int, float) if hint is float else hint)


_FIELDS: dict[type[Record], dict[str, Any]] = {
    kind: {f.name: _declared(kind)[f.name] for f in dataclasses.fields(kind)} for kind in KINDS.values()
}
"""Each record class's fields, with their declared types."""


# -- keys ------------------------------------------------------------------------------


@functools.cache
def package_digest() -> str:
    """sha256 of tltyped's own code, templates and C sources: they decide what a specialisation builds."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]
    for path in sorted(p for p in package.rglob("*") if p.suffix in (".py", ".j2", ".c", ".cpp", ".h") and p.is_file()):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def describe(spec: Specialization, reader: Reader | None = None) -> SpecText:
    """The specialisation as text (each const by `Reader.text`, which says whether it was stable)."""
    reader = reader or Reader()
    return {
        "consts": {name: reader.text(value) for name, value in sorted(spec.consts.items())},
        "dims": dict(sorted(spec.dims.items())),
        "dtypes": {name: d.name for name, d in sorted(spec.dtypes.items())},
        "strides": {name: list(s) if s is not None else None for name, s in sorted(spec.strides.items())},
    }


def readable(spec: SpecText) -> str:
    """A specialisation as people read it: `block=128, tile=(64, 1), N=4096` (each const as Python writes it)."""
    consts = [f"{name}={shown(text)}" for name, text in spec["consts"].items()]
    return ", ".join(consts + [f"{name}={size}" for name, size in spec["dims"].items()])


@functools.cache
def versions() -> dict[str, str]:
    """What besides the sources and commands decides a binary: the packages, the Python ABI."""
    import torch

    return {
        "tltyped": _distribution_version("tltyped"),
        "tilelang": _distribution_version("tilelang"),
        "torch": torch.__version__,
        "python": sys.implementation.cache_tag,
    }


def _distribution_version(name: str) -> str:
    """An installed distribution's version, read without importing it; "unknown" for a source tree on sys.path."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def kernel_key(function: str, spec: Mapping[str, Any], target: Mapping[str, Any], options: str, *extra: str) -> str:
    """The key of a kernel's launch record (or, with `extra`, of its tuning record).

    `function` is the jit function's fingerprint digest and signature,
    `spec` its `describe`d specialisation, `options` its build options.
    """
    identity = [FORMAT, function, package_digest(), versions(), options, dict(spec), dict(target), *extra]
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]


def source_key(what: str, *inputs: object) -> str:
    """The key of a generated source: what it is and everything it is rendered from."""
    text = json.dumps([FORMAT, what, package_digest(), *inputs], sort_keys=True, default=lambda o: o.__dict__)
    return hashlib.sha256(text.encode()).hexdigest()[:32]
