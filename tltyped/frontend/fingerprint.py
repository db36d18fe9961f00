"""What a jit function's kernels are built from, besides the call: the values its elaboration reads.

Elaboration runs the function's Python body, and the body reads more than its
arguments: the cells of its closure (a factory's `op`, `scale`, `threads`),
the module globals it names (`BLOCK = int(os.environ[...])`), and the helper
functions it calls, with their own defaults, closures and globals. Two kernels
made by one factory differ in nothing but those values, so a disk record keyed
on the function's name and file would serve one kernel's binary to the other.

`fingerprint(fn)` reads all of it, by value, into one digest:

- numbers, strings, bytes, None, dtypes, enums, TIR expressions (a
  `T.dynamic` variable), and tuples, lists, sets and dicts of them: their
  text, with the type (`2`, `2.0` and `True` differ, and so do `0.0` and
  `-0.0`); a named tuple or a dataclass instance with its class, read as a
  user's class is (below);
- functions: their code (bytecode, constants, names), the file their source
  is in, their defaults, closure cells and the globals their code loads,
  recursively and cycle-safe; a function wrapped by a decorator
  (`__wrapped__`, `T.macro`, `functools.partial`) through what it wraps, and
  an instance of a user's decorator class with its other attributes too;
- user modules and classes: the content of their source file, and their
  attributes' values (`cfg.BLOCK`, `Knobs.scale`, `helpers.factor`), which
  the file's content does not fix: a module constant read from the
  environment, a class attribute set later. A module or class read whole
  (`getattr(cfg, name)`, `vars(cfg)`, a classmethod's `cls.scale`, a module
  given as a default) is read with all of them; one named in the code is
  read through the attributes the code names;
- imports in the code: a library module by name; a user module, or a value
  imported from one, by value (a module or class with its attributes);
- the process environment (`os.environ`, `os.getenv`) and other state no
  code names: a global read by its name as a string (`globals()`), a module
  looked up at run time (`sys.modules`, `importlib.import_module`), a file
  or folder (`open`, `os.read`, `os.path.getsize`, a path's `read_text` or
  `open`), code in a string (`eval`, `exec`), and whatever the standard
  modules of files, processes, the clock and randomness give (`io`,
  `subprocess`, `time`, `random`, ...): no text, as it may differ between
  processes (a file read through another library's reader, `numpy.load`, is
  library code, read by name);
- library code: the standard library and tltyped by name (the Python version
  and tltyped's own digest are in every record's key), installed packages by
  name and their top-level package's `__version__` (by source without one);
  a library that queries the GPU (`torch.cuda`) with the GPU this process
  reads (its name, SM count and memory), which two GPUs of one architecture
  do not share.

A logger (by name), a compiled pattern, a lock and a torch device have
texts too: a user's module or class holds them beside its kernels' values.
Any other value with no such text (an object shown with its address, a
tensor) is read by its identity instead (an instance of a user's class with
its class and attributes too, so that one changed in place is new): the
digest then means something in this process only (`stable` is False), so
nothing is recorded on disk under it and the kernel is elaborated in each
process. Equal values give equal digests, so two kernels of one factory
share a build exactly when their values are equal.

The same texts describe a specialisation's consts in the records
(`stable_text`), so one rule says what two values have in common.

Reading all of that costs too much for every call, so the fingerprint also
lists what a call can check cheaply instead (`watched`): each name of a
module's globals, each user module's or object's attribute and each closure
cell that the code read, and each user function's code and defaults (and a
library wrapper's `__wrapped__`), which IPython's `%autoreload` sets in place
on the old function, with the object it held. `unchanged` tells whether
each still holds its object; the call path checks that before it serves a
kernel from memory, and reads the values again where one was rebound (unless
each rebound place holds a value of the same text, `rebound_alike`: then the
kernels in memory are still those of the values). A value changed in place
(an item appended to a list, a class's attribute set) is not seen there,
only by the next build.
"""

from __future__ import annotations

import __future__
import builtins
import collections
import dataclasses
import dis
import enum
import functools
import gc
import hashlib
import importlib
import importlib.util
import linecache
import logging
import math
import os
import re
import struct
import sys
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from tltyped.provenance import INSTALLED_DIRS, LIBRARY_PACKAGES, PACKAGE, STDLIB_DIR, is_users_code, under
from tltyped.templates import GENERATED
from tltyped.types.dtypes import BY_NAME, DType, is_dtype_like
from tltyped.types.params import Tune

_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
_CELL_LOADS = frozenset({"LOAD_DEREF", "LOAD_CLASSDEREF"})
_ATTRIBUTE_LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
_OS_READERS = ("environ", "environb", "getenv", "getenvb", "read", "pread", "open", "fdopen", "popen", "listdir",
               "scandir", "walk", "stat", "lstat", "urandom", "getcwd", "readlink", "getpid", "cpu_count", "times",
               "uname", "getlogin")
_PATH_READERS = ("exists", "lexists", "isfile", "isdir", "islink", "getsize", "getmtime", "getatime", "getctime",
                 "realpath", "samefile")
