"""Code swapped in place, as IPython's `%autoreload` and other hot patchers do: the new `__code__` (and
`__defaults__`) assigned to the old function object, which every name of it still holds. A call served from
memory must not be served again once a function the elaboration read was given new code: the helper a body
calls, the jit function itself, a `T.macro`'s function, a lazy-style factory. Here on CPU: the guard the call
checks, and the TIR the next elaboration builds; tests/gpu/test_factories.py runs the kernels.
"""

import functools
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tltyped as tl
from tests.conftest import meta
from tests.kernels.swapped_code import SOURCE
from tltyped.callpath import tensors
from tltyped.frontend import fingerprint as fingerprint_module
from tltyped.frontend.fingerprint import fingerprint

_loaded = 0


@pytest.fixture
def users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """A fresh import of SOURCE (a module of its own per test: each swaps code in it)."""
    global _loaded
    _loaded += 1
    name = f"swapped_users_{_loaded}"
    (tmp_path / f"{name}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__(name)
    yield sys.modules[name]
    sys.modules.pop(name, None)


def swap(old: Any, new: Any) -> None:
    """What IPython's autoreload does to a function it reloads (`update_function`): the new one's attributes set on
    the old object, which every global, closure and import of it still names."""
    for name in ("__code__", "__defaults__", "__doc__", "__closure__", "__globals__", "__dict__"):
        try:
            setattr(old, name, getattr(new, name))
        except (AttributeError, TypeError, ValueError):
            pass


def vector() -> torch.Tensor:
    return meta(256, dtype=torch.float32)


def tir(kernel: Any) -> str:
    return str(kernel.get_tir(vector(), vector()))


def guard_sees(kernel: Any, change: Any) -> None:
    """The call's guard, in Python and in C, holds before `change` and not after it; and the call served from
    memory before is sent to the slow path after it (a hand-filled launch: CPU tensors)."""
    dispatcher = kernel._dispatcher
    a, b = torch.randn(8), torch.empty(8)
    dispatcher.load_helpers()
    dispatcher.launches[dispatcher.key(a, b)] = lambda *args: "launched"
    dispatcher.watched = fingerprint(dispatcher.fn).watched
    dispatcher.watched_texts = fingerprint_module.watched_texts(dispatcher.watched)
    dispatcher.fast_path.guard_with(dispatcher.watched)
    native = tensors.native()
    try:
        assert kernel(a, b) == "launched"
        assert fingerprint_module.unchanged(dispatcher.watched)
        assert native is None or native.unchanged(dispatcher.watched)
        change()
        assert not fingerprint_module.unchanged(dispatcher.watched)
        assert native is None or not native.unchanged(dispatcher.watched)
        with pytest.raises(tl.ArgumentValueError, match="on cpu"):  # the slow path's word on CPU tensors
            kernel(a, b)
        assert dispatcher.launches == {}
    finally:
        dispatcher.forget_launches()


def test_a_helpers_code_swapped_in_place_is_read_by_the_next_call(users: ModuleType) -> None:
    assert "T.float32(1.0)" in tir(users.with_helper)
    guard_sees(users.with_helper, lambda: swap(users.offset, users.offset_edited))
    after = tir(users.with_helper)
    assert "T.float32(4.0)" in after and "T.float32(1.0)" not in after


def test_a_helpers_defaults_swapped_in_place_are_read_by_the_next_call(users: ModuleType) -> None:
    before = tir(users.with_helper)
    assert "2.0" in before
    guard_sees(users.with_helper, lambda: setattr(users.scaled, "__defaults__", (6.0,)))
    assert "6.0" in tir(users.with_helper)


def test_a_jit_functions_own_code_swapped_in_place_is_read_by_the_next_call(users: ModuleType) -> None:
    kernel = users.plain
    assert "3.0" in tir(kernel)
    guard_sees(kernel, lambda: swap(kernel.__wrapped__, users.plain_edited))
    after = tir(kernel)
    assert "7.0" in after and "3.0" not in after


def test_a_macros_code_swapped_in_place_is_read_by_the_next_call(users: ModuleType) -> None:
    kernel = users.with_macro
    assert "1.0" in tir(kernel)
    guard_sees(kernel, lambda: swap(users.add_one.__wrapped__, users.add_one_edited))
    after = tir(kernel)
    assert "5.0" in after and "1.0" not in after


def test_a_factorys_code_swapped_in_place_is_read_by_the_next_call(users: ModuleType) -> None:
    kernel = users.shift(256, 1.5)
    assert "A[i] + T.float32(1.5)" in tir_of_factory(kernel)
    guard_sees(kernel, lambda: swap(users.shift.__wrapped__, users.shift_edited))
    assert "A[i] - T.float32(1.5)" in tir_of_factory(users.shift(256, 1.5))


def tir_of_factory(kernel: Any) -> str:
    return str(kernel.get_tir())


def test_a_functions_code_and_defaults_are_watched_on_the_function() -> None:
    """The places a function's code and defaults are watched in: the function object itself, by attribute (its
    defaults of a kind only where it has parameters of that kind)."""
    def helper(x, k=1, *, j=2):
        return x + k + j

    def constant():
        return 1.0

    assert [(w.name, w.value) for w in fingerprint(helper).watched if w.namespace is helper] == [
        ("__code__", helper.__code__), ("__defaults__", (1,)), ("__kwdefaults__", {"j": 2})]
    assert [w.name for w in fingerprint(constant).watched if w.namespace is constant] == ["__code__"]
    watched = fingerprint(helper).watched
    native = tensors.load_helpers()
    helper.__kwdefaults__ = {"j": 2}  # an equal value, another object: the guard does not hold; the texts agree
    assert not fingerprint_module.unchanged(watched) and (native is None or not native.unchanged(watched))
    texts = fingerprint_module.watched_texts(watched)
    alike = fingerprint_module.rebound_alike(watched, texts)
    assert alike is not None and fingerprint_module.unchanged(alike) and (native is None or native.unchanged(alike))
    helper.__kwdefaults__ = None
    assert fingerprint_module.rebound_alike(watched, texts) is None


def test_the_c_guard_reads_a_function_attribute_as_python_does() -> None:
    """A watch of a function's attribute is read alike in C and Python: by a name that is not the interned
    `__code__` (joined at run time) too, and another attribute (a wrapper's `__wrapped__`) by a lookup."""
    def constant():
        return 1.0

    native = tensors.load_helpers()
    if native is None:
        pytest.skip("the C helper did not build")
    name = "".join(["__co", "de__"])
    watched = (fingerprint_module.Watch(constant, name, constant.__code__),
               fingerprint_module.Watch(constant, "".join(["__default", "s__"]), None))
    assert native.unchanged(watched) and fingerprint_module.unchanged(watched)
    wrapper = functools.wraps(constant)(lambda: None)
    held = (fingerprint_module.Watch(wrapper, "__wrapped__", constant),)
    assert native.unchanged(held) and fingerprint_module.unchanged(held)
    wrapper.__dict__ = {"__wrapped__": lambda: None}  # what autoreload does to a wrapper: the new one's `__dict__`
    assert not native.unchanged(held) and not fingerprint_module.unchanged(held)
    missing = (fingerprint_module.Watch(constant, "__wrapped__", constant),)
    assert not native.unchanged(missing) and not fingerprint_module.unchanged(missing)


class _Globals(dict):  # type: ignore[type-arg]
    """A module namespace of a dict subclass, as `exec` and `types.FunctionType` take for a function's globals."""


def test_globals_of_a_dict_subclass_are_watched_as_the_c_guard_reads_them(tmp_path: Path) -> None:
    """A global the body reads is watched where the function's globals are a dict subclass too (the C guard takes
    any dict): left unwatched, rebinding it would leave the kernel of the old value served from memory."""
    path = tmp_path / "in_a_dict_subclass.py"
    path.write_text(SOURCE)
    namespace = _Globals()
    exec(compile(SOURCE, str(path), "exec"), namespace)
    kernel = namespace["with_helper"]
    watched = fingerprint(kernel.__wrapped__).watched
    assert {w.name for w in watched if w.namespace is namespace} == {"scaled", "offset"}
    native = tensors.load_helpers()
    assert fingerprint_module.unchanged(watched) and (native is None or native.unchanged(watched))
    namespace["offset"] = namespace["offset_edited"]
    assert not fingerprint_module.unchanged(watched) and (native is None or not native.unchanged(watched))


PACKAGED_MACRO = '''
import tltyped.language as T

__version__ = "1.0"


@T.macro
def add_two(A, B, i):
    B[i] = A[i] + 2.0
'''

CALLS_A_PACKAGED_MACRO = '''
import tltyped as tl
import tltyped.language as T
from packaged_macros import add_two


@tl.jit
def with_packaged_macro(A, B):
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            add_two(A, B, i)
'''


def test_a_macro_of_an_installed_package_is_read_by_the_packages_version(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A `T.macro` an installed package defines is read as that package's code, by its version: its wrapper
    calls the function `__wrapped__` names, which its closure no longer holds, so another version of the package
    is another kernel only where that function is read through `__wrapped__`."""
    site, users = tmp_path / "site-packages", tmp_path / "users"
    (site / "packaged_macros").mkdir(parents=True)
    users.mkdir()
    (site / "packaged_macros" / "__init__.py").write_text(PACKAGED_MACRO)
    (users / "calls_a_packaged_macro.py").write_text(CALLS_A_PACKAGED_MACRO)
    monkeypatch.setattr(fingerprint_module, "INSTALLED_DIRS", (site,))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(users))
    try:
        kernel = importlib.import_module("calls_a_packaged_macro").with_packaged_macro
        before = fingerprint(kernel.__wrapped__)
        monkeypatch.setattr(sys.modules["packaged_macros"], "__version__", "2.0")
        after = fingerprint(kernel.__wrapped__)
    finally:
        for name in ("calls_a_packaged_macro", "packaged_macros"):
            sys.modules.pop(name, None)
    assert before.stable and after.stable and before.digest != after.digest


def test_a_module_reloaded_as_autoreload_does_is_read_by_the_next_call(users: ModuleType) -> None:
    """The module's file edited and run again, then each old function given the new one's attributes (IPython's
    `update_function`): the kernel's global names the old helper, and the old macro, whose `__dict__` (so its
    `__wrapped__`) is the new one's; the next call builds from the edited code."""
    before = tir(users.with_helper), tir(users.with_macro)
    path = Path(users.__file__)
    edited = SOURCE.replace("return 1.0", "return 9.0").replace("B[i] = A[i] + 1.0", "B[i] = A[i] + 8.0")
    path.write_text(edited)
    new = ModuleType(users.__name__)
    new.__file__ = str(path)
    exec(compile(edited, str(path), "exec"), vars(new))
    guard_sees(users.with_helper, lambda: swap(users.offset, new.offset))
    guard_sees(users.with_macro, lambda: swap(users.add_one, new.add_one))
    helper, macro = tir(users.with_helper), tir(users.with_macro)
    assert "9.0" in helper and "9.0" not in before[0]
    assert "8.0" in macro and "8.0" not in before[1]
