"""Point 6: the static cache key, the fast path's use of it, and compile-once in the slow path.

The key is the dispatcher's generated `key` function (arguments positional, in
signature order, defaults included). Its meaning is the `Specialization` the
slow path builds from the same arguments: the key must change exactly when the
specialisation does. Everything here runs on CPU: meta tensors for keys and
binding, CPU tensors for the fast path with hand-filled cache entries.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import re
import threading
import time
import warnings
from collections import Counter
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tltyped as tl
from tests.conftest import meta, needs_nvcc
from tests.kernels import consts, dispatch, eager_style, elementwise
from tltyped.backend import cache, records
from tltyped.callpath import tensors as facts_module
from tltyped.callpath import torch_direct
from tltyped.callpath.dispatcher import Dispatcher
from tltyped.frontend.ast_race import AST_RACE, AST_RACE_TRIES
from tltyped.frontend.analyze import analyze
from tltyped.frontend.fingerprint import unchanged

KEYED = dispatch.keyed._dispatcher


def meta_tensor(shape: tuple[int, ...], strides: tuple[int, ...] | None = None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    if strides is None:
        return torch.empty(shape, dtype=dtype, device="meta")
    return torch.empty(4096, dtype=dtype, device="meta").as_strided(shape, strides)


def keyed_args(
    m: int = 3, n: int = 4, k: int = 5, a_dtype: torch.dtype = torch.float16, a_strides: tuple[int, int] | None = None,
    x: int = 0, flag: bool = False, block: Any = 64,
) -> tuple[Any, ...]:
    return (meta_tensor((m, n), a_strides, a_dtype), meta_tensor((k, n)), x, flag, block)


def key_or_none(*args: Any) -> Any:
    """The key, or None when no key can be built (the fast path then goes to the slow path)."""
    try:
        return KEYED.key(*args)
    except (TypeError, ValueError):
        return None


def specialization(dispatcher: Dispatcher, args: tuple[Any, ...]) -> Any:
    bound = dispatcher.binder.bind(args, allow_meta=True)
    return dispatcher.specialization(bound, dispatcher.consts(bound))


# -- what changes the key ---------------------------------------------------------------


def test_key_is_hashable_and_stable() -> None:
    key = KEYED.key(*keyed_args())
    assert hash(key) == hash(KEYED.key(*keyed_args()))
    assert key == KEYED.key(*keyed_args())


def test_dyn_dim_change_keeps_the_key() -> None:
    assert KEYED.key(*keyed_args(k=5)) == KEYED.key(*keyed_args(k=1000))
    assert specialization(KEYED, keyed_args(k=5)) == specialization(KEYED, keyed_args(k=1000))


def test_dyn_scalar_change_keeps_the_key() -> None:
    assert KEYED.key(*keyed_args(x=0)) == KEYED.key(*keyed_args(x=123))


@pytest.mark.parametrize(
    "change",
    [
        dict(m=4), dict(n=8), dict(a_dtype=torch.float32), dict(a_dtype=torch.bfloat16),
        dict(a_strides=(1, 3)), dict(a_strides=(8, 1)), dict(flag=True), dict(block=128),
        dict(block=tl.tune([64])),
    ],
    ids=["const dim M", "const dim N", "dtype f32", "dtype bf16", "transposed", "padded rows", "bool const",
         "int const", "tune"],
)
def test_static_change_changes_the_key(change: dict[str, Any]) -> None:
    base, changed = keyed_args(), keyed_args(**change)
    assert KEYED.key(*base) != KEYED.key(*changed)
    if not isinstance(change.get("block"), tl.Tune):
        assert specialization(KEYED, base) != specialization(KEYED, changed)


def test_rank_change_gives_no_matching_key() -> None:
    base = KEYED.key(*keyed_args())
    a3 = meta_tensor((3, 4, 1), dtype=torch.float16)
    assert key_or_none(a3, meta_tensor((5, 4)), 0, False, 64) != base  # None (no key) or another key


def test_device_is_part_of_the_key() -> None:
    cpu = (torch.empty(3, 4, dtype=torch.float16), torch.empty(5, 4), 0, False, 64)
    assert KEYED.key(*cpu) != KEYED.key(*keyed_args())


def test_defaults_are_part_of_the_key() -> None:
    a, b = keyed_args()[:2]
    assert KEYED.key(a, b) == KEYED.key(a, b, 0, False, 64)
    assert KEYED.key(a, b, block=128) == KEYED.key(a, b, 0, False, 128)


# -- the key against the specialisation, over random calls -----------------------------

DTYPES = [torch.float16, torch.float32, torch.bfloat16, torch.int8]


@st.composite
def keyed_calls(draw: st.DrawFn) -> tuple[Any, ...]:
    m = draw(st.sampled_from([1, 2, 3]))
    n = draw(st.sampled_from([1, 2, 4]))
    a_layout = draw(st.sampled_from(["contiguous", "transposed", "strides"]))
    if a_layout == "contiguous":
        a_strides = None
    elif a_layout == "transposed":
        a_strides = (1, m)
    else:
        a_strides = (draw(st.sampled_from([0, 1, 2, n, n + 1, 8])), draw(st.sampled_from([0, 1, 2])))
    A = meta_tensor((m, n), a_strides, draw(st.sampled_from(DTYPES)))
    B = draw(st.sampled_from(["ok", "ok", "ok", "ok", "transposed", "other n", "other dtype", "rank 3"]))
    k = draw(st.sampled_from([1, 2, 5]))
    if B == "ok":
        b = meta_tensor((k, n))
    elif B == "transposed":  # non-contiguous with a dyn dim: rejected, unless it happens to be contiguous
        b = meta_tensor((n, k)).t()
    elif B == "other n":
        b = meta_tensor((k, n + 1))
    elif B == "other dtype":
        b = meta_tensor((k, n), dtype=torch.float16)
    else:
        b = meta_tensor((k, n, 1))
    x = draw(st.sampled_from([0, 7]))
    flag = draw(st.sampled_from([False, True]))
    block = draw(st.sampled_from([64, 128]))
    return (A, b, x, flag, block)


def bind_or_reject(args: tuple[Any, ...]) -> Any:
    """The specialisation, or None when the slow path rejects the call (with a clean error)."""
    try:
        return specialization(KEYED, args)
    except (TypeError, ValueError) as exc:
        assert str(exc).startswith("keyed: "), exc  # rejections name the kernel
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keyed_calls(), keyed_calls())
def test_key_changes_exactly_when_the_specialization_does(one: tuple[Any, ...], two: tuple[Any, ...]) -> None:
    spec_one, spec_two = bind_or_reject(one), bind_or_reject(two)
    if spec_one is None or spec_two is None:
        return
    key_one, key_two = KEYED.key(*one), KEYED.key(*two)
    hash(key_one)
    assert (key_one == key_two) == (spec_one == spec_two), (spec_one, spec_two)


@settings(max_examples=200, deadline=None)
@given(keyed_calls())
def test_key_of_an_accepted_call_is_always_buildable(args: tuple[Any, ...]) -> None:
    if bind_or_reject(args) is not None:
        assert key_or_none(*args) is not None


@st.composite
def cpu_tensors(draw: st.DrawFn) -> torch.Tensor:
    dtype = draw(st.sampled_from([tl.types.to_torch(d) for d in tl.types.ALL_DTYPES]))
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(0, 4)) for _ in range(rank))
    strides = tuple(draw(st.integers(0, 12)) for _ in range(rank))
    offset = draw(st.integers(0, 5))
    return torch.empty(256, dtype=dtype).as_strided(shape, strides, offset)


@pytest.mark.skipif(facts_module.load_helpers() is None, reason="the C tensor facts are not built here")
@settings(max_examples=300, deadline=None)
@given(st.lists(cpu_tensors(), min_size=1, max_size=3))
def test_c_tensor_facts_match_the_python_facts(tensors: list[torch.Tensor]) -> None:
    """Keys come from the C facts for real tensors and from the Python ones otherwise: they must agree."""
    ranks = bytes(t.dim() for t in tensors)
    assert facts_module.tensor_facts()(ranks, *tensors) == facts_module.python_facts(ranks, *tensors)


# -- the fast path, with hand-filled cache entries (CPU tensors) --------------------------


class Launches:
    """A cache entry's launch that records its arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> str:
        self.calls.append(args)
        return "launched"