_OUTSIDE_STATE: tuple[object, ...] = (
    *(getattr(os, name) for name in _OS_READERS if hasattr(os, name)),
    *(getattr(os.path, name) for name in _PATH_READERS if hasattr(os.path, name)),
    builtins.globals, builtins.eval, builtins.exec, builtins.open, builtins.__import__,
    sys.modules, importlib.import_module, importlib.reload,
)
"""The process environment, the module table and the readers of what no code names (a global by its name as a
string, a module looked up at run time, a file or the file system, code in a string): what a body reads through
them is not in the code, and may differ between processes."""
_STATE_MODULES: tuple[types.ModuleType, ...] = (os, os.path, sys, importlib, builtins)
"""The modules whose attributes hold some of it (asked only these: another module's attribute may import on first
use, as `tltyped.language`'s import TileLang)."""
_OUTSIDE_MODULES = frozenset({"io", "codecs", "subprocess", "random", "secrets", "time", "datetime", "glob", "shutil",
                              "tempfile", "socket", "uuid", "fileinput", "platform", "getpass", "timeit"})
"""Standard modules whose every use may read such state (files, other processes, the clock, randomness): a body
using any of their functions or classes is read by identity."""
_STATE_MODULE_NAMES = frozenset(module.__name__ for module in _STATE_MODULES)
_OUTSIDE_ATTRIBUTES = frozenset(
    name for module in _STATE_MODULES for name in dir(module)
    if any(getattr(module, name) is reader for reader in _OUTSIDE_STATE)
)
"""Their attributes' names for it (`modules`, `environ`, `import_module`, `open`), where a function imports them."""
_READ_BY_NAME = frozenset({"f_globals", "f_locals", "f_builtins", "__globals__", "read_text", "read_bytes", "open",
                           "iterdir", "glob", "rglob", "stat", "exists", "is_file", "is_dir"})
"""Attributes that read what no code names whatever object has them: a frame's or a function's namespaces (read
by name as strings), a path's file or folder (`pathlib.Path.read_text`, `.open()`, `.iterdir()`)."""


class Watch(NamedTuple):
    """A place the code read a value from, and the object it held: `namespace[name]` where `namespace` is a dict (a
    module's globals, a class's namespace, an object's `__dict__`); a closure cell's contents where `name` is None;
    a function's attribute where `namespace` is a function (`__code__`, `__defaults__`, `__kwdefaults__`, a library
    wrapper's `__wrapped__`: what IPython's `%autoreload` and other hot patchers set in place, on the object every
    name of it still holds)."""

    namespace: Any  # a dict, a cell or a function
    name: str | None
    value: object


@dataclass(frozen=True)
class Fingerprint:
    """A digest of everything a function's elaboration reads from outside the call."""

    digest: str
    stable: bool  # every value had a stable text: the digest means the same in every process
    held: tuple[object, ...] = ()  # the values read by identity, kept alive so that no other object takes their id
    watched: tuple[Watch, ...] = ()  # the places the values were read from, to check cheaply at each call


def fingerprint(fn: Callable[..., Any]) -> Fingerprint:
    """The fingerprint of a jit function: its code, file, closure, globals and helpers, by value."""
    reader = Reader()
    text = reader.text(fn)
    watched = tuple(reader.watched.values())
    return Fingerprint(hashlib.sha256(text.encode()).hexdigest(), reader.stable, tuple(reader.held), watched)


def unchanged(watched: tuple[Watch, ...]) -> bool:
    """Whether every place still holds the object it held when `watched` was read (by identity: no value is read
    again, so a check costs a lookup per place)."""
    for namespace, name, value in watched:
        if _held(namespace, name) is not value:
            return False
    return True


def watched_texts(watched: tuple[Watch, ...]) -> tuple[str | None, ...]:
    """The stable text of each watched value, read with `watched`, so that a place rebound to an equal value is told
    from a change (`rebound_alike`); None for a function, class or method (whose text reads all their code reads:
    such a value is rebound by defining it again, not at each call) and for a value with no stable text."""
    return tuple(None if isinstance(w.value, (types.FunctionType, type, types.MethodType)) else stable_text(w.value)
                 for w in watched)


def rebound_alike(watched: tuple[Watch, ...], texts: tuple[str | None, ...]) -> tuple[Watch, ...] | None:
    """`watched` with each place that holds another object now watching that object, where each such object has
    the text its place's had (`texts`, `watched_texts`): what was built from the values is built from these alike
    (a global a loop rebinds to an equal value at each step); None where some place holds another value, or none."""
    now = []
    for watch, text in zip(watched, texts, strict=True):
        value = _held(watch.namespace, watch.name)
        if value is not watch.value:
            if text is None or value is _MISSING or value is _EMPTY_CELL or stable_text(value) != text:
                return None
            watch = watch._replace(value=value)
        now.append(watch)
    return tuple(now)


def stable_text(value: object) -> str | None:
    """A text of `value` that is the same in every process and tells apart what compiles differently, or None."""
    reader = Reader()
    text = reader.text(value)
    return text if reader.stable else None


