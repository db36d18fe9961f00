"""Fuzzing calls and `fn.lower(...)` with what a careless or hostile caller passes.

Each example starts from a valid call of one of the test kernels (between
them: tensors with const, dyn, literal and derived dims, a dtype variable,
strided layouts, dyn ints, floats and bools, ptrs, every kind of const
annotation, block sizes, hard names) and replaces one or two arguments with
something drawn from a pool: tensors of other dtypes, ranks, strides and
devices, zero and huge sizes, scalars where tensors belong and tensors
where scalars belong, None, containers, unhashable and badly-behaved objects
(a raising `__hash__`, `__repr__`, `__eq__`, `__bool__` or `__class__`),
tuning spaces and huge tensors. The call then goes through the jit function
(fast path, slow path) or through `lower`.

What must hold for every example:
- the process survives: the calls run in this process, so a crash (the
  SIGSEGV that `block=None` caused inside TVM) kills pytest and fails CI;
- an error is one of the package's own (a `tl.Error`: the binder's
  ArgumentTypeError or ArgumentValueError, a KernelBuildError or
  LoweringError from the build), never a bare builtin error, nor an
  internal AttributeError, KeyError, IndexError or AssertionError, not even
  one that a build error wraps: the cause of a build error may come from
  TileLang meeting a bad value, never from a bug in tltyped's own frames;
- its message (with its notes) names a parameter it concerns: one that was
  replaced, or for a call on this GPU-less machine the tensor whose device
  is refused;
- no tensor is formatted into a message (a tensor that records formatting
  is in the pool) and messages stay short.

A valid call is among the examples too, and `near` draws valid variants
(other sizes, other admitted consts), so a good share of examples reaches
elaboration and lowering, where the build's own errors come from.

Factory-made kernels get their own property: kernels made by one factory
with random closure values share a record (and so a build) exactly when
their values are equal.

Two hypothesis profiles: `fuzz-ci` (the default: derandomized, so CI runs
the same examples every time, and bounded) and `fuzz-thorough` (random and
much larger), chosen with TLTYPED_FUZZ_PROFILE.
"""

from __future__ import annotations

import inspect
import math
import os
import re
import traceback
from pathlib import Path
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import tltyped as tl
import tltyped.language as T
from tests.kernels import consts, dispatch, elementwise, factories, in_body, names, shapes
from tests.unit.hostile import (
    EqualsRaisingBool, RaisingBool, RaisingClass, RaisingEq, RaisingEverything, RaisingHash, RaisingRepr, Recorded,
)

pytestmark = pytest.mark.usefixtures("sm90")

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("fuzz-ci", max_examples=1000, derandomize=True, deadline=None, database=None,
                          suppress_health_check=_QUIET)
settings.register_profile("fuzz-thorough", max_examples=20000, deadline=None, suppress_health_check=_QUIET)
FUZZ = settings.get_profile(os.environ.get("TLTYPED_FUZZ_PROFILE", "fuzz-ci"))


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device="meta")


@dataclass(frozen=True)
class Case:
    fn: Any
    valid: Callable[[], dict[str, Any]]  # a valid call of `fn`, by parameter name (meta tensors)


CASES = [
    Case(consts.scale, lambda: dict(A=meta(256, dtype=torch.int32), B=meta(256), factor=2.0, block=64)),
    Case(consts.blocked, lambda: dict(A=meta(256), block=64, threads=128, rows=1)),
    Case(consts.annotated, lambda: dict(A=meta(4))),
    Case(elementwise.add_or_sub, lambda: dict(A=meta(64, 8), B=meta(64, 8), subtract=False)),
    Case(dispatch.keyed, lambda: dict(A=meta(3, 4, dtype=torch.float16), B=meta(5, 4), x=0, flag=False, block=64)),
    Case(dispatch.scalar_only, lambda: dict(n=1, c=0)),
    Case(shapes.with_scalars, lambda: dict(A=meta(4), n=1, p=0)),
    Case(shapes.derived, lambda: dict(A=meta(8), B=meta(17, 2))),
    Case(shapes.four_columns, lambda: dict(A=meta(3, 4))),
    Case(in_body.scale_rows, lambda: dict(A=meta(64, 8), B=meta(64, 8), alpha=1.0, block_M=64)),
    Case(in_body.typed_scalars, lambda: dict(A=meta(16), half_value=1.5, double_value=2.5, big_count=3, enabled=True)),
    Case(names.keywords, lambda: dict(stream=meta(256), error_buf=meta(256), new=1, this=2.0, int=0, flag=True)),
]