def test_fast_path_hit_launches_with_pointers_and_dyn_dims(seed_gemm) -> None:
    d = Dispatcher(seed_gemm.gemm.__wrapped__, analyze(seed_gemm.gemm.__wrapped__).signature, None)
    a, b = torch.empty(256, 512, dtype=torch.float16), torch.empty(512, 128, dtype=torch.float16)
    launches = Launches()
    d.launches[d.key(a, b, 128, 128, 32, 3)] = launches
    assert d.fast_path.call(a, b) == "launched"
    ((*args, stream, device, given_a, given_b),) = launches.calls
    assert args == [a.data_ptr(), b.data_ptr(), 512]  # pointers, then the dyn dim K
    assert (stream, device) == (0, -1)  # CPU tensors: no device, no stream
    assert given_a is a and given_b is b  # the tensors last: the launch bumps the versions of those it writes
    assert d.cache_info().hits == 1
    assert d.cache_info().misses == 0


def test_fast_path_other_dyn_dim_hits_the_same_entry(seed_gemm) -> None:
    d = Dispatcher(seed_gemm.gemm.__wrapped__, analyze(seed_gemm.gemm.__wrapped__).signature, None)
    launches = Launches()
    a, b = torch.empty(256, 512, dtype=torch.float16), torch.empty(512, 128, dtype=torch.float16)
    d.launches[d.key(a, b, 128, 128, 32, 3)] = launches
    a2, b2 = torch.empty(256, 64, dtype=torch.float16), torch.empty(64, 128, dtype=torch.float16)
    d.fast_path.call(a2, b2)
    assert launches.calls[0][2] == 64