class Reader:
    """Reads values into texts; remembers whether each had a stable one."""

    def __init__(self) -> None:
        self.stable = True
        self.held: list[object] = []
        self._open: dict[int, int] = {}  # id of a container being read -> its depth (for cycles)
        self._seen: dict[int, int] = {}  # id of a function, class or module read (or being read) -> its number
        self._kept: list[object] = []  # those, alive while read, so that no other object takes their id
        self.watched: dict[tuple[int, str | None], Watch] = {}  # (id of its namespace, name) -> the place read

    def text(self, value: object) -> str:
        try:
            return self._text(value)
        except Exception:  # noqa: BLE001 - a value that raises when looked at (a faked `__class__`, a raising
            self.stable = False  # `__iter__` or `__repr__`): no stable text, so nothing built from it is reused
            self.held.append(value)
            return f"unreadable:{type(value).__qualname__}@{id(value):x}"

    def _text(self, value: object) -> str:
        if _is_dtype(value):  # TileLang's dtype objects, their names, DType classes, torch dtypes: each as spelled,
            return f"dtype:{_spelling(value)}"  # since a body may tell "float" from "float32", or a str from torch's
        if type(value) is int and value.bit_length() > 2048:  # past what repr may print at the lowest limit
            return f"int:{value:#x}"  # (sys.set_int_max_str_digits(640)); one cutoff, so one text in every process
        if type(value) in (type(None), bool, int, str, bytes, complex):
            return f"{type(value).__name__}:{value!r}"
        if type(value) is float:
            if math.isnan(value):  # every NaN prints alike; their payloads differ
                return f"float:nan:{struct.pack('<d', value).hex()}"
            return f"float:{value!r}"  # repr tells -0.0 from 0.0
        if isinstance(value, enum.Enum):
            member = f"{type(value).__module__}.{type(value).__qualname__}.{value.name}"  # as `cache ls` shows it
            return f"enum:{member}:{self.text(type(value))}={self.text(value.value)}"
        if isinstance(value, Tune):
            return f"tune:{self.text(value.values)}" + (f":{self.text((value.group, value.rows))}" if value.group else "")
        key = id(value)
        if isinstance(value, (types.FunctionType, type, types.ModuleType)):  # the graph of the user's code: each
            if key in self._seen:  # read once (a module many others import, a cycle), then named by its number
                return f"seen:{self._seen[key]}:{_qualified_name(value)}"  # (the name for people: `cache ls`)
            self._seen[key] = len(self._seen)
            self._kept.append(value)
            return self._compound(value)
        if key in self._open:
            return f"cycle:{len(self._open) - self._open[key]}"
        self._open[key] = len(self._open)
        try:
            return self._compound(value)
        finally:
            del self._open[key]

    def _compound(self, value: object) -> str:
        kind = type(value)
        if any(value is reader for reader in _OUTSIDE_STATE) or _of_outside_module(value):
            return self._unstable(value, "outside")
        if kind in (tuple, list):
            return f"{self._type_name(kind)}:({', '.join(self.text(v) for v in value)})"  # type: ignore[attr-defined]
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple: with its class, whose properties
            items = ", ".join(self.text(v) for v in value)  # and methods the body may read, and what they read
            return f"{self.text(kind)}:({items})"
        if kind in (frozenset, set):
            return f"{kind.__name__}:{{{', '.join(sorted(self.text(v) for v in value))}}}"  # type: ignore[attr-defined]
        if kind is dict:
            pairs = sorted(f"{self.text(k)}: {self.text(v)}" for k, v in value.items())  # type: ignore[attr-defined]
            return f"dict:{{{', '.join(pairs)}}}"
        if isinstance(value, types.FunctionType) and not value.__code__.co_filename.startswith(GENERATED):
            return self._function(value)  # (a jit function's generated call is read by what it wraps, below)
        if isinstance(value, types.MethodType):
            return f"method:{self.text(value.__func__)} of {self.text(value.__self__)}"
        if isinstance(value, functools.partial):
            return f"partial:{self.text(value.func)}({self.text(value.args)}, {self.text(value.keywords)})"
        if isinstance(value, types.ModuleType):
            text = f"module:{value.__name__}{_origin(getattr(value, '__file__', None), value.__name__)}"
            return f"{text}({self.text(_attributes(value))})" if _is_user(value) else text + _on_device(value.__name__)
        if isinstance(value, type):
            module = sys.modules.get(value.__module__)
            origin = _origin(getattr(module, '__file__', None), value.__module__)
            if not _is_user(value):
                return f"class:{self._type_name(value)}{origin}"
            attributes = {name: attribute for cls in reversed(value.__mro__) if _is_user(cls)
                          for name, attribute in _attributes(cls).items()}
            return f"class:{self._type_name(value)}{origin}({self.text(attributes)})"
        if isinstance(value, (staticmethod, classmethod)):
            return f"{type(value).__name__}:{self.text(value.__func__)}"
        if isinstance(value, property):
            return f"property:{self.text((value.fget, value.fset, value.fdel))}"
        if isinstance(value, functools.cached_property):
            return f"cached_property:{self.text(value.func)}"
        if type(value) in _FIELD_DESCRIPTORS:  # a `__slots__` slot, a NamedTuple's field: the class's source fixes it
            return f"field:{type(value).__qualname__}"
        if isinstance(value, types.BuiltinFunctionType) and (value.__self__ is None or isinstance(value.__self__, types.ModuleType)):
            module = getattr(value, '__module__', None)
            return f"builtin:{module}.{value.__qualname__}{_on_device(module or '')}"
        if isinstance(value, types.BuiltinFunctionType) and isinstance(value.__self__, type):  # `tuple.__new__`
            return f"builtin:{self.text(value.__self__)}.{value.__name__}"
        if type(value).__module__ in ("typing", "types", "typing_extensions") and " at 0x" not in repr(value):
            return f"typing:{value!r}"  # TypeVars, generic aliases
        wrapped = getattr(value, "__wrapped__", None)
        if wrapped is not None and callable(value):  # a jit function, a cache wrapper: what it wraps
            state = {k: v for k, v in getattr(value, "__dict__", {}).items() if k != "__wrapped__" and _is_user(kind)}
            return f"wrapped:{self.text(kind)}({self.text(wrapped)}, {self.text(state)})"
        if _is_tir_expr(value):  # `T.dynamic("m")` passed to a factory: its name and type are what builds
            return f"tir:{kind.__qualname__}:{value.dtype}:{value}"  # type: ignore[attr-defined]
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = ", ".join(f"{f.name}={self.text(getattr(value, f.name))}" for f in dataclasses.fields(value))
            # and the attributes no field declares (one set from an InitVar, or later), but a `cached_property`'s
            named = {f.name for f in dataclasses.fields(value)}  # value, which the fields fix, read or not yet
            others = {k: v for k, v in getattr(value, "__dict__", {}).items()
                      if k not in named and not isinstance(getattr(kind, k, None), functools.cached_property)}
            return f"dataclass:{self.text(kind)}({fields}" + (f", {self.text(others)})" if others else ")")
        known = _known_value_text(value)
        if known is not None:
            return known
        if _is_users_object(value):  # a user's object: by identity, with
            own = self.text(vars(value))  # its class and attributes, so that one changed in place
            return self._unstable(value, f"object:{self.text(kind)}({own})")  # (`cfg.block = 64`) is new too
        return self._unstable(value, f"object:{self._type_name(kind)}")

    def _unstable(self, value: object, what: str) -> str:
        """A value read by its identity: the text means something in this process only."""
        self.stable = False
        self.held.append(value)
        return f"{what}@{id(value):x}"

    def _function(self, fn: types.FunctionType) -> str:
        name = f"function:{fn.__module__}.{fn.__qualname__}"
        cells = dict(zip(fn.__code__.co_freevars, (_cell(cell) for cell in fn.__closure__ or ())))
        closure = [self.text(value) for value in cells.values()]
        origin = _origin(fn.__code__.co_filename, fn.__module__)
        if not origin.startswith(" source"):  # library code, named by its version; its closure may hold user values
            closure += self._wrapped_function(fn)
            return f"{name}{origin}{_on_device(fn.__module__)}(closure={closure})"
        module_globals = fn.__globals__
        global_loads = list(_loads(fn.__code__, _GLOBAL_LOADS))
        global_paths = sorted({path for path in global_loads if path[0] in module_globals})
        builtins_read = sorted({path[0] for path in global_loads if path[0] not in module_globals
                                and any(getattr(builtins, path[0], None) is reader for reader in _OUTSIDE_STATE)})
        cell_paths = sorted({path for path in _loads(fn.__code__, _CELL_LOADS) if len(path) > 1 and path[0] in cells})
        self._watch_reads(fn, global_paths, [(cells[path[0]], path[1:]) for path in cell_paths])
        globals_ = [f"{'.'.join(path)}={self._path_text(module_globals[path[0]], path[1:])}" for path in global_paths]
        globals_ += [f"{name}={self.text(getattr(builtins, name))}" for name in builtins_read]  # `globals()`, `open`
        closure += [f"{'.'.join(path)}={self._path_text(cells[path[0]], path[1:])}" for path in cell_paths]
        imports = [self._imported(fn, module, names) for module, names in _imports(fn.__code__)]
        if _reaches_outside_state(fn.__code__):
            imports.append(self._unstable(fn, "outside"))
        return (
            f"{name}{origin}(code={_code_digest(fn.__code__, self)}, "
            f"defaults={self.text(fn.__defaults__)}, kwdefaults={self.text(fn.__kwdefaults__)}, "
            f"closure={closure}, globals={globals_}, imports={imports})"
        )

    def _wrapped_function(self, fn: types.FunctionType) -> list[str]:
        """A library's wrapper of a function (`functools.wraps`: tltyped's `T.macro`, which calls what its
        `__wrapped__` names, and holds it nowhere else): that function's text, a user's by its source and a
        package's by its version (left out, another version of a package's macro would be served the build of
        the first); and, for a user's, the wrapper's `__wrapped__` watched (IPython's `%autoreload` sets it in
        place, giving the old wrapper the new one's `__dict__`)."""
        wrapped = vars(fn).get("__wrapped__")
        if not isinstance(wrapped, types.FunctionType):
            return []
        if _origin(wrapped.__code__.co_filename, wrapped.__module__).startswith(" source"):
            self.watched.setdefault((id(fn), "__wrapped__"), Watch(fn, "__wrapped__", wrapped))
        return [f"__wrapped__={self.text(wrapped)}"]

    def _watch_reads(self, fn: types.FunctionType, global_paths: list[tuple[str, ...]],
                     cell_reads: list[tuple[object, tuple[str, ...]]]) -> None:
        """Lists where the function's code reads values from: its globals by name, its closure cells, and a user
        module's or object's attribute read through either (`cfg.BLOCK`, `pkg.cfg.block`, down a path of them);
        and the function's own code and defaults (`_code_places`). A module itself is left out (no kernel rebinds
        `T` or `math`), and so is a name not bound yet (what binds it later is a change the next build reads)."""
        places: list[tuple[Any, str | None]] = [(cell, None) for cell in fn.__closure__ or ()]
        for path in global_paths:
            places += _places_along(fn.__globals__, path)
        for value, attributes in cell_reads:  # a cell's value, and the attributes read off it
            names = _attributes_of(value, attributes[0])
            places += _places_along(names, attributes) if names is not None else []
        places += _code_places(fn)
        for namespace, name in places:
            value = _held(namespace, name)
            if not (isinstance(value, types.ModuleType) or value is _MISSING or value is _EMPTY_CELL):
                self.watched.setdefault((id(namespace), name), Watch(namespace, name, value))

    def _path_text(self, value: object, attributes: tuple[str, ...]) -> str:
        """The text of what `value.a.b` reads; a path into a library that queries the GPU (`torch.cuda.
        get_device_properties`) reads the GPU too."""
        text = self.text(_read(value, attributes))
        if isinstance(value, types.ModuleType) and attributes:
            text += _on_device(".".join((value.__name__, *attributes)))
        return text

    def _imported(self, fn: types.FunctionType, written: str, names: tuple[str, ...]) -> str:
        """An import in a function's code: a library module by name (not imported here: a warm process imports no
        TileLang), a user module, or the names taken from it, by value (a module or class with its attributes'
        values, which the code reads by names not seen here)."""
        try:
            package = fn.__module__ if hasattr(sys.modules.get(fn.__module__), "__path__") else fn.__module__.rpartition(".")[0]
            name = importlib.util.resolve_name(written, package)
            top = name.partition(".")[0]
            loaded = sys.modules.get(top)
            origin = getattr(loaded, "__file__", None) if loaded is not None else getattr(importlib.util.find_spec(top), "origin", None)
            if _is_outside_module(top):
                return self._unstable(written, f"import:{name}")
            if top in LIBRARY_PACKAGES or (origin is not None and not is_users_code(origin, top)):
                return f"import:{name}{_origin(origin, top)}"
            module = importlib.import_module(name)
            # a name not yet bound in the package is a submodule the import will load
            values = [getattr(module, n) if hasattr(module, n) else importlib.import_module(f"{name}.{n}") for n in names]
        except Exception:  # noqa: BLE001 - an import that fails here fails in the body too, which reports it
            return self._unstable(written, f"import:{written}")
        if not _is_user(module):
            return f"import:{self.text(module)}"
        texts = [self.text(v) for v in values or [module]]
        return f"import:{module.__name__}({', '.join(f'{n}={t}' for n, t in zip(names or ('*',), texts))})"

    @staticmethod
    def _type_name(kind: type) -> str:
        return f"{kind.__module__}.{kind.__qualname__}"


