"""User names in generated Python and C++, and the launcher's argument conversion against the binder.

One kernel (tests/kernels/names.py) carries every hard name at once: a
crafted `__name__` (quotes, `%`, `??/`, comment delimiters, newlines, a
preprocessor line), parameters named `stream`, `error_buf`, `new`, `this`
and `int`, a dyn dim named `int`, and consts named like the fast path's
variables. It is built once with nvcc (on meta tensors, no GPU needed); its
real launcher is then called directly and through the fast path. On a
machine without a GPU a launch that gets past the argument conversion fails
with "kernel launch failed" (with "launches on a CUDA device" where its
tensors are on the CPU), which is how these tests see that it did.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch

from tests.conftest import has_nvcc, meta, no_gpu, target_env
from tests.kernels import names
from tltyped.callpath.dispatcher import Dispatcher
from tltyped.frontend.analyze import analyze
from tltyped.templates.names import c_names, c_string, identifier

pytestmark = pytest.mark.usefixtures("sm90")

KERNEL = names.keywords


@pytest.fixture(scope="module")
def compiled() -> Any:
    """nvcc build of this module: the kernel of hard names, for sm_90a."""
    if not has_nvcc():
        pytest.skip("nvcc is not available")
    with target_env("sm_90a"):
        return KERNEL.compile(meta(256, dtype=torch.float32), meta(256, dtype=torch.float32), 1, 2.0, 0, True)


def launch_args(**changes: Any) -> list[Any]:
    """What the fast path passes: pointers (to memory apart: the kernel writes `error_buf`), new, this, int, flag,
    the dyn dim, stream, device."""
    values = dict(stream=0x10000, error_buf=0x20000, new=1, this=2.0, int=0, flag=True, dim=256, cuda_stream=0, device=0)
    values.update(changes)
    return list(values.values())


# -- names -----------------------------------------------------------------------------


def test_the_crafted_name_compiles_as_a_safe_symbol(compiled: Any) -> None:
    symbol = identifier(names.CRAFTED)
    assert symbol.isidentifier() and symbol.isascii()
    assert f"{symbol}_kernel(" in compiled.cuda_source
    assert names.CRAFTED not in compiled.cuda_source


def test_parameters_named_like_cpp_keywords_and_launcher_variables(compiled: Any) -> None:
    declaration = next(line for line in compiled.cuda_source.splitlines() if "__global__" in line)
    for name in ("stream_", "error_buf_", "new_", "this_", "int_"):
        assert f" {name}" in declaration or f"*__restrict__ {name}" in declaration.replace(" ", "")
    assert "int new," not in declaration and "float this" not in declaration.replace("this_", "")


def test_the_launcher_reports_the_crafted_name_verbatim(compiled: Any) -> None:
    """The name went into C as a string literal and comes back out unchanged, `%` and newlines included."""
    with pytest.raises(TypeError) as info:
        compiled.launch(*launch_args(new=True))
    assert str(info.value) == f"{names.CRAFTED}: argument 'new' expects an int, got bool"


def test_the_fast_path_names_its_variables_apart_from_the_parameters() -> None:
    """`_tl_stream` and `_tl_p0` are parameters here: the fast path picks another prefix and keeps its stream."""
    source = KERNEL.fast_path_source
    assert "_tl0_stream" in source and f"def {identifier(names.CRAFTED)}(" in source
    d = Dispatcher(KERNEL.__wrapped__, analyze(KERNEL.__wrapped__).signature, None)
    a, b = torch.empty(256), torch.empty(256)
    calls: list[tuple[Any, ...]] = []
    d.launches[d.key(a, b, 1, 2.0, 0, True, 7, 9)] = lambda *args: calls.append(args)
    d.fast_path.call(a, b, 1, 2.0, 0, True, _tl_stream=7, _tl_p0=9)
    ((*launched, given_a, given_b),) = calls
    assert launched == [a.data_ptr(), b.data_ptr(), 1, 2.0, 0, True, 256, 0, -1]  # CPU tensors: stream 0, device -1
    assert given_a is a and given_b is b


@pytest.mark.parametrize(
    ("name", "expected"),
    [("gemm[fp16]", "gemm_fp16_"), ("int", "_int"), ("class", "_class"), ("9lives", "_9lives"), ("", "_"),
     ("größe", "gr__e")],
)
def test_identifier(name: str, expected: str) -> None:
    assert identifier(name) == expected


def test_c_names_are_safe_and_distinct() -> None:
    names_ = ["A", "stream", "stream_", "new", "_tl_x", "half_t", "N", "N", "gemm[fp16]"]
    assert c_names(names_, reserved=["A_desc"]) == [
        "A", "stream_1", "stream_", "new_", "tl_x", "half_t_", "N", "N_", "gemm_fp16_"]
    assert c_names(["A_desc"], reserved=["A_desc"]) == ["A_desc_"]


def test_c_string_round_trips() -> None:
    literal = c_string(names.CRAFTED + "é")
    assert "\n" not in literal and literal.startswith('"') and literal.endswith('"')
    decoded = re.sub(r"\\(\d{3}|.)", lambda m: chr(int(m[1], 8)) if m[1].isdigit() else m[1], literal[1:-1])
    assert decoded.encode("latin-1").decode("utf-8") == names.CRAFTED + "é"


# -- the launcher takes exactly what the binder admits -------------------------------------


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (dict(new=True), TypeError, "argument 'new' expects an int, got bool"),
        (dict(new=1.0), TypeError, "argument 'new' expects an int, got float"),
        (dict(new=2**31), OverflowError, "argument 'new' = 2147483648 is out of range [-2147483648, 2147483647]"),
        (dict(new=2**70), OverflowError, "argument 'new' does not fit in 64 bits"),
        (dict(this=True), TypeError, "argument 'this' expects a float, got bool"),
        (dict(this=10**400), OverflowError, "argument 'this' does not fit in a double"),
        (dict(int=-1), OverflowError, "argument 'int' is not a device address (an int >= 0)"),
        (dict(int=1.0), TypeError, "argument 'int' expects a device address (an int >= 0), got float"),
        (dict(flag=1), TypeError, "argument 'flag' expects a bool, got int"),
        (dict(stream=True), TypeError, "argument 'stream' expects a device address (an int >= 0), got bool"),
        (dict(dim=2**31), OverflowError, "argument 'dim int' = 2147483648 is out of range [-2147483648, 2147483647]"),
    ],
)
def test_the_launcher_refuses_what_the_binder_refuses(
    compiled: Any, change: dict[str, Any], error: type, message: str
) -> None:
    with pytest.raises(error) as info:
        compiled.launch(*launch_args(**change))
    assert str(info.value) == f"{names.CRAFTED}: {message}"


@no_gpu
def test_the_launcher_takes_what_the_binder_takes(compiled: Any) -> None:
    for change in ({}, dict(this=3), dict(this=float("nan")), dict(flag=False), dict(int=2**64 - 1)):
        with pytest.raises(RuntimeError, match="kernel launch failed"):  # past the conversion: no GPU here
            compiled.launch(*launch_args(**change))


@pytest.mark.parametrize(
    ("change", "message"),
    names.REFUSED,
)
def test_a_cached_call_with_a_refused_value_gets_the_binders_error(
    compiled: Any, change: dict[str, Any], message: str
) -> None:
    """The fast path hits the real launcher, which refuses the value; the slow path's binder says why."""
    d = Dispatcher(KERNEL.__wrapped__, analyze(KERNEL.__wrapped__).signature, None)
    a, b = torch.empty(256), torch.empty(256)
    d.launches[d.key(a, b, 1, 2.0, 0, True)] = compiled.launch
    values = {**dict(new=1, this=2.0, int=0, flag=True), **change}
    with pytest.raises((TypeError, ValueError)) as info:
        d.fast_path.call(a, b, *values.values())
    assert str(info.value) == f"{names.CRAFTED}: {message}"
    assert d.cache_info().hits == 0 and d.cache_info().misses == 1


