"""The cached call in C (`CachedCall`, callpath/csrc/cached_call.c) against the generated fast path it stands for.

For a signature whose only checks are dyn dims agreeing, `@tl.jit` returns a
C object that builds the key, checks and launches by itself, and hands any
other call to the generated Python fast path. Both are built here around one
hand-filled cache (CPU tensors, a recording launch): a call the C path
serves must hit the same entry with the same launch arguments, and a call it
does not serve must end exactly as the Python path ends it.
"""

import ctypes
import dataclasses
import inspect
import pickle
import re
import shutil
import sysconfig
import weakref
from typing import Any, TypeVar

import pytest
import torch

import tltyped as tl
from examples.interleave import interleave_into
from tests.conftest import has_nvcc, meta, target_env
from tests.kernels import dispatch, in_body, names
from tltyped.callpath import tensors, torch_direct
from tltyped.callpath import fastpath


def test_the_c_helpers_build_where_a_compiler_exists() -> None:
    """Without them every call silently takes the slower Python path: where a C compiler exists, they must build."""
    if shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]) is None:
        pytest.skip("no C compiler")
    assert tensors.load_helpers() is not None
    assert torch_direct.helper() is not None and torch_direct.tensor_reader() is not None


@pytest.mark.parametrize("how", ["helper", "torch's Python API"])
def test_a_version_bump_makes_autograd_refuse_a_saved_tensor_and_leaves_an_inference_tensor_alone(how: str) -> None:
    """What a launch does to each tensor its kernel writes (launcher.h's bump_written): through the helper's BUMP
    capsule, or through torch's Python API where the helper cannot be had."""
    if how == "helper":
        capsule = torch_direct.version_bump()
        if type(capsule).__name__ != "PyCapsule":
            pytest.skip("the helper is not built here")
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        bump = ctypes.PYFUNCTYPE(None, ctypes.py_object)(get(capsule, b"tltyped.bump"))
    else:
        bump = torch_direct.bump_version
    x, w = torch.randn(4, requires_grad=True), torch.randn(4)
    loss = (x * w).sum()  # autograd saves w
    before = w._version
    bump(w)
    assert w._version == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    with torch.inference_mode():
        frozen = torch.randn(4)
    bump(frozen)  # no version counter: left alone, and no error
    assert frozen.is_inference()


C = tensors.load_helpers()
c_path = pytest.mark.skipif(C is None, reason="the C tensor facts are not built here")

M = TypeVar("M")
N = TypeVar("N", bound=tl.dyn[int])


@tl.jit
def mixed(
    A: tl.Tensor[tl.float32, M, N],
    B: tl.Tensor[tl.float16, N],
    alpha: tl.dyn[float] = 1.0,
    block: int = 64,
    mode: str = "fast",
    shape: tuple[int, int] = (2, 4),
):
    """A const dim, a shared dyn dim, a dyn scalar and one const of each key form; the body is never built."""