def _qualified_name(value: types.FunctionType | type | types.ModuleType) -> str:
    return value.__name__ if isinstance(value, types.ModuleType) else f"{value.__module__}.{value.__qualname__}"


def _known_value_text(value: object) -> str | None:
    """A text for the library objects a user's module or class commonly holds beside its kernels' values: what
    tells two of them apart (a logger's name, a pattern, a device), or, for a lock, nothing (its state is no
    value a kernel is built from). None for any other object."""
    if isinstance(value, logging.Logger):
        return f"logger:{value.name}"
    if isinstance(value, re.Pattern):
        return f"pattern:{value.pattern!r}/{value.flags}"
    if isinstance(value, _LOCKS):
        return f"lock:{type(value).__qualname__}"
    if isinstance(value, __future__._Feature):  # `from __future__ import annotations` binds one in the module
        return f"future:{value.compiler_flag}"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.device):
        return f"torch.device:{value}"
    return None


_LOCKS = (type(threading.Lock()), type(threading.RLock()), threading.Condition, threading.Event, threading.Semaphore)


def _is_dtype(value: object) -> bool:
    if isinstance(value, str):
        return value in BY_NAME
    if isinstance(value, type):
        return issubclass(value, DType) and value is not DType
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.dtype) and is_dtype_like(value)