def test_fast_path_sends_disagreeing_dyn_dims_to_the_slow_path(seed_gemm) -> None:
    d = Dispatcher(seed_gemm.gemm.__wrapped__, analyze(seed_gemm.gemm.__wrapped__).signature, None)
    launches = Launches()
    a, b = torch.empty(256, 512, dtype=torch.float16), torch.empty(512, 128, dtype=torch.float16)
    d.launches[d.key(a, b, 128, 128, 32, 3)] = launches
    b_bad = torch.empty(256, 128, dtype=torch.float16)  # K: 512 in A, 256 in B; the key alone cannot see it
    assert d.key(a, b_bad, 128, 128, 32, 3) == d.key(a, b, 128, 128, 32, 3)
    with pytest.raises(ValueError):  # the slow path's binder rejects the call (on CPU: the device first)
        d.fast_path.call(a, b_bad)
    assert launches.calls == []
    assert d.cache_info().misses == 1


def test_fast_path_sends_misaligned_pointers_to_the_slow_path() -> None:
    d = Dispatcher(elementwise.add_or_sub.__wrapped__, analyze(elementwise.add_or_sub.__wrapped__).signature, None)
    launches = Launches()
    a = torch.empty(128, 64)
    d.launches[d.key(a, a, False)] = launches
    storage = torch.empty(128 * 64 + 1)
    misaligned = storage[1:].view(128, 64)  # same shape, dtype, layout; data pointer 4 bytes off
    assert misaligned.data_ptr() % 16 and d.key(misaligned, a, False) == d.key(a, a, False)
    with pytest.raises(ValueError):
        d.fast_path.call(misaligned, a)
    assert launches.calls == []
    d.fast_path.call(a, a)
    assert len(launches.calls) == 1


def test_fast_path_sends_unhashable_consts_to_the_slow_path() -> None:
    d = Dispatcher(elementwise.add_or_sub.__wrapped__, analyze(elementwise.add_or_sub.__wrapped__).signature, None)
    a = torch.empty(128, 64)
    with pytest.raises(TypeError, match="const parameter 'subtract' must be hashable"):
        d.fast_path.call(a, a, [True])


# -- compile once: the slow path's locking -----------------------------------------------


@pytest.fixture
def cpu_slow_path(monkeypatch: pytest.MonkeyPatch):
    """A fresh dispatcher of `scalar_only` whose slow path can finish on a CPU machine.

    The unit under test is `Dispatcher.slow`'s lookup / lock / build / store. Three
    things around it are replaced, none of them the locking itself:
    - `make_launch` (elaborate, lower, nvcc) by a counting stand-in returning a Python launch;
    - the binder, wrapped to report device cuda:0 (slow() insists on a device index
      even for a kernel without tensors, and no CUDA tensor exists here);
    - `stream`, which asks CUDA for the current stream (CPU torch has none).
    """
    d = Dispatcher(dispatch.scalar_only.__wrapped__, analyze(dispatch.scalar_only.__wrapped__).signature, None)
    builds: Counter[Any] = Counter()
    lock = threading.Lock()
    state: dict[str, Any] = {"delay": 0.05, "fail": set(), "hook": None}

    def make_launch(bound: Any, stream: int) -> Any:
        c = bound.values["c"]
        if state["hook"] is not None:
            state["hook"](c)
        time.sleep(state["delay"])  # a slow build: the window in which other threads pile up
        with lock:
            builds[c] += 1
        if c in state["fail"]:
            state["fail"].discard(c)
            raise RuntimeError(f"build of c={c} failed")

        def launch(n: int, stream: int, device: int) -> tuple[int, int, int]:
            return (c, n, device)

        return launch

    bind = d.binder.bind
    monkeypatch.setattr(d, "make_launch", make_launch)
    monkeypatch.setattr(d.binder, "bind", lambda args, **kw: replace(bind(args, **kw), device=torch.device("cuda", 0)))
    monkeypatch.setattr(d, "stream", lambda bound: 0)
    return d, builds, state