# -- the pool ---------------------------------------------------------------------------


DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int32, torch.int64,
          torch.uint8, torch.bool, torch.complex64, torch.float8_e4m3fn, torch.float8_e5m2]
SIZES = [0, 1, 3, 4, 8, 17, 64, 256, 2**31, 2**40]


@st.composite
def tensors(draw: st.DrawFn) -> torch.Tensor:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.sampled_from(SIZES), max_size=4))
    while math.prod(max(size, 1) for size in shape) > 2**56:  # what torch can describe at all, in bytes
        shape[shape.index(max(shape))] = 1
    device = "cpu" if math.prod(shape) <= 4096 and draw(st.booleans()) else "meta"
    layout = draw(st.sampled_from(["contiguous", "contiguous", "transposed", "strided"]))
    if layout == "transposed" and len(shape) >= 2:
        return torch.empty(shape, dtype=dtype, device=device).transpose(0, 1)
    if layout == "strided" and device == "meta":
        strides = [draw(st.sampled_from([0, 1, 2, 7, 64, 2**32])) for _ in shape]
        if sum((size - 1) * stride for size, stride in zip(shape, strides)) < 2**56:
            return torch.empty(0, dtype=dtype, device="meta").as_strided(shape, strides, draw(st.sampled_from([0, 1, 4])))
    return torch.empty(shape, dtype=dtype, device=device)