def _spelling(dtype: object) -> str:
    """A dtype as written: `str:'half'`, `torch.float16`, `tl.float16` (tltyped's class), `T.float16` (TileLang's
    dtype object, or the `DTypeName` `tltyped.language` hands out before TileLang is imported, which elaboration
    makes that object: one value)."""
    if isinstance(dtype, type):
        return f"tl.{dtype.__name__}"
    if type(dtype) is str:
        return f"str:{dtype!r}"
    return str(dtype) if not isinstance(dtype, str) else f"T.{str.__str__(dtype)}"


def _is_outside_module(name: object) -> bool:
    """Whether a module's name is one of `_OUTSIDE_MODULES` (or their C parts, `_io`, `_random`)."""
    return isinstance(name, str) and name.partition(".")[0].lstrip("_") in _OUTSIDE_MODULES


def _of_outside_module(value: object) -> bool:
    """Whether `value` is a function, class or bound method of one of `_OUTSIDE_MODULES` (`subprocess.run`,
    `time.time`, `random.random`, `io.StringIO`). The module itself is not: a user's module that imports `time`
    for its own use, read whole, reads none of it; code reading through it (`time.time()`) reads its function."""
    if isinstance(value, types.ModuleType):
        return False
    owner = getattr(value, "__self__", None)
    module = getattr(value, "__module__", None) if owner is None or isinstance(owner, types.ModuleType) else (
        type(owner).__module__)
    return _is_outside_module(module)