def run_threads(count: int, work: Any) -> list[BaseException]:
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        barrier.wait()
        try:
            work(index)
        except BaseException as exc:  # noqa: BLE001  (reported to the test)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    return errors


def test_concurrent_calls_build_each_key_once(cpu_slow_path) -> None:
    d, builds, _ = cpu_slow_path
    keys = [0, 1, 2, 3]
    results: list[tuple[tuple[int, int], Any]] = []
    results_lock = threading.Lock()

    def work(index: int) -> None:
        order = keys * 3
        random.Random(index).shuffle(order)
        for c in order:
            n = index * 100 + c
            out = d.fast_path.call(n, c)
            with results_lock:
                results.append(((c, n), out))

    assert run_threads(8, work) == []
    assert builds == Counter({c: 1 for c in keys})
    assert all(out == (c, n, 0) or out == (c, n, -1) for (c, n), out in results)
    assert len(results) == 8 * 12
    assert len(d.launches) == len(keys)
    assert d.cache_info().size == len(keys)
    assert d.building == {}  # every key's build lock is freed once its launch is stored


def test_slow_path_called_directly_builds_once(cpu_slow_path) -> None:
    d, builds, _ = cpu_slow_path
    assert run_threads(8, lambda i: d.slow(i, 7)) == []
    assert builds == Counter({7: 1})


def test_a_failed_build_is_not_cached_and_is_retried(cpu_slow_path) -> None:
    d, builds, state = cpu_slow_path
    state["fail"].add(5)
    with pytest.raises(RuntimeError, match="build of c=5 failed"):
        d.fast_path.call(1, 5)
    assert len(d.launches) == 0
    done = threading.Event()
    result: list[Any] = []
    threading.Thread(target=lambda: (result.append(d.fast_path.call(2, 5)), done.set()), daemon=True).start()
    assert done.wait(10), "the key's lock was left held after the failed build"
    assert result[0][:2] == (5, 2)
    assert builds[5] == 2


def test_different_keys_build_concurrently(cpu_slow_path) -> None:
    """One key's slow build does not hold up another key's build."""
    d, _, state = cpu_slow_path
    zero_started, one_started = threading.Event(), threading.Event()
    waited: dict[int, bool] = {}

    def hook(c: int) -> None:
        if c == 0:
            zero_started.set()
            waited[0] = one_started.wait(5)  # key 0's build waits until key 1's build has begun
        else:
            one_started.set()

    def work(index: int) -> None:
        if index == 1:
            assert zero_started.wait(5)  # key 1's call starts while key 0 is being built
        d.fast_path.call(0, index)

    state["hook"] = hook
    state["delay"] = 0
    assert run_threads(2, work) == []
    assert waited == {0: True}


def in_forked_child(work: Any, timeout: float = 60) -> Any:
    """What `work()` returns in a child forked now (as a DataLoader's workers are), or a failure when it has not
    returned within `timeout` seconds (a lock the child waits on for ever)."""
    context = multiprocessing.get_context("fork")
    results = context.Queue()

    def child() -> None:
        try:
            results.put(("returned", work()))
        except BaseException as exc:  # noqa: BLE001  (reported to the parent)
            results.put(("raised", repr(exc)))

    process = context.Process(target=child, daemon=True)
    process.start()
    process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join()
        pytest.fail(f"the forked child did not finish within {timeout} s: it waits on a lock no thread of it holds")
    outcome, value = results.get(timeout=10)
    assert outcome == "returned", value
    return value


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_forked_while_a_thread_builds_a_key_builds_it_itself(cpu_slow_path) -> None:
    """A thread is building key c=7 (holding its build lock) when the process forks: the child's call of the same key
    must build it in the child, not wait for ever on the lock of a thread the child does not have."""
    d, _, state = cpu_slow_path
    parent, building, release = os.getpid(), threading.Event(), threading.Event()

    def hook(c: int) -> None:
        if os.getpid() == parent:
            building.set()
            assert release.wait(30)

    state["hook"], state["delay"] = hook, 0
    thread = threading.Thread(target=lambda: d.fast_path.call(1, 7), daemon=True)
    thread.start()
    try:
        assert building.wait(30)
        assert in_forked_child(lambda: d.fast_path.call(3, 7)) == (7, 3, 0)
    finally:
        release.set()
        thread.join(30)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.parametrize("held", ["tensors", "torch_direct"])