SCALARS = st.one_of(
    st.integers(-(2**70), 2**70), st.sampled_from([0, -1, 1, 2, 64, 1024, 2048, 2**31, 2**63, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(), st.text(max_size=4),
    st.binary(max_size=3), st.complex_numbers(max_magnitude=1e3),
    st.sampled_from(["float16", "bogus", torch.float16, tl.float16, T.float32, torch.device("cpu"), Ellipsis]),
)


@dataclass(frozen=True)
class Later:
    """A value made only in the test's body: hypothesis itself must not meet its raising methods."""

    make: Callable[[], Any]
    label: str

    def __repr__(self) -> str:
        return self.label


BADLY_BEHAVED = st.sampled_from([RaisingHash, RaisingRepr, RaisingEq, RaisingBool, EqualsRaisingBool, RaisingClass, RaisingEverything]).map(
    lambda cls: Later(cls, f"{cls.__name__}()")
)
SPECIAL = st.sampled_from([
    Later(lambda: meta(2**16, 2**16, dtype=torch.float8_e4m3fn), "a float8 meta tensor of 2**32 elements"),
    Later(lambda: torch.empty(2, 3).as_subclass(Recorded), "a tensor that records its formatting"),
    Later(lambda: torch.tensor(1.5), "a 0-dim CPU tensor"),
    Later(lambda: 10**5000, "10**5000, too long for str()"),
])
VALUES = st.one_of(
    tensors(), SCALARS, BADLY_BEHAVED, SPECIAL,
    st.tuples(SCALARS, SCALARS), st.lists(SCALARS, max_size=2), st.dictionaries(st.text(max_size=1), SCALARS, max_size=1),
    st.frozensets(st.integers(0, 3), max_size=2), st.lists(st.integers(1, 256), min_size=1, max_size=2).map(tl.tune),
)


def near(value: Any) -> st.SearchStrategy[Any]:
    """Values close to a valid one, which get further (into the build) than arbitrary values do."""
    if isinstance(value, torch.Tensor):
        shape = list(value.shape)
        return st.one_of(
            st.sampled_from(DTYPES).map(lambda dtype: torch.empty(shape, dtype=dtype, device="meta")),
            st.tuples(st.integers(0, max(len(shape) - 1, 0)), st.sampled_from(SIZES)).map(
                lambda change: meta(*(change[1] if axis == change[0] else s for axis, s in enumerate(shape)),
                                    dtype=value.dtype)
            ),
            st.just(value.unsqueeze(0)), st.just(value.reshape(-1)[:1].reshape([])), st.just(value),
            st.sampled_from([2, 4, 16, 128]).map(lambda size: meta(*[size] * len(shape), dtype=value.dtype)),
            st.just(torch.empty(shape, dtype=value.dtype)),
            st.just(meta(*shape[::-1], dtype=value.dtype).t() if len(shape) == 2 else value),
        )
    if type(value) is bool:
        return st.sampled_from([not value, not value, 0, 1, None])
    if type(value) is int:
        return st.sampled_from(
            [value, value // 2, value * 2, value + 1, 0, -1, 1, 1024, 2048, 2**31, 2**64, True, float(value), None]
        )
    if type(value) is float:
        return st.sampled_from([0.5, 3, -1.0, float("nan"), float("inf"), 1e39, 70000.0, True, None])
    return VALUES


@st.composite
def fuzzed_calls(draw: st.DrawFn) -> tuple[Case, dict[str, Any], set[str], str, bool]:
    case = draw(st.sampled_from(CASES))
    args = case.valid()
    parameters = list(inspect.signature(case.fn.__wrapped__).parameters)
    replaced = {draw(st.sampled_from(parameters)) for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2])))}
    for name in replaced:
        valid = args.get(name, case.fn.signature.param(name).default)
        args[name] = draw(st.one_of(near(valid), near(valid), VALUES))
    return case, args, replaced, draw(st.sampled_from(["call", "lower", "lower"])), draw(st.booleans())


# -- the property -------------------------------------------------------------------------

INTERNAL_ERRORS = (AttributeError, KeyError, IndexError, AssertionError, NameError, UnboundLocalError)
PACKAGE = str(Path(tl.__file__).resolve().parent)


def internal_cause(exc: BaseException) -> BaseException | None:
    """An internal error that `exc` wraps (its causes, transitively) and that was raised in tltyped's own code."""
    cause = exc.__cause__
    while cause is not None:
        frames = traceback.extract_tb(cause.__traceback__)
        if isinstance(cause, INTERNAL_ERRORS) and frames and str(Path(frames[-1].filename).resolve()).startswith(PACKAGE):
            return cause
        cause = cause.__cause__
    return None


def run(case: Case, args: dict[str, Any], route: str, by_keyword: bool) -> None:
    target = case.fn if route == "call" else case.fn.lower
    positional: list[Any] = []
    if not by_keyword:  # the longest run of leading parameters given, positionally; the rest by keyword
        for name in inspect.signature(case.fn.__wrapped__).parameters:
            if name not in args:
                break
            positional.append(args[name])
    given = list(inspect.signature(case.fn.__wrapped__).parameters)[: len(positional)]
    target(*positional, **{name: value for name, value in args.items() if name not in given})


def names_a_parameter(text: str, candidates: set[str]) -> bool:
    return any(re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text) for name in candidates)