def _is_tir_expr(value: object) -> bool:
    tirx = sys.modules.get("tvm.tirx")  # loaded whenever a value could be one
    return tirx is not None and issubclass(type(value), tirx.PrimExpr)  # type(): a value may fake `__class__`


def _held(namespace: Any, name: str | None) -> object:
    """What a watched place (`Watch`) holds now: `namespace[name]` where `namespace` is a dict (of a subclass too: a
    function's globals may be one, as `exec` takes), a cell's contents where `name` is None, else the function's
    attribute (`_MISSING` where there is none). The C guard reads the same (callpath/csrc/cached_call.c's
    `guard_holds`, by `PyDict_Check`)."""
    if isinstance(namespace, dict):
        return namespace.get(name, _MISSING)
    if name is None:
        return _cell(namespace)
    return getattr(namespace, name, _MISSING)  # a function


def _code_places(fn: types.FunctionType) -> list[tuple[Any, str | None]]:
    """The attributes of a user's function whose values its text reads, where a hot patcher sets them in place:
    IPython's `%autoreload` gives the old function object the new `__code__` and `__defaults__`, and every global,
    closure cell and import naming it (a kernel's helper, a `T.macro`'s function, the jit function itself) still
    holds that object. Its defaults only where it has parameters of that kind: no call reads another's."""
    code = fn.__code__
    places: list[tuple[Any, str | None]] = [(fn, "__code__")]
    if code.co_argcount:
        places.append((fn, "__defaults__"))
    if code.co_kwonlyargcount:
        places.append((fn, "__kwdefaults__"))
    return places


def _cell(cell: Any) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell: a closure variable assigned later
        return _EMPTY_CELL


_EMPTY_CELL = "<empty cell>"
_MISSING = "<no such attribute>"  # an attribute set only later: its absence is what the elaboration would meet


_FIELD_DESCRIPTORS = frozenset({types.MemberDescriptorType, types.GetSetDescriptorType,
                                type(getattr(collections.namedtuple("_Field", "a"), "a"))})


_DEVICE_QUERIES = (
    "torch.cuda", "tvm.cuda", "tvm.runtime", "tilelang.carver", "tilelang.utils.target", "triton.runtime",
    "tilelang.language.tile_schedule",  # T.PersistentTileScheduler: one worker per SM by default
    "tilelang.language.PersistentTileScheduler", "tltyped.language.PersistentTileScheduler",
)
"""Library modules whose functions read the GPU a process runs on (its SM count, its memory): what code reads
through them differs between two GPUs of one architecture (an H100 SXM has 132 SMs, a PCIe one 114), which the
target in the key does not tell apart."""


def _on_device(dotted: str) -> str:
    """For a name in a module that queries the GPU, the GPU this process would read (else nothing)."""
    if not any(dotted == module or dotted.startswith(module + ".") for module in _DEVICE_QUERIES):
        return ""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return " on no CUDA device"
    return f" on {_device(torch.cuda.current_device())}"


@functools.cache
def _device(index: int) -> str:
    import torch

    properties = torch.cuda.get_device_properties(index)
    return (f"{properties.name} ({properties.multi_processor_count} SMs, sm_{properties.major}{properties.minor}, "
            f"{properties.total_memory} bytes)")


def _origin(path: str | None, module: str) -> str:
    """Where code comes from, as a key needs it: nothing for the standard library and tltyped, an installed
    package's version, else ` source <sha256>` of the file's content (as this process read it)."""
    if not path or path.startswith("<frozen"):  # builtin and frozen modules
        return ""
    if under(path, PACKAGE):
        return ""
    if under(path, *INSTALLED_DIRS):
        version = getattr(sys.modules.get(module.partition(".")[0]), "__version__", None)
        if isinstance(version, str):
            return f" version {version}"
    elif under(path, STDLIB_DIR):
        return ""
    return f" source {source_digest(path)}"