def test_a_child_forked_while_a_thread_loads_the_c_helpers_loads_them_itself(held: str) -> None:
    """A thread holds the lock under which the C helpers are built (the first call or compile of a process, seconds)
    when the process forks: the child's first call or compile loads them itself instead of waiting for ever."""
    lock = {"tensors": facts_module._lock, "torch_direct": torch_direct._lock}[held]
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            holding.set()
            assert release.wait(30)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        assert holding.wait(30)
        in_forked_child(lambda: facts_module.load_helpers() and None)
    finally:
        release.set()
        thread.join(30)


def test_different_keys_elaborate_concurrently_into_the_same_kernels() -> None:
    """Per-key locks let two specialisations build at once: elaboration must not share state between threads."""
    from tests.kernels import gemm_variants

    def meta2(m: int, n: int, dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(m, n, dtype=dtype, device="meta")

    cases = [
        (gemm_variants.gemm_split_k, (meta2(256, 512, torch.float16), meta2(512, 256, torch.float16), bool(i % 2),
                                      64 * (1 + i % 2), 128, 32))
        for i in range(4)
    ] + [
        (elementwise.add_or_sub, (meta2(128 * (i + 1), 64, torch.float32), meta2(128 * (i + 1), 64, torch.float32),
                                  bool(i % 2)))
        for i in range(4)
    ]

    def tir(fn: Any, args: tuple[Any, ...]) -> str:
        d = fn._dispatcher
        bound = d.binder.bind(args, allow_meta=True)
        return d.builder.elaborate(d.specialization(bound, d.consts(bound))).prim_func.script()

    sequential = [tir(fn, args) for fn, args in cases]
    concurrent: list[str | None] = [None] * len(cases)

    def work(index: int) -> None:
        concurrent[index] = tir(*cases[index])

    assert run_threads(len(cases), work) == []
    assert concurrent == sequential


RACE = f"{AST_RACE} (before=39, after=29)"


@pytest.mark.parametrize("failures, left, survives", [
    ([RACE] * (AST_RACE_TRIES - 1), 0, True),  # run again until it builds
    ([RACE] * AST_RACE_TRIES, 0, False),  # and no more than AST_RACE_TRIES times in all
    (["another SystemError", RACE], 1, False),  # any other failure is the body's own: not run again
])
def test_an_elaboration_cpython_s_ast_failed_from_another_thread_runs_again(
    failures: list[str], left: int, survives: bool
) -> None:
    """CPython 3.11's ast may fail a parse that another thread's interleaves (builds run in threads): spurious,
    so that elaboration runs again; a body's own failure is reported at once."""
    from tests.kernels import ast_race

    d = ast_race.copy._dispatcher
    bound = d.binder.bind((meta_tensor((128,)),), allow_meta=True)
    spec = d.specialization(bound, d.consts(bound))
    ast_race.FAILURES[:] = failures
    try:
        if survives:
            assert "B[i] = A[i]" in d.builder.elaborate(spec).prim_func.script()
        else:
            with pytest.raises(tl.ElaborationError, match=re.escape(f"SystemError: {failures[0]}")):
                d.builder.elaborate(spec)
        assert len(ast_race.FAILURES) == left
    finally:
        ast_race.FAILURES.clear()


def test_a_factory_run_cpython_s_ast_failed_from_another_thread_runs_again() -> None:
    """A lazy-style factory is run, and its kernel's signature read, again where the race failed them."""
    from tests.kernels import ast_race

    ast_race.FAILURES[:] = [RACE] * (AST_RACE_TRIES - 1)
    try:
        kernel = ast_race.copy_factory(96)
        assert str(kernel.signature.param("X").tensor) == "Tensor[float32, 96]"
        assert ast_race.FAILURES == []
    finally:
        ast_race.FAILURES.clear()


# -- equal consts of other types: 2, 2.0 and True ----------------------------------------

SCALE = consts.scale._dispatcher
ANNOTATED = consts.annotated._dispatcher


def scale_args(factor: Any, block: Any = 64) -> tuple[Any, ...]:
    return (meta_tensor((256,), dtype=torch.int32), meta_tensor((256,)), factor, block)


@pytest.mark.parametrize(
    ("dispatcher", "name", "one", "other"),
    [
        (SCALE, "factor", 2, 2.0),
        (ANNOTATED, "count", 1, True),  # True is refused by the binder, but must not hit the kernel of 1
        (ANNOTATED, "scale", 1, 1.0),
        (ANNOTATED, "flag", True, 1),
        (ANNOTATED, "pair", (2, 2), (2.0, 2)),
        (ANNOTATED, "anything", 1, True),
        (ANNOTATED, "anything", (1, (2, 3)), (1, (2, 3.0))),
        (ANNOTATED, "anything", frozenset({1}), frozenset({1.0})),
        (ANNOTATED, "count", tl.tune([2, 4]), tl.tune([2.0, 4.0])),
        (ANNOTATED, "knob", consts.Knob(0.0), consts.Knob(-0.0)),
        (ANNOTATED, "anything", consts.Knob(0.0), consts.Knob(-0.0)),
    ],
)
def test_equal_consts_of_other_types_key_apart(dispatcher: Dispatcher, name: str, one: Any, other: Any) -> None:
    plain_one, plain_other = (one.values, other.values) if isinstance(one, tl.Tune) else (one, other)
    assert plain_one == plain_other and hash(plain_one) == hash(plain_other)  # what makes a plain key share them
    args = list(scale_args(2) if dispatcher is SCALE else (meta_tensor((4,)),))
    keys = []
    for value in (one, other):
        kwargs = {name: value}
        if dispatcher is SCALE:
            keys.append(dispatcher.key(*args[:2], **kwargs))
        else:
            keys.append(dispatcher.key(*args, **kwargs))
    assert keys[0] != keys[1]


def test_a_router_s_consts_route_apart_when_equal_values_of_other_types() -> None:
    """A kernel whose annotations are computed from consts resolves one signature per value, `1` apart from `True`
    (as the fast path keys consts), never routing one to the other's."""
    router = eager_style.body_names._dispatcher
    a, b = meta_tensor((8, 4), dtype=torch.float16), meta_tensor((8,))
    for trans in (False, 0, True, 1):
        eager_style.body_names(a.t() if trans else a, b, trans=trans)
    assert len(router.children) == 4, list(router.children)


def test_a_string_const_keys_by_value() -> None:
    """A TileLang dtype is a `str` equal to its name and compiles the same: no type in the key there."""
    import tilelang.language as T

    a = meta_tensor((4,))
    assert ANNOTATED.key(a, label="float16") == ANNOTATED.key(a, label=T.float16)
    assert ANNOTATED.key(a, label="float16") != ANNOTATED.key(a, label="float32")


def test_int_and_float_factors_compile_apart(monkeypatch: pytest.MonkeyPatch, sm90: str, tmp_path: Path) -> None:
    """The slow path's kernel table: `factor=2` and `factor=2.0` are two kernels (int32 vs float arithmetic)."""
    from tltyped.backend import compiler
    from tltyped.backend.kernel import CompiledKernel

    d = Dispatcher(consts.scale.__wrapped__, analyze(consts.scale.__wrapped__).signature, None)
    built: list[Any] = []

    def lowered_only(lowered: Any, signature: Any) -> CompiledKernel:  # nvcc's part is not under test here
        built.append(lowered)
        return CompiledKernel(launch=print, outputs=(), returns=(), written=(), folder=tmp_path / "unbuilt", compiled=True)

    monkeypatch.setattr(compiler, "compile_kernel", lowered_only)
    kernels = []
    for factor in (2, 2.0, 2):
        bound = d.binder.bind(scale_args(factor), allow_meta=True)
        kernels.append(d.kernel(bound, d.consts(bound), torch.device("meta")))
    assert d.kernels.compiles == 2
    assert kernels[0] is kernels[2] and kernels[0] is not kernels[1]
    int_source, float_source = (k.cuda_source.replace(" ", "") for k in built)
    assert "((float)(A[" in int_source and "*2))" in int_source  # the product in int32, then converted
    assert "*0x1p+1f" in float_source  # a float product


def test_fast_path_hit_needs_the_same_const_type() -> None:
    """A kernel stored for `factor=2` (CPU tensors, hand-filled) does not serve `factor=2.0`."""
    d = Dispatcher(consts.scale.__wrapped__, analyze(consts.scale.__wrapped__).signature, None)
    a, b = torch.empty(256, dtype=torch.int32), torch.empty(256)
    launches = Launches()
    d.launches[d.key(a, b, 2)] = launches
    d.fast_path.call(a, b, 2)
    assert len(launches.calls) == 1
    with pytest.raises(ValueError, match="argument 'A' is on cpu"):  # the slow path: no CUDA here
        d.fast_path.call(a, b, 2.0)
    with pytest.raises(TypeError, match="const parameter 'block' expects int, got bool True"):
        d.fast_path.call(a, b, 2, True)  # block=True would equal a stored block=1
    assert len(launches.calls) == 1


@needs_nvcc
def test_a_launch_record_naming_another_kernel_s_build_is_not_loaded(
    sm90, seed_gemm, compiled_seed_gemm, compiled_outputs
) -> None:
    """A record whose build is another kernel's (edited by hand, written by a bug) warns and is rebuilt: never run."""
    gemm = seed_gemm.gemm._dispatcher
    spec, target = gemm.bind_for_inspection((meta(1024, 512), meta(512, 256)), {})
    key = gemm.kernels.identity(spec, target).record
    record = records.read(records.LaunchRecord, key)
    assert record is not None and record.build == compiled_seed_gemm.folder.name
    records.write(key, replace(record, build=compiled_outputs.folder.name))
    fresh = Dispatcher(gemm.fn, gemm.signature, None)  # as a process that has not loaded it yet
    with pytest.warns(tl.CacheWarning, match=r"names the build of another kernel \('two_outputs'") as caught:
        kernel = fresh.kernels.load_or_build(spec, target)
    assert [w.filename for w in caught] == [__file__]  # the caller's line, not tltyped's
    assert kernel.folder == compiled_seed_gemm.folder  # rebuilt: its own build, found again by its content
    assert records.read(records.LaunchRecord, key) == record


@needs_nvcc
def test_a_launch_record_cut_short_warns_once_at_the_caller_s_line(sm90, seed_gemm, compiled_seed_gemm) -> None:
    """A record that does not parse (a full disk, a killed copy) is read twice by a call that loads (before and
    under the build's lock): one warning, at the line that called, even where every warning is shown, and past a
    library's frames between that line and tltyped (here contextlib's; torch's autograd in a training step)."""
    gemm = seed_gemm.gemm._dispatcher
    spec, target = gemm.bind_for_inspection((meta(1024, 512), meta(512, 256)), {})
    key = gemm.kernels.identity(spec, target).record
    path = cache.root() / f"{key}.json"
    whole = path.read_bytes()
    try:
        path.write_bytes(whole[:20])
        fresh = Dispatcher(gemm.fn, gemm.signature, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with contextlib.ExitStack() as library:  # contextlib's frame calls tltyped
                library.callback(fresh.kernels.load_or_build, spec, target)
        assert [(w.category, w.filename) for w in caught] == [(tl.CacheWarning, __file__)], [str(w.message) for w in caught]
        assert f"cache record {path} is unusable" in str(caught[0].message)
        kernel = fresh.kernels.load_or_build(spec, target)  # the record rebuilt whole: read without a warning
        assert kernel.folder == compiled_seed_gemm.folder  # the same build, found by its content
    finally:
        path.write_bytes(whole)


@needs_nvcc
def test_a_launch_record_cut_short_in_a_build_s_worker_thread_warns_at_tltyped_s_line(
    sm90, seed_gemm, compiled_seed_gemm
) -> None:
    """A build run in a worker thread (`par_compile`, the tuner's candidates) has no frame of the program's: the
    warning names tltyped's outermost frame in that thread, never a file of the standard library's threads."""
    import tltyped
    from tltyped.callpath.parallel import build_in_parallel

    gemm = seed_gemm.gemm._dispatcher
    spec, target = gemm.bind_for_inspection((meta(1024, 512), meta(512, 256)), {})
    key = gemm.kernels.identity(spec, target).record
    path = cache.root() / f"{key}.json"
    whole = path.read_bytes()
    package = Path(tltyped.__file__).resolve().parent
    try:
        path.write_bytes(whole[:-1])  # cut otherwise than above: a warning is given once per process and message
        fresh = Dispatcher(gemm.fn, gemm.signature, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (kernel,) = build_in_parallel("gemm", [lambda: fresh.kernels.load_or_build(spec, target)])
        assert not isinstance(kernel, Exception), kernel
        assert [w.category for w in caught] == [tl.CacheWarning], [str(w.message) for w in caught]
        assert f"cache record {path} is unusable" in str(caught[0].message)
        assert Path(caught[0].filename).resolve().is_relative_to(package), caught[0].filename
    finally:
        path.write_bytes(whole)


# -- the guard: launches kept while the values they were built from are bound alike ------------------------


@pytest.fixture
def rated_slow_path(monkeypatch: pytest.MonkeyPatch):
    """A fresh dispatcher of `rated` whose kernels are stand-ins built from `dispatch.RATE` as it is when the build
    reads it (as KernelTable reads the values), each returning (c, the RATE it was built from); `gates[c]`, when
    set, is waited on before a build of c returns, and `started[c]` is set when it has read RATE."""
    d = Dispatcher(dispatch.rated.__wrapped__, analyze(dispatch.rated.__wrapped__).signature, None)
    builds: Counter[Any] = Counter()
    gates: dict[int, threading.Event] = {}
    started: dict[int, threading.Event] = {}

    def kernel(bound: Any, consts: dict[str, Any], device: Any) -> Any:
        c, rate = consts["c"], dispatch.RATE
        builds[c] += 1
        started.setdefault(c, threading.Event()).set()
        if c in gates:
            assert gates[c].wait(timeout=30)
        return SimpleNamespace(launch=lambda n, stream, device: (c, rate))

    bind = d.binder.bind
    monkeypatch.setattr(d, "kernel", kernel)
    monkeypatch.setattr(d.binder, "bind", lambda args, **kw: replace(bind(args, **kw), device=torch.device("cuda", 0)))
    monkeypatch.setattr(d, "stream", lambda bound: 0)
    return d, builds, gates, started


def test_a_launch_built_before_a_rebinding_is_not_served_once_a_later_one_is_kept(
    rated_slow_path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two threads build while a global is rebound: the first read the old value and finishes first, the second read
    the new one. The second's guard (the new value) holds, so the first's launch, built from the old value, must not
    stay in `launches` to be served under it."""
    d, builds, gates, started = rated_slow_path
    gates[1], gates[2] = threading.Event(), threading.Event()
    results: dict[int, Any] = {}
    old = threading.Thread(target=lambda: results.update(old=d.slow(5, 1)))
    old.start()
    assert started.setdefault(1, threading.Event()).wait(timeout=30)  # built from RATE = 1.0
    monkeypatch.setattr(dispatch, "RATE", 2.0)
    new = threading.Thread(target=lambda: results.update(new=d.slow(5, 2)))
    new.start()
    assert started.setdefault(2, threading.Event()).wait(timeout=30)  # built from RATE = 2.0
    gates[1].set()
    old.join(timeout=30)
    gates[2].set()
    new.join(timeout=30)
    assert results == {"old": (1, 1.0), "new": (2, 2.0)}  # each call runs the kernel of the values it read
    assert unchanged(d.watched)
    assert d.slow(5, 1) == (1, 2.0), "a launch built from RATE = 1.0 was served after RATE became 2.0"
    assert all(launch(5, 0, 0)[1] == 2.0 for launch in d.launches.values())


def test_a_global_rebound_to_an_equal_value_keeps_the_launches(rated_slow_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop rebinding a global the body reads to an equal value at each step (a new float object each time) must
    not send every call to a build: the launches are kept, and served again while the global holds the new object;
    a value that differs is built from."""
    d, builds, _, _ = rated_slow_path
    assert d.slow(5, 1) == (1, 1.0) and d.slow(5, 2) == (2, 1.0)
    for step in range(3):
        monkeypatch.setattr(dispatch, "RATE", float("1.0"))  # equal, another object
        assert not unchanged(d.watched)
        assert d.slow(5, 1) == (1, 1.0) and d.slow(5, 2) == (2, 1.0)
        assert unchanged(d.watched), "the guard does not hold again: every call goes to the slow path"
    assert builds == {1: 1, 2: 1}
    monkeypatch.setattr(dispatch, "RATE", 3.0)
    assert d.slow(5, 1) == (1, 3.0) and d.slow(5, 2) == (2, 3.0)
    assert builds == {1: 2, 2: 2} and unchanged(d.watched)