@no_gpu
def test_a_cached_call_with_admitted_values_reaches_the_launch(compiled: Any) -> None:
    d = Dispatcher(KERNEL.__wrapped__, analyze(KERNEL.__wrapped__).signature, None)
    a, b = torch.empty(256), torch.empty(256)
    d.launches[d.key(a, b, 1, 2.0, 0, True)] = compiled.launch
    with pytest.raises(ValueError, match="launches on a CUDA device"):  # past the conversion: CPU tensors
        d.fast_path.call(a, b, 5, 3, 2**40, False)
    assert d.cache_info().misses == 0


def test_a_name_with_a_nul_character() -> None:
    lowered = names.nul_named.lower(meta(256, dtype=torch.float32))
    assert "nul_named_kernel(" in lowered.cuda_source
    assert names.nul_named.__name__ == "nul\0named"


class RefusingLaunch:
    """A cache entry's launch that refuses its dyn value, as a launcher does: the call must go to the slow path."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        raise TypeError("refused")


def test_parameters_named_like_the_exceptions_the_fast_path_catches() -> None:
    signature = analyze(names.shadowing.__wrapped__).signature
    d = Dispatcher(names.shadowing.__wrapped__, signature, None)
    a = torch.empty(256)
    with pytest.raises(ValueError, match="argument 'Exception' is on cpu"):  # a miss: the slow path's own error
        d.fast_path.call(a, 3)
    launch = d.launches[d.key(a, 3, 1)] = RefusingLaunch()
    with pytest.raises(ValueError, match="argument 'Exception' is on cpu"):  # a refused hit: the slow path too
        d.fast_path.call(a, 3, OverflowError=1)
    assert launch.calls >= 1  # the C cached call and the generated fast path each try it