_digests: dict[str, tuple[list[str], str]] = {}  # path -> the lines last hashed (linecache's list), their digest


def source_digest(path: str) -> str:
    """sha256 of a user file's text as this process last read it: linecache's, which TileLang reads a body from
    when it rewrites it (`inspect.getsource`, which reads the file anew where it changed on disk: a kernel built
    while that happened is not kept under the digest read before, callpath/kernels.py)."""
    lines = linecache.getlines(path)
    if not lines:
        return "unreadable"
    known = _digests.get(path)
    if known is not None and known[0] is lines:
        return known[1]
    digest = hashlib.sha256("".join(lines).encode()).hexdigest()
    _digests[path] = (lines, digest)
    return digest


@functools.lru_cache(maxsize=4096)
def _instructions(code: types.CodeType) -> tuple[tuple[str, Any], ...]:
    """The code's own instructions (not those of the code nested in it), each as its name and argument value,
    disassembled once per code object (equal ones alike): disassembling was most of a fingerprint's time."""
    return tuple((instruction.opname, instruction.argval) for instruction in dis.get_instructions(code))


@functools.lru_cache(maxsize=4096)
def _loads(code: types.CodeType, names: frozenset[str]) -> tuple[tuple[str, ...], ...]:
    """The names the code (and the code nested in it) loads with one of the `names` instructions (globals, or
    closure cells), each with the attributes read off it at once: `cfg.BLOCK` is ("cfg", "BLOCK"), a bare
    `BLOCK` ("BLOCK",). Read once per code object (equal ones alike): every new specialisation reads a
    function's code again."""
    found: list[tuple[str, ...]] = []
    path: tuple[str, ...] = ()
    for opname, argval in _instructions(code):
        if opname in names:
            if path:
                found.append(path)
            path = (str(argval),)
        elif path and opname in _ATTRIBUTE_LOADS:
            path += (str(argval),)
        elif path:
            found.append(path)
            path = ()
    if path:
        found.append(path)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _loads(const, names)
    return tuple(found)


def _reaches_outside_state(code: types.CodeType) -> bool:
    """Whether the code reaches state no code names where the globals it loads do not show it: through one of
    os, sys, importlib and builtins imported in the function itself (`import sys; sys.modules[name]`), or
    through an attribute that reads it (`sys._getframe().f_globals`, `helper.__globals__`, `path.read_text()`)."""
    names = set(_names(code))
    imported = {module.partition(".")[0] for module, _ in _imports(code)}
    return bool(names & _READ_BY_NAME) or bool(imported & _STATE_MODULE_NAMES and names & _OUTSIDE_ATTRIBUTES)


def _names(code: types.CodeType) -> Iterator[str]:
    """The attribute and global names the code (and the code nested in it) uses."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


@functools.lru_cache(maxsize=4096)
def _imports(code: types.CodeType) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The imports in the code (and the code nested in it): each module as written (`.` for each level of a
    relative one) with the names taken from it (none for `import m`, or `from m import *`). Read once per code
    object, as `_loads`."""
    found: list[tuple[str, tuple[str, ...]]] = []
    instructions = _instructions(code)
    for i, (opname, argval) in enumerate(instructions):
        if opname == "IMPORT_NAME":
            level = instructions[i - 2][1] if i >= 2 and instructions[i - 2][0] == "LOAD_CONST" else 0
            names = []
            for following, name in instructions[i + 1:]:
                if following == "IMPORT_FROM":
                    names.append(str(name))
                elif following not in ("STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL"):
                    break
            found.append(("." * int(level or 0) + str(argval), tuple(names)))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _imports(const)
    return tuple(found)


def _read(value: object, attributes: tuple[str, ...]) -> object:
    """The value a global's attribute path reads, followed while it runs through the user's modules and classes
    (whose source file alone does not fix their attributes' values); library code stops it (named by version)."""
    for attribute in attributes:
        if any(value is module for module in _STATE_MODULES):
            found = getattr(value, attribute, None)
            if any(found is e for e in _OUTSIDE_STATE) or any(found is module for module in _STATE_MODULES):
                value = found  # `os.environ`, `sys.modules`: state outside the code, which has no text; `os.path`
                continue
        if isinstance(value, types.ModuleType) and _is_outside_module(value.__name__):
            return getattr(value, attribute, _MISSING)  # `time.time`, `random.random`: what the code reads
        if not (isinstance(value, (types.ModuleType, type)) and _is_user(value)):
            break
        try:
            value = getattr(value, attribute)
        except AttributeError:
            return _MISSING
    return value