@FUZZ
@given(fuzzed_calls())
def test_fuzzed_calls_fail_cleanly(example: tuple[Case, dict[str, Any], set[str], str, bool]) -> None:
    case, args, replaced, route, by_keyword = example
    args = {name: value.make() if isinstance(value, Later) else value for name, value in args.items()}
    Recorded.formatted.clear()
    try:
        run(case, args, route, by_keyword)
        event(f"{route}: accepted")
    except tl.LaunchError as exc:  # a call of a kernel without tensors asks for the current CUDA device
        assert route == "call" and not case.fn.signature.tensors and "no CUDA device" in str(exc), repr(exc)
    except INTERNAL_ERRORS as exc:
        raise AssertionError(f"an internal {type(exc).__name__} leaked from {route} with {replaced} replaced") from exc
    except tl.Error as exc:
        event(f"{route}: {type(exc).__name__}")
        inside = internal_cause(exc)
        assert inside is None, f"{route} with {replaced} replaced: a bug in tltyped wrapped as {type(exc).__name__}: {inside!r}"
        text = "\n".join([str(exc), *getattr(exc, "__notes__", [])])
        allowed = set(replaced)
        if route == "call":  # no GPU here: the first tensor on a device other than CUDA is refused
            allowed |= {p.name for p in case.fn.signature.tensors}
        assert names_a_parameter(text, allowed), f"{route} with {sorted(replaced)} replaced: {text}"
        assert len(text) < 2000 and "tensor(" not in text, text
    assert Recorded.formatted == []


def test_the_fuzzer_reaches_builds_and_every_kind_of_error() -> None:
    """The pool and the valid calls are rich enough: a bounded run sees builds and errors of each source."""
    seen: dict[str, int] = {}

    @settings(max_examples=150, derandomize=True, deadline=None, database=None, suppress_health_check=_QUIET)
    @given(fuzzed_calls())
    def sample(example: tuple[Case, dict[str, Any], set[str], str, bool]) -> None:
        case, args, _, route, by_keyword = example
        args = {name: value.make() if isinstance(value, Later) else value for name, value in args.items()}
        try:
            run(case, args, "lower", by_keyword)
            outcome = "lowered"
        except Exception as exc:  # noqa: BLE001 - counted, checked by the property above
            outcome = type(exc).__name__
        seen[outcome] = seen.get(outcome, 0) + 1

    sample()
    assert {"lowered", "ArgumentTypeError", "ArgumentValueError"} <= set(seen), seen
    assert seen["lowered"] >= 0.1 * sum(seen.values()), seen  # a tenth of the examples reach a lowered kernel


# -- kernels made by a factory --------------------------------------------------------

OPS = {"add": lambda x, s: x + s, "mul": lambda x, s: x * s, "sub": lambda x, s: x - s, "max": lambda x, s: T.max(x, s)}


@st.composite
def factory_values(draw: st.DrawFn) -> tuple[str, float, int, Any]:
    """What a factory's closure holds: an op, a scale (signed zeros and all), a thread count, a dtype."""
    return (draw(st.sampled_from(sorted(OPS))), draw(st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, -3.0])),
            draw(st.sampled_from([32, 64, 128, 256])), draw(st.sampled_from([tl.float32, tl.float16])))


def made(values: tuple[str, float, int, Any]) -> tuple[Any, str | None]:
    """The factory's kernel, and the record a call of it on 256 elements would use."""
    op, scale, threads, dtype = values
    kernel = factories.make_map(OPS[op], scale, threads, dtype)
    tensor = meta(256, dtype=torch.float16 if dtype is tl.float16 else torch.float32)
    spec, target = kernel._dispatcher.bind_for_inspection((tensor, tensor), {})
    return kernel, kernel._dispatcher.kernels.identity(spec, target).record


def texts(values: tuple[str, float, int, Any]) -> tuple[str, ...]:
    return tuple(repr(v) for v in values)  # -0.0 and 0.0 apart, as they compile


@settings(FUZZ, max_examples=300)
@given(factory_values(), factory_values())
def test_factory_kernels_share_a_record_exactly_when_their_values_are_equal(
    one: tuple[str, float, int, Any], two: tuple[str, float, int, Any],
) -> None:
    (_, first), (_, second) = made(one), made(two)
    assert first is not None and second is not None
    assert (first == second) == (texts(one) == texts(two)), (one, two)

