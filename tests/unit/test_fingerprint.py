"""A kernel is built from, and recorded under, the values its elaboration reads, never another kernel's.

Kernels made by one factory differ only in closure values; a kernel reading a
module constant differs between processes only in that constant. Each must
get its own kernel, in one process and across processes, and reuse a build
exactly when its values are equal. Here on CPU: the fingerprints, the record
keys, and real builds (`fn.compile`, nvcc) in this process and in fresh ones
sharing one cache; tests/gpu/test_factories.py runs the same kernels.
"""

import abc
import dataclasses
import enum
import functools
import gc
import json
import logging
import math
import os
import re
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.conftest import meta, needs_nvcc
from tests.kernels import factories, settings, shapes
from tests.unit.hostile import RaisingClass, RaisingEverything, RaisingRepr
from tltyped.frontend import fingerprint as fingerprint_module
from tltyped.frontend.fingerprint import Reader, _origin, fingerprint, is_users_code, stable_text
from tltyped.types.dtypes import DTypeName

ROOT = Path(__file__).resolve().parents[2]

add = lambda x, s: x + s  # noqa: E731  (the users' spelling)
mul = lambda x, s: x * s  # noqa: E731


def record_key(kernel: Any, *tensors: torch.Tensor) -> str | None:
    """The launch record a call with these tensors would use (None: not recorded)."""
    dispatcher = kernel._dispatcher
    spec, target = dispatcher.bind_for_inspection(tensors, {})
    return dispatcher.kernels.identity(spec, target).record