def _attributes(owner: type | types.ModuleType) -> dict[str, object]:
    """What a user class's or module's source does not fix: its attributes' values (`Knobs.scale`, `cfg.SCALE`,
    set from the environment or later, which code may read as `cls.scale`, `getattr(cfg, name)` or `vars(cfg)`),
    and its functions (`__init__` too), read with the globals they load. Python's own (`__module__`,
    `_abc_impl`) are left out. An enum is its members, each by its value and the attributes it holds itself
    (`Mode.FAST.block`, set in its `__init__` or later), and its other attributes as any class's (a property or
    method a body calls on a member, with what it reads); `enum`'s own (`_member_map_`) are left out."""
    own = {name: value for name, value in vars(owner).items()
           if not (name.startswith("__") and name.endswith("__")) and not name.startswith("_abc_") or _written(value)}
    if not isinstance(owner, enum.EnumMeta):
        return own
    members: dict[str, enum.Enum] = dict(owner.__members__)
    others = {name: value for name, value in own.items()
              if name not in members and not (name.startswith("_") and name.endswith("_"))}
    return {**others, **{name: (member.value, _member_attributes(member)) if _member_attributes(member) else member.value
                         for name, member in members.items()}}


def _member_attributes(member: enum.Enum) -> dict[str, object]:
    """The attributes an enum member holds besides `enum`'s own (`_value_`, `_name_`, `__objclass__`)."""
    return {name: value for name, value in vars(member).items() if not (name.startswith("_") and name.endswith("_"))}


def _written(value: object) -> bool:
    """A function written by the user: a class's own `__init__` or `__call__`, in a file or in a notebook's cell,
    whose lines IPython puts in `linecache` under a name such as `<ipython-input-3-abc>` (not one `dataclass` or
    `namedtuple` generates, under `<string>`, whose source no one can read: its defaults hold sentinels with no
    text, and the class's fields fix it)."""
    if not isinstance(value, types.FunctionType):
        return False
    filename = value.__code__.co_filename
    return not filename.startswith("<") or bool(linecache.getlines(filename))


def _places_along(names: dict[str, Any], path: tuple[str, ...]) -> list[tuple[Any, str | None]]:
    """The places a path of names reads from, starting in `names`: each name, then the next one in the attributes
    of the user's module or object it holds (`_attributes_of`)."""
    places: list[tuple[Any, str | None]] = []
    for index, attribute in enumerate(path):
        places.append((names, attribute))
        inner = _attributes_of(names.get(attribute), path[index + 1] if index + 1 < len(path) else None)
        if inner is None:
            break
        names = inner
    return places


def _attributes_of(value: object, attribute: str | None = None) -> dict[str, Any] | None:
    """The dict a user's module, class or object keeps its attributes in, where setting one rebinds a name (a
    module's globals, a class's namespace, an instance's `__dict__`); None for anything else (a library's is not
    watched). For a class, that of the class in its MRO that holds `attribute` (the one read next): an attribute
    it inherits (`Knobs.INHERITED`) is set on the base class that defines it (`Base.INHERITED = 5`)."""
    if isinstance(value, types.ModuleType):
        return vars(value) if _is_user(value) else None
    if isinstance(value, type):
        owner = next((cls for cls in value.__mro__ if attribute in vars(cls)), value) if attribute else value
        return _namespace(owner) if _is_user(owner) else None
    return value.__dict__ if _is_users_object(value) else None


def _namespace(cls: type) -> dict[str, Any] | None:
    """The dict behind a class's read-only `__dict__` proxy (the proxy's one referent), which setting a class
    attribute (`Knobs.scale = 3`) rebinds a name in, and which the C guard can look up; None where it is not so."""
    inner = gc.get_referents(cls.__dict__)
    return inner[0] if len(inner) == 1 and type(inner[0]) is dict else None


def _is_users_object(value: object) -> bool:
    """An instance of a user's class whose attributes live in its own `__dict__` (a plain object, a dataclass
    instance): setting one (`cfg.block = 64`) rebinds a name in that dict, which the call's guard can watch."""
    return not isinstance(value, type) and _is_user(type(value)) and type(getattr(value, "__dict__", None)) is dict


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time (a class statement's), not one compiled into C


def _is_user(value: types.ModuleType | type) -> bool:
    """A module or class of the user's own code (not the standard library, tltyped or an installed package).

    Where no file says whose it is, it is the user's when it is code run from text: `__main__` with no file,
    an interactive session's (a notebook's, IPython's, a REPL's, `python -c`'s), whose classes are written in
    its cells, and a class statement's in code `exec`'d in a namespace with no `__name__`, which names
    `builtins` as its module (where it is not; `function` and `NoneType`, C's, are not). Read by name alone, as
    a library's are, a class a later cell or string defines again with other attributes or methods would be
    served the build of the first."""
    if isinstance(value, types.ModuleType):
        module: object = value
        name = value.__name__
    else:
        module, name = sys.modules.get(value.__module__), value.__module__
        if (module is builtins and value.__flags__ & _HEAP_TYPE
                and getattr(builtins, value.__qualname__, None) is not value):
            return True
    path = getattr(module, "__file__", None)
    return (name == "__main__" and path is None) or _origin(path, name).startswith(" source")


def _code_digest(code: types.CodeType, reader: Reader) -> str:
    digest = hashlib.sha256(code.co_code)
    for const in code.co_consts:
        digest.update(b"\0" + (_code_digest(const, reader) if isinstance(const, types.CodeType) else reader.text(const)).encode())
    digest.update("\0".join((*code.co_names, "|", *code.co_varnames, "|", *code.co_freevars)).encode())
    return digest.hexdigest()[:32]