class Recorder:
    """The cache entry's launch: records its arguments; refuses a str, as a launcher refuses a wrong scalar."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> str:
        if any(isinstance(a, str) for a in args):
            raise TypeError("mixed: argument 'alpha' expects a float, got str")
        self.calls.append(args)
        return "launched"


def slow(*args: Any) -> str:
    return "slow"


@pytest.fixture(params=["C call", "forwarded to C"])
def paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, Recorder, dict[Any, Any]]:
    """The C path and the Python path of `mixed`, around one cache holding a recorder. The C path is the C
    cached call itself, or (a machine's first process) the generated function handed out before the helper was
    built, which forwards every call to the C cached call made once the helper is loaded."""
    plan, source = mixed._dispatcher.plan, mixed.fast_path_source
    launches: dict[Any, Any] = {}
    if request.param == "forwarded to C":
        monkeypatch.setattr(tensors, "native", lambda: None)  # the helper is not built yet
    c_path = fastpath.build_fast_path(plan, source, launches, slow)
    if request.param == "forwarded to C":
        assert inspect.isfunction(c_path.call) and c_path.c_call() is None
        monkeypatch.undo()  # the first call built the helper
        c_path.read_with(tensors.tensor_facts())
    python_path = fastpath.build_fast_path(plan, source, launches, slow, in_c=False)
    assert type(c_path.c_call()) is C.CachedCall and inspect.isfunction(python_path.call)
    assert python_path.c_call() is None
    return c_path, python_path, Recorder(), launches


A = torch.randn(3, 8)
B = torch.randn(8, dtype=torch.float16)

SERVED = [
    ((A, B), {}),
    ((A, B, 2.5), {}),
    ((A, B, 3), {}),  # an int for a dyn float: the launcher converts it
    ((A,), {"B": B, "mode": "exact"}),
    ((A, B), {"block": 128, "shape": (1, 2)}),
    ((torch.randn(3, 100), torch.randn(100, dtype=torch.float16), 0.5, 32, "fast", (2, 4)), {}),
]


def full_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    bound = inspect.signature(mixed).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args


@c_path
@pytest.mark.parametrize(("args", "kwargs"), SERVED)
def test_the_c_path_serves_a_hit_with_the_python_paths_key_and_arguments(paths, args, kwargs) -> None:
    c_path, python_path, recorder, launches = paths
    launches[python_path.key(*full_arguments(args, kwargs))] = recorder
    assert c_path.call(*args, **kwargs) == "launched"
    assert c_path.c_call().hits == 1  # served in C, not handed to the Python path
    assert python_path.call(*args, **kwargs) == "launched"
    (*c_args, c_a, c_b), (*python_args, python_a, python_b) = recorder.calls
    assert c_args == python_args
    assert c_args[0] == args[0].data_ptr() and c_args[-2:] == [0, -1]  # CPU tensors: stream 0, device -1
    tensors_given = full_arguments(args, kwargs)[:2]
    assert (c_a, c_b) == (python_a, python_b) == tensors_given  # by identity: the tensors, last


def outcome(call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        return call(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - compared between the two paths
        return type(exc), str(exc)


MISALIGNED = torch.empty(3 * 8 + 1)[1:].view(3, 8)
NOT_SERVED = {
    "dyn dims disagree": ((A, torch.randn(5, dtype=torch.float16)), {}),
    "another const dim": ((torch.randn(4, 8), B), {}),
    "another dtype": ((A.double(), B), {}),
    "non-contiguous": ((torch.randn(8, 3).t(), B), {}),
    "misaligned data": ((MISALIGNED, B), {}),
    "another rank": ((A, B.view(2, 4)), {}),
    "not a tensor": ((A, [1.0] * 8), {}),
    "a bool for an int const": ((A, B), {"block": True}),  # True == 1, and block=1 is in the cache
    "a float for an int const": ((A, B), {"block": 64.0}),
    "an unhashable const": ((A, B), {"shape": [2, 4]}),
    "a tuple of floats": ((A, B), {"shape": (2.0, 4.0)}),
    "a str for the dyn scalar": ((A, B, "x"), {}),
    "an unknown keyword": ((A, B), {"blocks": 1}),
    "a keyword given twice": ((A, B), {"A": A}),
    "a missing argument": ((A,), {}),
    "too many arguments": ((A, B, 1.0, 64, "fast", (2, 4), 0), {}),
}


@c_path
@pytest.mark.parametrize(("args", "kwargs"), NOT_SERVED.values(), ids=NOT_SERVED.keys())
def test_a_call_the_c_path_does_not_serve_ends_as_the_python_path_ends_it(paths, args, kwargs) -> None:
    c_path, python_path, recorder, launches = paths
    launches[python_path.key(A, B, 1.0, 64, "fast", (2, 4))] = recorder
    launches[python_path.key(A, B, 1.0, 1, "fast", (2, 4))] = recorder
    assert c_path.call(A, B) == c_path.call(A, B, 1.0, 1) == "launched"  # both entries remembered as recent hits
    recorder.calls.clear()
    expected = outcome(python_path.call, args, kwargs)
    assert outcome(c_path.call, args, kwargs) == expected
    assert expected != "launched" and recorder.calls == [] and c_path.c_call().hits == 2


@tl.jit
def keyword_only(A: tl.Tensor[tl.float32, M, N], *, alpha: tl.dyn[float] = 1.0, block: int = 64):
    """Keyword-only parameters after the `*`: the body is never built."""


@c_path
def test_keyword_only_parameters_are_served_by_name_and_refused_by_position() -> None:
    """A call naming them is served in C with the Python path's key and arguments; one giving them by position
    fails as Python fails it (TypeError), in both paths, and launches nothing."""
    plan, source, recorder = keyword_only._dispatcher.plan, keyword_only.fast_path_source, Recorder()
    launches: dict[Any, Any] = {}
    c_path = fastpath.build_fast_path(plan, source, launches, slow)
    python_path = fastpath.build_fast_path(plan, source, launches, slow, in_c=False)
    launches[python_path.key(A, 2.0, 128)] = recorder
    assert c_path.call(A, alpha=2.0, block=128) == "launched" and c_path.c_call().hits == 1
    assert python_path.call(A, block=128, alpha=2.0) == "launched"
    assert recorder.calls[0] == recorder.calls[1]
    for args in ((A, 2.0), (A, 2.0, 128)):
        expected = outcome(python_path.call, args, {})
        assert expected[0] is TypeError and "positional argument" in expected[1]
        assert outcome(c_path.call, args, {}) == expected
    assert len(recorder.calls) == 2 and c_path.c_call().hits == 1


@c_path
@pytest.mark.parametrize("direct", [True, False], ids=["torch_direct reader", "exchange API"])
def test_a_negated_view_is_never_served(paths, direct: bool) -> None:
    """`torch._neg_view(A)` (what `.conj().imag` gives) keys as A does, but its memory holds its elements'
    negatives: both readers leave it to the slow path, as the Python facts do."""
    c_path, python_path, recorder, launches = paths
    launches[python_path.key(A, B, 1.0, 64, "fast", (2, 4))] = recorder
    C.set_reader(torch_direct.tensor_reader() if direct else None)
    try:
        assert c_path.call(A, B) == python_path.call(A, B) == "launched"
        assert c_path.call(torch._neg_view(A), B) == python_path.call(torch._neg_view(A), B) == "slow"
    finally:
        C.set_reader(torch_direct.tensor_reader())


SETTINGS = {"SCALE": 2.0}


def closure_of(value: object) -> Any:
    def reads() -> object:
        return value

    def rebind(new: object) -> None:
        nonlocal value
        value = new

    return reads.__closure__[0], rebind  # type: ignore[index]


@c_path
def test_a_call_is_served_only_while_each_watched_place_holds_its_object(paths) -> None:
    """Rebinding a global or a closure variable the kernels were built from sends every call to the slow path (in
    C and in Python) until the places hold their objects again; a value equal but not the same object counts as
    rebound (the slow path reads values and decides)."""
    from tltyped.frontend.fingerprint import Watch, unchanged

    c_path, python_path, recorder, launches = paths
    launches[python_path.key(A, B, 1.0, 64, "fast", (2, 4))] = recorder
    cell, rebind = closure_of(scale := 1.5)
    setting = SETTINGS["SCALE"]
    guard = (Watch(SETTINGS, "SCALE", setting), Watch(cell, None, scale))
    for path in (c_path, python_path):
        path.guard_with(guard)
    assert c_path.call(A, B) == python_path.call(A, B) == "launched"
    hits = c_path.c_call().hits
    for change, undo in ((lambda: SETTINGS.update(SCALE=3.0), lambda: SETTINGS.update(SCALE=setting)),
                         (lambda: SETTINGS.update(SCALE=float("2.0")), lambda: SETTINGS.update(SCALE=setting)),
                         (lambda: SETTINGS.pop("SCALE"), lambda: SETTINGS.update(SCALE=setting)),
                         (lambda: rebind(2.5), lambda: rebind(scale))):
        change()
        assert c_path.call(A, B) == python_path.call(A, B) == "slow"
        assert C.unchanged(guard) is unchanged(guard) is False  # the check in C, and in Python without the helper
        undo()
        assert c_path.call(A, B) == "launched" and C.unchanged(guard) is unchanged(guard) is True
    assert c_path.c_call().hits == hits + 4 and len(recorder.calls) == 6
    with pytest.raises(TypeError, match="guard: a tuple"):
        c_path.c_call().guard_with([("not", "a tuple")])


SHAPE = (2, 4)


@c_path
def test_recent_hits_are_told_apart_and_replaced(paths) -> None:
    """More keys than the C path remembers, called in turn: each call reaches its own entry with its own arguments."""
    c_path, python_path, _, launches = paths
    blocks = [16, 32, 64, 128, 256, 512]
    recorders = {block: Recorder() for block in blocks}
    for block in blocks:
        launches[python_path.key(A, B, 1.0, block, "fast", (2, 4))] = recorders[block]
    calls = []
    for turn in range(4):
        for block in blocks:
            n = 8 * (turn + 1)  # a dyn dim: not in the key, passed with each call
            a, b = torch.randn(3, n), torch.randn(n, dtype=torch.float16)
            shape = SHAPE if turn % 2 else tuple([2, 4])  # the same object, or an equal one made now
            for _ in range(2):  # the second call with the same object is a remembered hit
                assert c_path.call(a, b, 0.5, block, shape=shape) == "launched"
                assert python_path.call(a, b, 0.5, block, shape=shape) == "launched"
                calls.append(block)
    assert c_path.c_call().hits == len(calls)
    for block, recorder in recorders.items():
        assert len(recorder.calls) == 2 * calls.count(block)
        assert recorder.calls[0::2] == recorder.calls[1::2]  # the C path's arguments, then the Python path's


@pytest.fixture(scope="module")
def scale_rows_kernel() -> Any:
    """nvcc build of a kernel with a tensor pair, a const dim, a dyn dim and a dyn float, for sm_90a."""
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    with target_env("sm_90a"):
        return in_body.scale_rows.compile(meta(128, 100, dtype=torch.float32), meta(128, 100, dtype=torch.float32), 2.0)


@c_path
@pytest.mark.parametrize("direct", [True, False], ids=["READ", "exchange API"])
def test_no_path_serves_a_call_torch_jit_trace_records(paths, direct: bool) -> None:
    """The trace would miss a launch and bake its outputs into its graph: every call it records goes to the slow
    path, which calls the kernel's op (READ refuses any tensor then; without READ, the reader asks torch)."""
    c_path, python_path, recorder, launches = paths
    launches[python_path.key(A, B, 1.0, 64, "fast", (2, 4))] = recorder
    served: list[Any] = []

    def traced(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        served.extend([c_path.call(a, b), python_path.call(a, b)])
        return a + 1

    C.set_reader(torch_direct.tensor_reader() if direct else None)
    try:
        assert [c_path.call(A, B), python_path.call(A, B)] == ["launched", "launched"]  # untraced: served
        torch.jit.trace(traced, (A, B), check_trace=False)
    finally:
        C.set_reader(torch_direct.tensor_reader())
    assert served == ["slow", "slow"]


@c_path
def test_the_c_path_calls_a_compiled_launcher_through_its_raw_entry(scale_rows_kernel: Any) -> None:
    """The raw entry converts what the C path read: it gets to the launch, and a refused value goes to the slow path."""
    assert type(scale_rows_kernel.module.LAUNCH_RAW).__name__ == "PyCapsule"
    fn = in_body.scale_rows
    launches: dict[Any, Any] = {}
    c_path = fastpath.build_fast_path(fn._dispatcher.plan, fn.fast_path_source, launches, slow)
    python_path = fastpath.build_fast_path(fn._dispatcher.plan, fn.fast_path_source, launches, slow, in_c=False)
    a = torch.randn(128, 100)
    launches[python_path.key(a, a, 2.0, 64)] = scale_rows_kernel.launch
    for _ in range(2):  # the second call is a remembered hit
        for call in (c_path.call, python_path.call):  # CPU tensors: the launcher is reached, and refuses device -1
            with pytest.raises(ValueError, match=r"scale_rows: launches on a CUDA device \(0 to 63\), not on device -1"):
                call(a, a, 2.0)
    assert c_path.call(a, a, "2.0") == python_path.call(a, a, "2.0") == "slow"  # the launcher refused a str


@c_path
@pytest.mark.parametrize("name", [names.CRAFTED, "double"])
def test_argument_errors_name_the_kernel_as_written(name: str) -> None:
    """Python's messages for a wrong argument count, from either path, name the kernel as its source does, not
    the C++-safe name of the generated `def` (`double` is a C++ keyword; the crafted name is no identifier)."""
    kernel = names.double(256) if name == "double" else names.keywords  # a lazy-style kernel object; an eager kernel
    launches: dict[Any, Any] = {}
    c_path = fastpath.build_fast_path(kernel._dispatcher.plan, kernel.fast_path_source, launches, slow)
    python_path = fastpath.build_fast_path(kernel._dispatcher.plan, kernel.fast_path_source, launches, slow, in_c=False)
    for call in (c_path.call, python_path.call):
        with pytest.raises(TypeError, match=rf"^{re.escape(name)}\(\) (missing|takes)"):
            call()


@c_path
def test_the_jit_function_is_the_c_path_and_still_looks_like_the_kernel() -> None:
    assert type(mixed) is C.CachedCall
    assert (mixed.__name__, mixed.__qualname__, mixed.__module__) == ("mixed", "mixed", __name__)
    assert mixed.__doc__.startswith("A const dim") and mixed.__wrapped__.__name__ == "mixed"
    assert list(inspect.signature(mixed).parameters) == ["A", "B", "alpha", "block", "mode", "shape"]
    assert "mixed" in repr(mixed) and isinstance(mixed, tl.JitFunction)
    assert pickle.loads(pickle.dumps(mixed)) is mixed  # by name, as a function is
    assert weakref.ref(mixed)() is mixed
    assert mixed.cache_info().hits == 0


@c_path
def test_signatures_with_other_checks_keep_the_python_path() -> None:
    assert inspect.isfunction(interleave_into)  # Out's dim 2 * N + 1 is checked by the generated code
    assert inspect.isfunction(dispatch.scalar_only)  # no tensor: the device is the current one, found in Python


@c_path
def test_a_key_rule_changed_in_the_plan_is_followed_by_every_path() -> None:
    """The key is stated once, in the CallPlan: change how one const is keyed there, and the generated Python
    key, the Python fast path and the C cached call all key that way."""
    plan = mixed._dispatcher.plan
    assert dict(plan.key_forms)["mode"] == "value"
    changed = dataclasses.replace(plan, key_forms=tuple((n, "typed" if n == "mode" else f) for n, f in plan.key_forms))
    source = fastpath.render_fast_path(changed)
    launches: dict[Any, Any] = {}
    c_path = fastpath.build_fast_path(changed, source, launches, slow)
    python_path = fastpath.build_fast_path(changed, source, launches, slow, in_c=False)
    key = python_path.key(A, B, 1.0, 64, "fast", (2, 4))
    assert key[-3:-1] == (str, "fast") and key != mixed._dispatcher.key(A, B, 1.0, 64, "fast", (2, 4))
    recorder = launches[key] = Recorder()
    assert c_path.call(A, B) == python_path.call(A, B) == "launched"
    assert c_path.c_call().hits == 1 and len(recorder.calls) == 2  # the C path found the entry under the new key