def vector(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return meta(256, dtype=dtype)


SIBLINGS = {
    "lambda": (factories.make_map(add, 1.0), factories.make_map(mul, 1.0)),
    "float": (factories.make_map(add, 1.0), factories.make_map(add, 2.0)),
    "negative zero": (factories.make_map(add, 0.0), factories.make_map(add, -0.0)),
    "thread count": (factories.make_map(add, 1.0, 128), factories.make_map(add, 1.0, 256)),
    "nested helper": (factories.make_shifted(1.0), factories.make_shifted(2.0)),
    "reducer": (factories.SUM, factories.PRODUCT),
    "decorator object": (factories.make_map(factories.Scaled(add, 2.0), 1.0),
                         factories.make_map(factories.Scaled(add, 3.0), 1.0)),
}


@pytest.mark.parametrize("kind", SIBLINGS)
def test_kernels_of_one_factory_with_other_values_are_other_kernels(kind: str) -> None:
    one, other = SIBLINGS[kind]
    tensors = (vector(),) if kind == "reducer" else (vector(), vector())
    assert fingerprint(one.__wrapped__).digest != fingerprint(other.__wrapped__).digest
    assert record_key(one, *tensors) != record_key(other, *tensors)
    assert record_key(one, *tensors) is not None


def test_a_dtype_from_the_factory_is_another_kernel() -> None:
    f32, f16 = factories.make_map(add, 1.0), factories.make_map(add, 1.0, dtype=tl.float16)
    assert fingerprint(f32.__wrapped__).digest != fingerprint(f16.__wrapped__).digest


def test_kernels_of_one_factory_with_equal_values_are_one_kernel() -> None:
    one, same = factories.make_map(add, 1.0, 128), factories.make_map(add, 1.0, 128)
    first, second = fingerprint(one.__wrapped__), fingerprint(same.__wrapped__)  # (their watched places are each
    assert one is not same and (first.digest, first.stable) == (second.digest, second.stable)  # function's own)
    assert record_key(one, vector(), vector()) == record_key(same, vector(), vector())


@pytest.mark.parametrize("owner, name, value", [
    (factories.settings, "SCALE", 3.0), (factories.Knobs, "shift", 0.25), (factories.settings, "OFFSET", 2.0),
])
def test_values_read_off_a_users_module_or_class_are_read_by_value(owner: Any, name: str, value: float,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`settings.SCALE`, `Knobs.shift`, and `settings.OFFSET` read by the helper `settings.shifted`: a module's
    or class's source does not fix them (a constant from the environment, an attribute set later)."""
    kernel = factories.scaled_by_settings
    before, key = fingerprint(kernel.__wrapped__), record_key(kernel, vector(), vector())
    monkeypatch.setattr(owner, name, value)
    assert fingerprint(kernel.__wrapped__).digest != before.digest
    assert record_key(kernel, vector(), vector()) not in (key, None)
    monkeypatch.undo()
    assert fingerprint(kernel.__wrapped__) == before and before.stable


@pytest.mark.parametrize("kernel, owner, name", [
    (factories.shifted_through_a_classmethod, factories.Knobs, "shift"),
    (factories.shifted_through_getattr, factories.Knobs, "shift"),
    (factories.scaled_through_a_module_default, settings, "SCALE"),
    (factories.scaled_through_vars_of_a_module, settings, "SCALE"),
], ids=["cls.shift in a classmethod", "getattr(Knobs, 'shift')", "a module as a default", "vars(settings)"])
def test_a_users_class_or_module_is_read_with_its_attributes_however_the_code_reads_them(
        kernel: Any, owner: Any, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before, key = fingerprint(kernel.__wrapped__), record_key(kernel, vector(), vector())
    monkeypatch.setattr(owner, name, 0.25)
    assert fingerprint(kernel.__wrapped__).digest != before.digest
    assert record_key(kernel, vector(), vector()) not in (key, None)
    monkeypatch.undo()
    assert fingerprint(kernel.__wrapped__) == before and before.stable


@pytest.mark.parametrize("value", [settings.Tile(), settings.Shift.ONE], ids=["a named tuple's property",
                                                                           "an enum member's property"])
def test_what_a_value_s_class_reads_for_it_is_read_by_value(value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The body reads `value.shift`, a property of the value's class (in another module) reading settings.OFFSET:
    neither the value's items nor the kernel's file fix it, so the class is read with what its code reads."""
    kernel = factories.make_map(lambda x, v: x + v.shift, value)
    before, key = fingerprint(kernel.__wrapped__), record_key(kernel, vector(), vector())
    assert before.stable and key is not None
    monkeypatch.setattr(settings, "OFFSET", 2.0)
    assert fingerprint(kernel.__wrapped__).digest != before.digest
    assert record_key(kernel, vector(), vector()) not in (key, None)


LOG = logging.getLogger("tests.kernels")


class Methods:
    x = 1
    pattern = re.compile(r"\d+")
    lock = threading.Lock()
    device = torch.device("cuda", 0)

    def __init__(self) -> None:
        self.y = Methods.x

    def logged(self): LOG.info("logged")

    def method(self): return self.x
    @classmethod
    def of_class(cls): return cls.x
    @staticmethod
    def static(): return 2
    @property
    def prop(self): return 3
    @functools.cached_property
    def cached(self): return 4


class Abstract(abc.ABC):
    @abc.abstractmethod
    def f(self) -> int: ...


class Colour(enum.Enum):
    RED = 1


class Pair(NamedTuple):
    a: int
    b: float = 2.0


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: int = 1


class Slotted:
    __slots__ = ("a",)


class Readable(Protocol):
    def f(self) -> int: ...


class Box(Generic[TypeVar("V")]):
    size = 3


def test_an_enum_member_s_own_attributes_are_read_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """An attribute a member holds itself (set in the enum's `__init__`, or later) is no value its class's source
    fixes."""
    texts = [stable_text(settings.Shift.ONE)]
    for block in (64, 128):
        monkeypatch.setattr(settings.Shift.ONE, "block", block, raising=False)
        texts.append(stable_text(settings.Shift.ONE))
    assert None not in texts and len(set(texts)) == 3


@dataclasses.dataclass
class Derived:
    block: int = 64
    factor: dataclasses.InitVar[float] = 1.0

    def __post_init__(self, factor: float) -> None:
        self.scale = factor * 2

    @functools.cached_property
    def threads(self) -> int:
        return self.block * 2


def test_a_dataclass_instance_s_attributes_besides_its_fields_are_read_by_value() -> None:
    """`scale`, set from an InitVar (which no field keeps), or an attribute set later: equal fields, other values."""
    texts = [stable_text(Derived(64, 1.0)), stable_text(Derived(64, 2.0))]
    later = Derived(64, 1.0)
    later.extra = 3  # type: ignore[attr-defined]
    texts.append(stable_text(later))
    assert None not in texts and len(set(texts)) == 3
    read = Derived(64, 1.0)
    assert read.threads == 128 and stable_text(read) == texts[0]  # a cached property's value: what the fields fix
    assert stable_text(Frozen()) == stable_text(Frozen())


def test_classes_of_every_kind_have_a_stable_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Methods of each kind, slots, enums, dataclasses, NamedTuples, protocols, generics, ABCs: read by value,
    none by identity (which would keep their kernels off the disk); an attribute's value is part of the text."""
    for cls in (Methods, Abstract, Colour, Pair, Frozen, Slotted, Readable, Box):
        assert stable_text(cls) is not None, cls
    before = stable_text(Methods)
    monkeypatch.setattr(Methods, "x", 2)
    assert stable_text(Methods) not in (before, None)


def test_a_users_module_read_whole_has_a_stable_text() -> None:
    """With `from __future__ import annotations`, its kernels (a jit function's generated call is read by what it
    wraps), the library modules it imports, and a module many others import read once."""
    import examples.gemm

    for module in (examples.gemm, shapes):
        assert stable_text(module) is not None, module
    assert stable_text(shapes.asserted_then_allocates) is not None  # its call is generated Python, not C
    text = Reader().text(factories)
    assert text.count("module:tests.kernels.settings source") == 1


def test_a_users_init_is_read_with_the_globals_it_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    before = stable_text(Methods)
    monkeypatch.setattr(Methods.__init__, "__defaults__", None)  # unchanged: the same text
    assert stable_text(Methods) == before
    monkeypatch.setitem(globals(), "LOG", logging.getLogger("another"))
    assert stable_text(Methods) not in (before, None)


@pytest.mark.parametrize("kernel, owner, name, value", [
    (factories.make_configured(factories.Knobs), factories.Knobs, "shift", 0.25),
    (factories.make_configured(settings), settings, "shift", 0.25),
    (factories.imports_in_body, settings, "SCALE", 3.0),
], ids=["class in a closure cell", "module in a closure cell", "imported in the body"])
def test_values_read_through_a_closure_or_an_import_in_the_body_are_read_by_value(
        kernel: Any, owner: Any, name: str, value: float, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(owner, name, 0.5, raising=False)
    before, key = fingerprint(kernel.__wrapped__), record_key(kernel, vector(), vector())
    monkeypatch.setattr(owner, name, value)
    assert fingerprint(kernel.__wrapped__).digest != before.digest
    assert record_key(kernel, vector(), vector()) not in (key, None)
    assert before.stable


@pytest.mark.parametrize("kernel", [factories.one_block_per_sm, factories.one_block_per_sm_imported,
                                    factories.scheduled_per_sm],
                         ids=["torch.cuda.get_device_properties", "imported by name", "T.PersistentTileScheduler"])
def test_a_kernel_querying_the_gpu_is_recorded_per_gpu(kernel: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its grid is the SM count of the GPU it is built on: two GPUs of one architecture (an H100 SXM, 132 SMs; a
    PCIe one, 114) get two records, and one GPU finds its own again."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    keys = {}
    for gpu in ("NVIDIA H100 80GB HBM3 (132 SMs)", "NVIDIA H100 PCIe (114 SMs)", "NVIDIA H100 80GB HBM3 (132 SMs)"):
        monkeypatch.setattr(fingerprint_module, "_device", lambda index, gpu=gpu: gpu)
        keys.setdefault(gpu, set()).add(record_key(kernel, vector(), vector()))
    assert all(len(found) == 1 and None not in found for found in keys.values())
    assert len(set.union(*keys.values())) == 2


def test_a_kernel_reading_the_environment_in_its_body_is_never_recorded() -> None:
    """`os.environ` may differ between processes (a module constant read from it is read by value instead)."""
    assert not fingerprint(factories.reads_the_environment.__wrapped__).stable
    assert record_key(factories.reads_the_environment, vector(), vector()) is None


@pytest.mark.parametrize("kernel", [factories.imports_a_module_whole, factories.imports_a_module_by_its_path],
                         ids=["from package import module", "import package.module"])
def test_a_users_module_imported_whole_in_the_body_is_read_by_value(kernel: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The body reads its attributes by names the import does not give: the module is read with all of them."""
    before, key = fingerprint(kernel.__wrapped__), record_key(kernel, vector(), vector())
    assert before.stable and key is not None
    monkeypatch.setattr(settings, "SCALE", 3.0)
    assert fingerprint(kernel.__wrapped__).digest != before.digest
    assert record_key(kernel, vector(), vector()) not in (key, None)


def test_a_kernel_calling_getenv_in_its_body_is_never_recorded() -> None:
    """`os.getenv` reads the process environment, which has no text."""
    assert not fingerprint(factories.reads_getenv.__wrapped__).stable
    assert record_key(factories.reads_getenv, vector(), vector()) is None


@pytest.mark.parametrize("read", [factories.offset_by_name, factories.offset_through_the_module_table,
                                  factories.offset_through_importlib, factories.offset_from_a_file,
                                  factories.offset_from_a_path, factories.offset_through_os_read,
                                  factories.offset_from_a_path_opened, factories.offset_through_io_open,
                                  factories.offset_through_codecs, factories.offset_through_fdopen,
                                  factories.offset_from_a_process, factories.offset_from_a_file_s_size,
                                  factories.offset_at_random, factories.offset_from_the_clock,
                                  factories.offset_from_a_listing, factories.offset_from_a_process_s_output,
                                  factories.offset_from_the_date,
                                  factories.offset_from_a_string, factories.offset_through_its_own_import,
                                  factories.offset_through_a_frame, factories.offset_from_a_path_s_bytes,
                                  factories.offset_from_a_folder, factories.offset_through_exec,
                                  factories.offset_through_a_function_s_globals, factories.offset_from_the_process_id,
                                  factories.offset_from_the_cpu_count, factories.offset_from_the_disk,
                                  factories.offset_from_a_temporary_folder, factories.offset_from_the_host_name,
                                  factories.offset_from_a_uuid, factories.offset_from_the_machine,
                                  factories.offset_from_the_user], ids=lambda read: read.__name__)
def test_a_kernel_reading_what_no_code_names_is_never_recorded(read: Any) -> None:
    """A global by its name as a string, a module looked up at run time, a file, code in a string: the value read
    is in no code the fingerprint reads, so no record may stand for it. The control reads OFFSET by name."""
    control = factories.make_map(lambda a, scale: a * scale + factories.offset(), 1.0)
    assert fingerprint(control.__wrapped__).stable and record_key(control, vector(), vector()) is not None
    kernel = factories.make_map(lambda a, scale: a * scale + read(), 1.0)
    assert not fingerprint(kernel.__wrapped__).stable
    assert record_key(kernel, vector(), vector()) is None


def test_a_value_without_a_stable_text_is_never_recorded() -> None:
    kernel = factories.make_opaque(factories.Opaque(2.0))
    assert not fingerprint(kernel.__wrapped__).stable
    assert record_key(kernel, vector(), vector()) is None
    assert stable_text(factories.Opaque(2.0)) is None and stable_text((1, factories.Opaque(2.0))) is None


def test_a_tuning_winner_is_remembered_for_exactly_the_values_it_was_searched_with() -> None:
    """The winner of a search is remembered under the kernel's whole identity: the function's values read now
    (a rebound class attribute is another kernel, searched anew), the GPU, and a const with no stable text by that
    very object, held alive so that no other object takes its identity (an equal-looking one is not it)."""
    dispatcher = factories.scaled_by_settings._dispatcher
    table = dispatcher.kernels
    spec, target = dispatcher.bind_for_inspection((vector(), vector()), {})
    opaque = factories.Opaque(2.0)
    spec = dataclasses.replace(spec, consts={**spec.consts, "config": opaque})
    configs: list[dict[str, Any]] = [{"block": 64}, {"block": 128}]
    result = {"candidates": [{"config": {"block": "64"}, "ms": 2.0, "error": None},
                             {"config": {"block": "128"}, "ms": 1.0, "error": None}], "winner": 1}
    assert table.chosen(spec, target, "H100", configs) is None
    assert table.choose(spec, target, "H100", configs, result) == {"block": 128}
    assert table.chosen(spec, target, "H100", configs) == {"block": 128}
    assert table.chosen(spec, target, "H200", configs) is None
    lookalike = dataclasses.replace(spec, consts={**spec.consts, "config": factories.Opaque(2.0)})
    assert table.chosen(lookalike, target, "H100", configs) is None
    held = weakref.ref(opaque)
    del opaque, spec
    gc.collect()
    assert held() is not None
    spec = dataclasses.replace(lookalike, consts={**lookalike.consts, "config": held()})
    assert table.chosen(spec, target, "H100", configs) == {"block": 128}
    original = factories.Knobs.shift
    try:
        factories.Knobs.shift = original + 1.0
        assert table.chosen(spec, target, "H100", configs) is None
    finally:
        factories.Knobs.shift = original
    assert table.chosen(spec, target, "H100", configs) == {"block": 128}


def test_value_texts_tell_apart_what_compiles_differently() -> None:
    values = [2, 2.0, True, 1, "2", (2,), (2.0,), None, 0.0, -0.0, float("inf"), math.nan, -math.nan, [2], frozenset({2}),
              tl.float16, tl.float32, add, mul, factories.make_map, torch.float16, "float16", "half", "float", "float32",
              torch.float32, T.float16, T.float32]
    texts = [stable_text(v) for v in values]
    assert None not in texts and len(set(texts)) == len(texts)


def test_a_dtype_named_before_tilelang_is_imported_is_tilelang_s_dtype() -> None:
    """`tltyped.language` hands out `DTypeName`s until TileLang is imported, and elaboration makes them TileLang's
    dtype objects: one value, one text, so a kernel keeps its key (in memory and on disk) across that moment."""
    import tilelang.language as TL

    assert stable_text(DTypeName("float16")) == stable_text(TL.float16) == stable_text(T.float16)
    assert stable_text(DTypeName("float16")) != stable_text("float16")


def test_each_spelling_of_a_dtype_is_its_own_kernel() -> None:
    """A body may branch on how a dtype is spelled (`dtype == "float16"` is false for `torch.float16`, `acc ==
    "float"` for `"float32"`): a closure or a const of another spelling is another kernel, in memory and on disk."""
    as_str, as_torch = factories.make_by_spelling("float16"), factories.make_by_spelling(torch.float16)
    assert record_key(as_str, vector(), vector()) != record_key(as_torch, vector(), vector())
    dispatcher = as_str._dispatcher
    keys = set()
    for acc in ("float", "float32", torch.float32, T.float32):
        spec, target = dispatcher.bind_for_inspection((vector(), vector()), {"acc": acc})
        identity = dispatcher.kernels.identity(spec, target)
        keys.add((identity.memory, identity.record))
    assert len(keys) == 4
    assert as_str.lower(vector(), vector()).cuda_source != as_torch.lower(vector(), vector()).cuda_source


@pytest.mark.parametrize("hostile", [RaisingClass, RaisingRepr, RaisingEverything], ids=lambda c: c.__name__)
def test_a_value_that_raises_when_read_has_no_stable_text(hostile: type) -> None:
    """A const whose `__class__`, `repr` or every attribute raises is read without raising: it has no stable
    text, so no kernel built from it is reused; inside a tuple as well."""
    value = hostile()
    assert stable_text(value) is None and stable_text((1, value)) is None
    assert stable_text((1, 2)) is not None


def test_an_int_too_long_for_str_has_a_text() -> None:
    """A const of 10**5000 is past the digits `repr` prints; it still keys its kernel, apart from its neighbour,
    and so at the lowest limit Python allows."""
    if not hasattr(sys, "set_int_max_str_digits"):
        pytest.skip("this Python prints ints of any length")
    limit = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(640)
        assert len({stable_text(10**5000), stable_text(10**5000 + 1), stable_text(2**4096), stable_text(10**639)}) == 4
    finally:
        sys.set_int_max_str_digits(limit)


def test_fingerprints_are_the_same_in_every_process() -> None:
    """Whatever the process's hash seed (which orders sets and dicts), a kernel made from the same source and
    values has the same fingerprint: a disk record of one process is found by the next."""
    probe = "from tests.kernels import factories as f; from tltyped.frontend.fingerprint import fingerprint as p; " \
            "print(p(f.SUM.__wrapped__).digest, p(f.make_map(lambda x, s: x * s, 3.0).__wrapped__).digest)"
    digests = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout.split() for seed in ("1", "2")]
    assert digests[0] == digests[1] and digests[0][0] == fingerprint(factories.SUM.__wrapped__).digest


def test_the_fast_path_keys_negative_zero_apart() -> None:
    @tl.jit
    def scaled(A: tl.Tensor[tl.float32, 8], factor: float = 1.0) -> None:
        pass

    key = scaled._dispatcher.key
    assert key(vector()[:8], 0.0) != key(vector()[:8], -0.0)
    assert key(vector()[:8], 0.0) == key(vector()[:8], 0.0)


# -- builds ------------------------------------------------------------------------------


@needs_nvcc
def test_factory_kernels_are_built_from_their_own_values_in_one_process(sm90: str) -> None:
    plus = factories.make_map(add, 1.0).compile(vector(), vector())
    times = factories.make_map(mul, 3.0)
    built = times.compile(vector(), vector())
    assert times.cache_info().disk_hits == 0 and times.cache_info().compiles == 1
    assert "0x1.8p+1f" in built.cuda_source and "0x1.8p+1f" not in plus.cuda_source  # 3.0: the second's own scale
    same = factories.make_map(add, 1.0)
    assert same.compile(vector(), vector()).folder == plus.folder and same.cache_info().disk_hits == 1


@needs_nvcc
def test_a_global_rebound_after_a_build_is_read_by_the_next_build(sm90: str, monkeypatch: pytest.MonkeyPatch) -> None:
    first = factories.add_offset.compile(vector(), vector())
    monkeypatch.setattr(factories, "OFFSET", 2.0)
    second = factories.add_offset.compile(vector(), vector())
    assert "0x1p+0f" in first.cuda_source and "0x1p+1f" in second.cuda_source  # 1.0, then 2.0
    monkeypatch.setattr(factories, "OFFSET", 1.0)
    assert factories.add_offset.compile(vector(), vector()).folder == first.folder


def test_the_places_a_body_reads_values_from_are_watched_and_a_rebinding_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a call checks instead of reading the values: each global (through helpers too), user module attribute
    and closure cell, with the object it held; modules themselves are not watched."""
    places = {(w.name, w.value) for w in fingerprint(factories.scaled_by_settings).watched}
    assert {("SCALE", settings.SCALE), ("OFFSET", settings.OFFSET), ("Knobs", factories.Knobs)} <= places, places
    assert not any(isinstance(value, type(settings)) for _, value in places)
    kernel, rebind = factories.make_rebindable(2.0)
    for fn, change in ((factories.scaled_by_settings, lambda: monkeypatch.setattr(settings, "OFFSET", 5.0)),
                       (factories.add_offset, lambda: monkeypatch.setattr(factories, "OFFSET", 1.0 + 1.0)),
                       (kernel, lambda: rebind(3.0))):
        watched = fingerprint(fn).watched
        assert fingerprint_module.unchanged(watched)
        change()
        assert not fingerprint_module.unchanged(watched)


def test_an_attribute_read_down_a_path_of_user_modules_is_watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pkg.cfg.BLOCK`, with `import pkg.cfg`: the place watched is the last module's `BLOCK`, so that setting it
    (`pkg.cfg.BLOCK = 8` in a notebook cell) is seen by the next call, as `cfg.BLOCK` is."""
    (tmp_path / "watched_pkg").mkdir()
    (tmp_path / "watched_pkg" / "__init__.py").write_text("")
    (tmp_path / "watched_pkg" / "cfg.py").write_text("BLOCK = 4\n")
    (tmp_path / "watched_user.py").write_text("import watched_pkg.cfg\n\ndef body():\n    return watched_pkg.cfg.BLOCK\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import watched_pkg.cfg  # type: ignore[import-not-found]
    import watched_user  # type: ignore[import-not-found]

    watched = fingerprint(watched_user.body).watched
    assert any(w.namespace is vars(watched_pkg.cfg) and w.name == "BLOCK" and w.value == 4 for w in watched), watched
    monkeypatch.setattr(watched_pkg.cfg, "BLOCK", 8)
    assert not fingerprint_module.unchanged(watched)


def test_a_class_attribute_read_through_a_global_is_watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`Knobs.SCALE`, a user's class's attribute: the place watched is the class's namespace (the dict behind its
    read-only `__dict__`), so that setting it (`Knobs.SCALE = 3.0`) is seen by the next call, and the class's
    text (the kernel's key) changes with it. An attribute the class inherits is watched where it is defined."""
    (tmp_path / "watched_knobs.py").write_text(
        "class Base:\n    INHERITED = 1\n\nclass Knobs(Base):\n    SCALE = 2.0\n\n"
        "def body():\n    return Knobs.SCALE * Knobs.INHERITED\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import watched_knobs  # type: ignore[import-not-found]

    before = fingerprint(watched_knobs.body)
    knobs = [w for w in before.watched if w.name in ("SCALE", "INHERITED")]
    assert [(w.name, w.value) for w in knobs] == [("INHERITED", 1), ("SCALE", 2.0)]
    assert "SCALE" in knobs[1].namespace and knobs[1].namespace is not watched_knobs.Knobs.__dict__
    watched_knobs.Knobs.SCALE = 3.0
    assert not fingerprint_module.unchanged(before.watched)
    assert fingerprint(watched_knobs.body).digest != before.digest
    watched_knobs.Knobs.SCALE = 2.0
    assert fingerprint(watched_knobs.body).digest == before.digest


def test_a_class_attribute_read_through_a_subclass_is_watched_where_it_is_defined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`Knobs.INHERITED`, defined on a base class: the place watched is the namespace of the class that holds it,
    through a global or a closure, so that setting it there (`Base.INHERITED = 5`) is seen by the next call."""
    (tmp_path / "watched_bases.py").write_text(
        "class Base:\n    INHERITED = 1\n\nclass Knobs(Base):\n    SCALE = 2.0\n\n"
        "def body():\n    return Knobs.SCALE * Knobs.INHERITED\n\n"
        "def make():\n    knobs = Knobs\n    def inner():\n        return knobs.INHERITED\n    return inner\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import watched_bases  # type: ignore[import-not-found]

    for fn in (watched_bases.body, watched_bases.make()):
        before = fingerprint(fn)
        assert [(w.name, w.value) for w in before.watched if w.name == "INHERITED"] == [("INHERITED", 1)]
        watched_bases.Base.INHERITED = 5
        assert not fingerprint_module.unchanged(before.watched)
        watched_bases.Base.INHERITED = 1


def test_a_users_object_changed_in_place_is_another_kernel_and_its_attribute_is_watched() -> None:
    """An object of a user's class, read by identity, is read with its attributes too: setting `config.factor`
    changes the fingerprint (the kernel in memory is another), and the attribute the body reads through the
    closure is a watched place, so the next call reads the values again."""
    config = factories.Opaque(2.0)
    kernel = factories.make_opaque(config)
    before = fingerprint(kernel.__wrapped__)
    assert not before.stable and config in before.held
    assert any(w.namespace is vars(config) and w.name == "factor" and w.value == 2.0 for w in before.watched)
    config.factor = 3.0
    assert not fingerprint_module.unchanged(before.watched)
    assert fingerprint(kernel.__wrapped__).digest != before.digest
    config.factor = 2.0
    assert fingerprint(kernel.__wrapped__).digest == before.digest


def test_a_rebound_global_empties_the_launches_calls_were_served_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """The slow path a rebinding sends a call to forgets every launch (their kernels were built from the old value),
    so that each key's next call takes the kernel of the values as they are."""
    kernel, dispatcher = factories.add_offset, factories.add_offset._dispatcher
    a, b = torch.randn(8), torch.empty(8)
    dispatcher.load_helpers()
    dispatcher.launches[dispatcher.key(a, b)] = lambda *args: "launched"  # CPU tensors: a hand-filled entry
    dispatcher.watched = fingerprint(dispatcher.fn).watched
    dispatcher.watched_texts = fingerprint_module.watched_texts(dispatcher.watched)
    dispatcher.fast_path.guard_with(dispatcher.watched)
    try:
        assert kernel(a, b) == "launched"
        monkeypatch.setattr(factories, "OFFSET", 2.0)
        with pytest.raises(tl.ArgumentValueError, match="on cpu"):  # the slow path's word on CPU tensors
            kernel(a, b)
        assert dispatcher.launches == {} and dispatcher.watched == ()
    finally:
        dispatcher.forget_launches()


def test_a_default_naming_the_factorys_argument_builds(sm90: str) -> None:
    """`block=threads` in a factory: the default is the factory's value, and a call may still pass its own."""
    kernel = factories.make_blocked_copy(64)
    assert kernel.signature.param("block").default == 64
    assert "__launch_bounds__(64" in kernel.lower(vector(), vector()).cuda_source
    assert "__launch_bounds__(256" in kernel.lower(vector(), vector(), 256).cuda_source


def test_a_closure_cell_rebound_after_a_build_is_read_by_the_next_build(sm90: str) -> None:
    """TileLang's rewrite of the body binds the cells' values; it is made again when a cell is rebound, so a build
    uses the value its record is keyed on (a stale rewrite would store 2.0's kernel under 6.0's key)."""
    kernel, rebind = factories.make_rebindable(2.0)
    first, first_key = kernel.lower(vector(), vector()), record_key(kernel, vector(), vector())
    rebind(6.0)
    second, second_key = kernel.lower(vector(), vector()), record_key(kernel, vector(), vector())
    assert "0x1p+1f" in first.cuda_source and "0x1.8p+2f" in second.cuda_source  # 2.0, then 6.0
    assert first_key != second_key


EDITED = """
import tltyped as tl
import tltyped.language as T

@tl.jit
def scaled(A, B):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * 2.0
"""


def test_a_kernel_whose_file_is_edited_after_import_is_not_kept_under_the_text_imported(
        sm90: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TileLang parses the body from its file as it is on disk when it first builds it: edited since the process
    read it (`* 3.0` for `* 2.0`), the kernel built is the edited text's. Recorded under the key of the text read
    at import, a process running the file as it was would load it; it is this call's only, and the next build,
    keyed by the text read now, is recorded."""
    from tltyped.backend import compiler, records
    from tltyped.backend.kernel import CompiledKernel

    built: list[str] = []

    def lowered_only(lowered: Any, signature: Any) -> CompiledKernel:  # nvcc's part is not under test here
        built.append(lowered.cuda_source)
        return CompiledKernel(launch=print, outputs=(), returns=(), written=(), folder=tmp_path / "unbuilt", compiled=True)

    monkeypatch.setattr(compiler, "compile_kernel", lowered_only)
    module = tmp_path / "edited_kernel.py"
    module.write_text(EDITED)
    monkeypatch.syspath_prepend(str(tmp_path))
    import edited_kernel  # type: ignore[import-not-found]

    monkeypatch.delitem(sys.modules, "edited_kernel")
    table = edited_kernel.scaled._dispatcher.kernels
    spec, target = edited_kernel.scaled._dispatcher.bind_for_inspection((vector(), vector()), {})
    imported = table.identity(spec, target).record
    module.write_text(EDITED.replace("* 2.0", "* 3.0"))
    os.utime(module, (os.path.getmtime(module) + 10,) * 2)  # the same size: told apart by its time
    table.load_or_build(spec, target)
    assert "0x1.8p+1f" in built[-1]  # 3.0: the file as it is now
    assert records.read(records.LaunchRecord, imported) is None  # not under the text read at import
    now = table.identity(spec, target).record
    assert now not in (imported, None)
    table.load_or_build(spec, target)
    assert "0x1.8p+1f" in built[-1] and records.read(records.LaunchRecord, now) is not None


# -- across processes sharing one cache ---------------------------------------------------

PROBE = """
import json, sys, torch
import user_kernels
out = []
for expression in sys.argv[1:]:
    kernel = eval(expression, vars(user_kernels))
    built = kernel.compile(*(torch.empty(256, device="meta") for _ in kernel.signature.tensors))
    out.append({"info": kernel.cache_info()._asdict(), "nvcc": built.compiled, "cuda": built.cuda_source})
print(json.dumps(out))
"""

USER_KERNELS = '''
import os
import tltyped as tl
import tltyped.language as T
from user_helpers import combine
from tests.kernels.factories import make_map, make_opaque, Opaque, add_block, scaled_by_settings

def plus(x, s):
    return x + s

def times(x, s):
    return x * s

@tl.jit
def combined(A, B):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = combine(A[i], 3.0)
'''


class Project:
    """A user's kernel modules and a private cache; each `run` is a new process."""

    def __init__(self, where: Path) -> None:
        self.where = where
        (where / "user_kernels.py").write_text(USER_KERNELS)
        self.helper("a + b")

    def helper(self, expression: str) -> None:
        (self.where / "user_helpers.py").write_text(f"def combine(a, b):\n    return {expression}\n")

    def run(self, *kernels: str, **env: str) -> list[dict[str, Any]]:
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.where), str(ROOT)]),
                       "TLTYPED_CACHE_DIR": str(self.where / "cache"), "TLTYPED_TARGET": "sm_90a", **env}
        run = subprocess.run([sys.executable, "-c", PROBE, *kernels], capture_output=True, text=True, env=environment,
                             cwd=self.where, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        result: list[dict[str, Any]] = json.loads(run.stdout.strip().splitlines()[-1])
        return result

    def records(self) -> int:
        folder = self.where / "cache" / "modules"
        return sum(1 for p in folder.glob("*.json") if json.loads(p.read_text()).get("kind") == "launch")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return Project(tmp_path_factory.mktemp("factories"))


def built_fresh(result: dict[str, Any]) -> bool:
    return bool(result["info"]["compiles"] == 1 and result["info"]["disk_hits"] == 0)


def loaded(result: dict[str, Any]) -> bool:
    return bool(result["info"]["compiles"] == 0 and result["info"]["disk_hits"] == 1)


@needs_nvcc
def test_factory_kernels_across_processes(project: Project) -> None:
    (first,) = project.run("make_map(plus, 1.0)")
    assert built_fresh(first)
    times, other_scale, same = project.run("make_map(times, 3.0)", "make_map(plus, 2.0)", "make_map(plus, 1.0)")
    assert built_fresh(times) and "0x1.8p+1f" in times["cuda"]  # its own op and scale, not the first kernel's
    assert built_fresh(other_scale) and "0x1p+1f" in other_scale["cuda"]
    assert loaded(same) and same["cuda"] == first["cuda"]  # equal values: the first process's record


@needs_nvcc
def test_an_environment_constant_differing_between_processes(project: Project) -> None:
    (block_32,) = project.run("add_block", TLTYPED_TEST_BLOCK="32")
    (block_64,) = project.run("add_block", TLTYPED_TEST_BLOCK="64")
    (again,) = project.run("add_block", TLTYPED_TEST_BLOCK="32")
    assert built_fresh(block_32) and built_fresh(block_64) and loaded(again)
    assert "0x1p+5f" in block_32["cuda"] and "0x1p+6f" in block_64["cuda"]  # 32.0 and 64.0


@needs_nvcc
def test_a_module_attribute_differing_between_processes(project: Project) -> None:
    """`settings.SCALE`, read from the environment: the module's source is the same in both processes."""
    (scale_2,) = project.run("scaled_by_settings", TLTYPED_TEST_SCALE="2.0")
    (scale_3,) = project.run("scaled_by_settings", TLTYPED_TEST_SCALE="3.0")
    (again,) = project.run("scaled_by_settings", TLTYPED_TEST_SCALE="2.0")
    assert built_fresh(scale_2) and built_fresh(scale_3) and loaded(again)
    assert "0x1p+1f" in scale_2["cuda"] and "0x1.8p+1f" in scale_3["cuda"]  # 2.0 and 3.0


@needs_nvcc
def test_an_imported_helper_edited_between_processes(project: Project) -> None:
    (before,) = project.run("combined")
    (unchanged,) = project.run("combined")
    assert loaded(unchanged)  # the control: nothing edited, the record is used
    project.helper("a * b")
    (after,) = project.run("combined")
    assert built_fresh(after) and after["cuda"] != before["cuda"]


@needs_nvcc
def test_a_kernel_reading_an_opaque_value_is_elaborated_in_each_process(project: Project) -> None:
    records = project.records()
    (first,) = project.run("make_opaque(Opaque(2.0))")
    (second,) = project.run("make_opaque(Opaque(2.0))")
    assert built_fresh(first) and built_fresh(second) and project.records() == records  # never recorded
    assert second["nvcc"] is False  # ... but its CUDA is the same, so its build is found by content



def test_a_users_file_beside_the_package_is_the_users_code() -> None:
    """`tltyped_kernels.py` (or `tltyped-notes/`) next to a source checkout's `tltyped/` shares its path's
    prefix, not its folder: its code is read by source and values, not named as tltyped's own."""
    package = Path(tl.__file__).resolve().parent
    for beside in (f"{package}_kernels.py", f"{package}-notes/kernel.py"):
        assert is_users_code(beside, "tltyped_kernels")
        assert _origin(beside, "tltyped_kernels").startswith(" source")
    assert not is_users_code(str(package / "jit_function.py"), "tltyped.jit_function")
