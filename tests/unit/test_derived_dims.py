"""Derived dims in the kernel: symbolic over dyn dims (one kernel for every N), folded over const dims."""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch

import tltyped as tl

from examples.interleave import interleave, interleave_into
from tests.conftest import needs_nvcc
from tests.kernels import shapes


def meta(*shape: int) -> torch.Tensor:
    return torch.empty(*shape, dtype=torch.float32, device="meta")


def test_derived_dim_over_a_dyn_dim_stays_symbolic() -> None:
    small = interleave.lower(meta(10), meta(10), meta(21), 1.0)
    large = interleave.lower(meta(1000), meta(1000), meta(2001), 1.0)
    assert small.cuda_source == large.cuda_source
    assert "N * 2 + 1" in small.tir  # Out's extent, in terms of the one dyn variable


def test_signature_form_relation_over_dyn_dims_compiles_once() -> None:
    small = interleave_into.lower(meta(10), meta(10), meta(21), 1.0)
    large = interleave_into.lower(meta(33), meta(33), meta(67), 1.0)
    assert small.cuda_source == large.cuda_source


def test_derived_dim_over_a_const_dim_folds_and_specialises() -> None:
    five = shapes.derived.lower(meta(5), meta(11, 2))
    nine = shapes.derived.lower(meta(9), meta(19, 3))
    assert "(11, 2)" in five.tir and "(19, 3)" in nine.tir  # 2*N+1 and ceildiv(N, 4), folded
    assert five.tir != nine.tir


def test_shape_assert_over_a_dyn_dim_is_checked_by_the_call_not_built_into_the_kernel() -> None:
    lowered = shapes.asserted_then_allocates.lower(meta(16))
    assert not re.search(r"^\s*(assert|T\.Assert)\b", lowered.tir, re.MULTILINE)
    assert lowered.cuda_source == shapes.asserted_then_allocates.lower(meta(4096)).cuda_source
    with pytest.raises(ValueError, match=r"shape check `A.shape\[0\] // 4 \* 4 == A.shape\[0\]` fails: A.shape\[0\] // 4 \* 4 is 8, not 10 \(L = 10 from A, axis 0\): the length must be a multiple of 4$"):
        shapes.asserted_then_allocates.lower(meta(10))


def ints(*shape: int, device: str = "meta") -> torch.Tensor:
    return torch.empty(*shape, dtype=torch.int32, device=device)


def test_a_dyn_dim_only_in_an_affine_size_is_solved_from_it() -> None:
    """TileLang's `T.Tensor((n * 4,), ...)` with n in no other size: 16 elements give n = 4, for one kernel of
    every n; a size that is `n * 4` for no n >= 0 is refused, naming it."""
    from tests.kernels import eager_style

    binder = eager_style.zero_quads._dispatcher.binder
    bound = binder.bind((ints(16),), allow_meta=True)
    assert bound.dims == {"n": 4} and bound.dim_origin == {"n": "A, axis 0 = n * 4"}
    with pytest.raises(ValueError, match=r"^zero_quads: argument 'A': dim 0 is 18, which is n \* 4 for no n >= 0$"):
        binder.bind((ints(18),), allow_meta=True)
    assert eager_style.zero_quads.lower(ints(16)).cuda_source == eager_style.zero_quads.lower(ints(4096)).cuda_source


def test_a_solved_dim_checks_every_other_size_of_it() -> None:
    """A lazy-style factory's `T.symbolic("n")` in `(n + 1,)` and `(n * 2 + 1,)`: the first gives n, the second is
    checked against it; 0 elements are `n + 1` for no n >= 0."""
    from tests.kernels import lazy_style

    kernel = lazy_style.zero_all_but_last()
    binder = kernel._dispatcher.binder
    assert binder.bind((ints(16), ints(31)), allow_meta=True).dims == {"n": 15}
    with pytest.raises(ValueError, match=r"argument 'B': dim 0 is n \* 2 \+ 1 = 31 \(n = 15 from A, axis 0 = n \+ 1\), got 30$"):
        binder.bind((ints(16), ints(30)), allow_meta=True)
    with pytest.raises(ValueError, match=r"argument 'A': dim 0 is 0, which is n \+ 1 for no n >= 0$"):
        binder.bind((ints(0), ints(1)), allow_meta=True)


def test_the_fast_path_solves_the_dim_and_checks_the_sizes_as_the_binder_does() -> None:
    """The generated fast path launches with n = (size - 1) // 1 read from A, and leaves a size the binder
    would refuse to the slow path (CPU tensors, a recording launch standing for the kernel)."""
    from tests.kernels import lazy_style
    from tltyped.callpath import fastpath

    dispatcher = lazy_style.zero_all_but_last()._dispatcher
    launched: list[tuple[object, ...]] = []
    launches: dict[object, object] = {}
    path = fastpath.build_fast_path(dispatcher.plan, dispatcher.fast_path_source, launches, lambda *a: "slow")
    assert not dispatcher.plan.in_c  # its checks are the generated Python's
    a, b = ints(16, device="cpu"), ints(31, device="cpu")
    launches[path.key(a, b)] = lambda *args: launched.append(args) or "launched"
    assert path.call(a, b) == "launched"
    ((*arguments, given_a, given_b),) = launched  # the call's tensors last: the launch bumps those it writes
    assert arguments == [a.data_ptr(), b.data_ptr(), 15, 0, -1] and given_a is a and given_b is b
    assert path.call(a, ints(30, device="cpu")) == "slow"  # B is not n * 2 + 1
    assert path.call(ints(0, device="cpu"), ints(1, device="cpu")) == "slow"  # n would be -1


@needs_nvcc
def test_a_kernel_of_a_solved_dim_builds(sm90) -> None:
    from tests.kernels import eager_style

    kernel = eager_style.zero_quads.compile(ints(16))
    assert kernel.compiled or kernel.folder.exists()
    assert kernel(ints(4096)).__class__ is type(None)  # a meta call of another n: the same kernel, nothing returned


def _kernel(tmp_path, source: str, postponed: bool, prefix: str = "") -> Any:
    """`@tl.jit` on the `kernel` that `source` defines, in a module of its own (with postponed annotations where
    `postponed`) after `prefix`."""
    path = tmp_path / "kernel_module.py"
    future = "from __future__ import annotations\n" if postponed else ""
    path.write_text(f"{future}import tltyped as tl\nimport tltyped.language as T\n{prefix}\n@tl.jit\n{source}")
    namespace: dict[str, Any] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["kernel"]


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize(("body", "expected"), [
    ("L = N * 2\n    L += 1\n    X: T.Tensor[[L], T.float32]", "X: Tensor[float32, N * 2 + 1]"),
    ("L = N\n    L *= 2\n    X: T.Tensor[[L], T.float32]", "X: Tensor[float32, N * 2]"),
    ("L = N\n    for _ in range(2):\n        L = L * 2\n    X: T.Tensor[[L], T.float32]", "X: Tensor[float32, N * 2 * 2]"),
    ("L = N * 2\n    X: T.Tensor[[L], T.float32]\n    L = N * 4\n    Y: T.Tensor[[L, N], T.float32]",
     "X: Tensor[float32, N * 2], Y: Tensor[float32, N * 4, N]"),
    ("shape = (N,)\n    shape += (4,)\n    X: T.Tensor(shape, T.float32)", "X: Tensor[float32, N, 4]"),
    ("L = N * 2\n    L += 1\n    M = L + 1\n    X: T.Tensor[[M], T.float32]", "X: Tensor[float32, N * 2 + 1 + 1]"),
    ("L = N\n    for _ in range(2):\n        L = L * 2\n    M = L\n    X: T.Tensor[[M], T.float32]",
     "X: Tensor[float32, N * 2 * 2]"),
    ("L = N * 2\n    _ = [(L := L + 1) for _ in range(1)]\n    X: T.Tensor[[L], T.float32]",
     "X: Tensor[float32, N * 2 + 1]"),
    ("import math\n    L = N * 2\n    L += math.floor(1)\n    X: T.Tensor[[L], T.float32]",
     "X: Tensor[float32, N * 2 + 1]"),
    ("L = N * 2; L += 1\n    X: T.Tensor[[L], T.float32]", "X: Tensor[float32, N * 2 + 1]"),
    ("shape = [N]\n    shape.append(4)\n    X: T.Tensor(shape, T.float32)", "X: Tensor[float32, N, 4]"),
    ("s = [N, 4]\n    s[1] += 4\n    X: T.Tensor(s, T.float32)", "X: Tensor[float32, N, 8]"),
    ("s = [N, 4]\n    s[1] = 8\n    X: T.Tensor(s, T.float32)", "X: Tensor[float32, N, 8]"),
    ("L = N * 2\n    match N * 4:\n        case L:\n            pass\n    X: T.Tensor[[L], T.float32]",
     "X: Tensor[float32, N * 4]"),
    ("M = T.dynamic(\"m\")\n    X: T.Tensor[[M, N], T.float32]\n    M = M * 2\n    Y: T.Tensor[[M], T.float32]",
     "X: Tensor[float32, m, N], Y: Tensor[float32, m * 2]"),
    ("M = T.dynamic(\"m\")\n    M += 1\n    X: T.Tensor[[M, N], T.float32]", "X: Tensor[float32, m + 1, N]"),
    ("Y: T.Tensor[[N], T.float32]\n    N = N * 2\n    X: T.Tensor[[N], T.float32]",
     "X: Tensor[float32, N * 2], Y: Tensor[float32, N]"),
    ("Y: T.Tensor[[N], T.float32]\n    N += 1\n    X: T.Tensor[[N], T.float32]",
     "X: Tensor[float32, N + 1], Y: Tensor[float32, N]"),
    ("L = N * 2\n    K = L; L = N * 4\n    X: T.Tensor[[K, L], T.float32]", "X: Tensor[float32, N * 2, N * 4]"),
    ("L = N * 2\n    X: T.Tensor[[L], T.float32]\n    def grow():\n        nonlocal L\n        L = N * 4",
     "X: Tensor[float32, N * 2]"),
    ("Y: T.Tensor[[N], T.float32]\n    (n,) = Y.shape\n    n += 1\n    X: T.Tensor[[n], T.float32]",
     "X: Tensor[float32, N + 1], Y: Tensor[float32, N]"),
    ("Y: T.Tensor[[N, 4], T.float32]\n    n, k = Y.shape\n    k = n * 2\n    X: T.Tensor[[k, n], T.float32]",
     "X: Tensor[float32, N * 2, N], Y: Tensor[float32, N, 4]"),
    ("L = N * 2\n    s = (L,)\n    K = L + 1\n    def grow():\n        nonlocal L\n        L = N * 4\n    grow()\n"
     "    X: T.Tensor(s, T.float32)\n    Y: T.Tensor[[K], T.float32]", "X: Tensor[float32, N * 2], Y: Tensor[float32, N * 2 + 1]"),
])
def test_a_name_the_body_binds_again_sizes_a_tensor_as_it_is_at_the_annotation(
    tmp_path, body: str, expected: str, postponed: bool,
) -> None:
    """A derived dim's name bound again (`L += 1`, in a loop, after one annotation and before another, a declared
    dim's variable too) is the value TileLang's run of the body gives it at the annotation's line, not its first (or
    last) assignment's: read so, a tensor's size is what the kernel's code indexes. A nested function rebinding it
    after the annotation, or after the statements computing the annotation's value, changes nothing there."""
    kernel = _kernel(tmp_path, f"def kernel(X, Y):\n    N = T.dynamic(\"N\")\n    {body}\n", postponed)
    assert str(kernel.signature).startswith(f"kernel({expected}")


@pytest.mark.parametrize(("postponed", "shape", "expected"), [
    (False, "(L,)", "Tensor[float32, 8]"),
    (True, "(L, N)", "Tensor[float32, 8, N]"),  # the body's dims too: read from source, not as the def evaluated it
], ids=["evaluated", "postponed"])
def test_an_annotation_in_the_def_reads_none_of_the_body_s_aliases(
    tmp_path, postponed: bool, shape: str, expected: str,
) -> None:
    """TileLang's `T.Tensor` in the def names the module's `L`, not the alias the body binds to it."""
    kernel = _kernel(tmp_path, f"def kernel(X: TL.Tensor[{shape}, TL.float32], Y):\n    N = T.dynamic(\"N\")\n"
                     "    L = N * 2\n    Y: T.Tensor[[L], T.float32]\n", postponed,
                     prefix="import tilelang.language as TL\nL = 8\n")
    assert str(kernel.signature).startswith(f"kernel(X: {expected}, Y: Tensor[float32, N * 2]")


SAME_LINE = {  # a case -> the body after `N = T.dynamic("N")` and Y's annotation, X's type, X's size where N is 8
    "a derived dim": ("L = N * 4; X: T.Tensor[[L], T.float32]", "Tensor[float32, N * 4]", 32),
    "a derived dim bound again": ("L = N * 2\n    L = N * 4; X: T.Tensor[[L], T.float32]", "Tensor[float32, N * 4]", 32),
    "a declared dim bound again": ("N = N * 2; X: T.Tensor[[N], T.float32]", "Tensor[float32, N * 2]", 16),
    "a computed shape": ("s = (N * 3,); X: T.Tensor(s, T.float32)", "Tensor[float32, N * 3]", 24),
    "a shape either order": ("s = [N * 2]; X: T.Tensor[s, T.float32]", "Tensor[float32, N * 2]", 16),
    "a scalar parameter bound again": ("M = M * 2; X: T.Tensor[[M], T.float32]", "Tensor[float32, M * 2]", 8),
    "a const parameter bound again": ("dtype = T.float32; X: T.Tensor[[N], dtype]", "Tensor[float32, N]", 8),
}


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("case", list(SAME_LINE))
def test_an_annotation_reads_a_name_bound_before_it_on_its_line(tmp_path, case: str, postponed: bool) -> None:
    """`L = N * 4; X: T.Tensor[[L], T.float32]`: TileLang's run of the body binds L before it evaluates the
    annotation, so X is N * 4 elements, and the kernel builds (the body's run states what decoration read)."""
    body, expected, size = SAME_LINE[case]
    source = ("def kernel(X, Y, M: T.int32, dtype: T.dtype = T.float16):\n    N = T.dynamic(\"N\")\n"
              f"    Y: T.Tensor[[N], T.float32]\n    {body}\n"
              "    with T.Kernel(1, threads=32) as bx:\n        X[0] = Y[0]\n")
    kernel = _kernel(tmp_path, source, postponed)
    assert str(kernel.signature).startswith(f"kernel(X: {expected}, Y: Tensor[float32, N]")
    kernel.lower(meta(size), meta(8), 4)


REBOUND_BY_NESTED = {  # a case -> the body after `N = T.dynamic("N")`, the name read, its function, its declaration
    "a name": ("L = N * 2\n    def grow():\n        nonlocal L\n        L = N * 4\n    grow()\n"
               "    X: T.Tensor[[L], T.float32]", "L", "grow", "nonlocal L"),
    "a name bound again after": ("L = N * 2\n    def grow():\n        nonlocal L\n        L = N * 4\n"
                                 "    L = N * 8\n    grow()\n    X: T.Tensor[[L], T.float32]", "L", "grow", "nonlocal L"),
    "through an alias": ("L = N * 2\n    def grow():\n        nonlocal L\n        L = N * 4\n    grow()\n"
                         "    K = L + 1\n    X: T.Tensor[[K], T.float32]", "L", "grow", "nonlocal L"),
    "through a computed shape": ("L = N * 2\n    def grow():\n        nonlocal L\n        L = N * 4\n"
                                 "    grow()\n    shape = (L, 4)\n    X: T.Tensor(shape, T.float32)", "L", "grow",
                                 "nonlocal L"),
    "a function nested deeper": ("L = N * 2\n    def outer():\n        def inner():\n            nonlocal L\n"
                                 "            L = N * 4\n        inner()\n    outer()\n    X: T.Tensor[[L], T.float32]",
                                 "L", "inner", "nonlocal L"),
    "a declared dim": ("def shrink():\n        nonlocal N\n        N = 4\n    shrink()\n"
                       "    X: T.Tensor[[N], T.float32]", "N", "shrink", "nonlocal N"),
    "a const parameter": ("def halve():\n        nonlocal block\n        block = block // 2\n    halve()\n"
                          "    X: T.Tensor[[N, block], T.float32]", "block", "halve", "nonlocal block"),
    "a module global": ("def widen():\n        global WIDTH\n        WIDTH = 128\n    widen()\n"
                        "    X: T.Tensor[[N, WIDTH], T.float32]", "WIDTH", "widen", "global WIDTH"),
}


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("case", list(REBOUND_BY_NESTED))
def test_a_name_a_nested_function_rebinds_is_refused_in_an_annotation(tmp_path, case: str, postponed: bool) -> None:
    """`nonlocal L` (or `global L`) in a function nested in the body: TileLang's run of the body reads L as the
    calls of that function left it, which no reading of the body's statements tells, so an annotation reading L
    (itself, through an alias or a computed shape) is refused, naming L, the function and its declaration."""
    body, name, function, declaration = REBOUND_BY_NESTED[case]
    source = f"def kernel(X, block: int = 64):\n    N = T.dynamic(\"N\")\n    {body}\n"
    with pytest.raises(tl.DefinitionError) as refused:
        _kernel(tmp_path, source, postponed, prefix="WIDTH = 64\n").signature
    path = tmp_path / "kernel_module.py"
    lines = path.read_text().splitlines()
    annotation = next(i for i, text in enumerate(lines, 1) if text.strip().startswith("X:"))
    declared = next(i for i, text in enumerate(lines, 1) if text.strip() == declaration)
    assert str(refused.value) == (
        f"{path}:{annotation}: this annotation reads {name!r}, which the nested function {function!r} rebinds "
        f"(`{declaration}` at {path}:{declared}), so its value here depends on the body's calls of {function!r}: "
        "compute the size in the body's own statements"
    )


def test_a_name_an_if_binds_sizes_a_tensor_as_the_branch_taken(tmp_path) -> None:
    """`L = N`, then `if flag: L = N * 2`: X is N * 2 elements where flag is True, N where it is False."""
    path = tmp_path / "branch.py"
    path.write_text("import tltyped as tl\nimport tltyped.language as T\n\n@tl.jit\ndef branch(X, flag: bool = True):\n"
                    "    N = T.dynamic(\"N\")\n    L = N\n    if flag:\n        L = N * 2\n    X: T.Tensor[[L], T.float32]\n"
                    "    with T.Kernel(1, threads=32) as bx:\n        X[0] = 1.0\n")
    namespace: dict[str, object] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    kernel = namespace["branch"]
    kernel.lower(meta(15), flag=False)  # type: ignore[attr-defined]
    with pytest.raises(tl.ArgumentValueError, match="dim 0 is 15, which is N \\* 2 for no N >= 0"):
        kernel.lower(meta(15), flag=True)  # type: ignore[attr-defined]


NO_SIZE = "is neither an int nor an integer expression of dims"
CHANGED_BY_A_CALL = {
    "size": ("s = [N]\n    widen(s)\n    X: T.Tensor(s, T.float16)", "float16[N * 2]", "float16[N]"),
    "dtype": ("d = {'t': T.float16}\n    retype(d)\n    X: T.Tensor[[N], d['t']]", "float32[N]", "float16[N]"),
    "quoted size": ("s = [N]\n    widen(s)\n    X: 'T.Tensor(s, T.float16)'", "float16[N * 2]", "float16[N]"),
    "strides": ("st = [1]\n    widen(st)\n    X: T.StridedTensor([N], st, T.float16)", "float16[N] with strides [2]",
                "float16[N] with strides [1]"),
    "a float size": ("d = {'n': 8}\n    resize(d, 8.0)\n    X: T.Tensor[[d['n']], T.float16]",
                     f"float16[8.0] (8.0, of type float, {NO_SIZE})", "float16[8]"),
    "a bool size": ("d = {'n': 8}\n    resize(d, True)\n    X: T.Tensor[[d['n']], T.float16]",
                    f"float16[True] (True, of type bool, {NO_SIZE})", "float16[8]"),
    "a NumPy int size": ("d = {'n': 8}\n    resize(d, numpy.int64(8))\n    X: T.Tensor[[d['n']], T.float16]",
                         f"float16[8] (np.int64(8), of type int64, {NO_SIZE})", "float16[8]"),
    "a float size of a buffer": ("d = {'n': 8}\n    resize(d, 8.0)\n    X: T.StridedTensor([d['n']], [1], T.float16)",
                                 f"float16[T.float32(8.0)] with strides [1] (T.float32(8.0), of type FloatImm, {NO_SIZE})",
                                 "float16[8] with strides [1]"),
}


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("case", list(CHANGED_BY_A_CALL))
def test_an_annotation_a_call_changes_is_refused_when_the_kernel_is_built(tmp_path, case: str, postponed: bool) -> None:
    """A function the body calls may change a value an annotation reads (`widen(shape)`), which reading the body's
    statements does not see: the signature says X is N elements, the body's run builds its code for 2N. Every
    in-body annotation (a quoted one as the expression it holds) is evaluated again as the body runs and compared with the signature's buffer, so the kernel
    is refused, naming both readings, rather than built to index past what each call checks: its sizes, dtype, and
    the strides a `T.StridedTensor` states. A size of no kind the reading at decoration takes (a float, a bool, a
    NumPy int) is refused, naming it, even where it equals the size read."""
    body, run, read = CHANGED_BY_A_CALL[case]
    prefix = ("import numpy\n\ndef widen(shape):\n    shape[0] = shape[0] * 2\n\n"
              "def retype(names):\n    names['t'] = T.float32\n\n"
              "def resize(sizes, value):\n    sizes['n'] = value\n")
    source = (f"def kernel(X, Y):\n    N = T.dynamic(\"N\")\n    Y: T.Tensor[[N], T.float16]\n    {body}\n"
              "    with T.Kernel(1, threads=32) as bx:\n        X[0] = Y[0]\n")
    kernel = _kernel(tmp_path, source, postponed, prefix=prefix)
    path = tmp_path / "kernel_module.py"
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith("X:"))
    halves = [torch.empty(8, dtype=torch.float16, device="meta") for _ in range(2)]
    with pytest.raises(tl.ElaborationError) as refused:
        kernel.lower(*halves)
    assert f"kernel_module.py:{line}: ElaborationError: parameter 'X' is {run} as the body runs, but was read as {read} " \
        "from its source when the kernel was decorated" in str(refused.value)


RESTATED_IN_A_FRAME = {  # a case -> X's annotation at the top of the body, the kernel frame's statements, both readings
    "a size": ("X: T.Tensor[[N], T.float16]", "X: T.Tensor[[N * 2], T.float16]", "float16[N * 2]", "float16[N]"),
    "a size a call changes": ("s = [N]\n    X: T.Tensor(s, T.float16)", "widen(s)\n        X: T.Tensor(s, T.float16)",
                              "float16[N * 2]", "float16[N]"),
    "strides": ("X: T.StridedTensor([N], [1], T.float16)", "X: T.StridedTensor([N], [2], T.float16)",
                "float16[N] with strides [2]", "float16[N] with strides [1]"),
    "strides of a T.Tensor": ("X: T.Tensor[[N], T.float16]", "X: T.StridedTensor([N], [2], T.float16)",
                              "float16[N] with strides [2]", "float16[N] with strides [1]"),
}


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("case", list(RESTATED_IN_A_FRAME))
def test_an_annotation_restated_in_a_frame_is_checked_as_the_body_runs(tmp_path, case: str, postponed: bool) -> None:
    """A tensor parameter annotated again inside `with T.Kernel(...)` is checked against the built buffer as the
    annotation at the body's top is: TileLang would ignore tltyped's `T.Tensor[...]` there (and fail on a
    `T.StridedTensor` buffer), so a kernel whose body states another size than every call is checked for is refused,
    naming both, at the frame's line; so are strides a `T.StridedTensor` there states of a tensor the signature reads
    as a `T.Tensor`, other than the call's."""
    top, restated, run, read = RESTATED_IN_A_FRAME[case]
    source = (f"def kernel(X, Y):\n    N = T.dynamic(\"N\")\n    Y: T.Tensor[[N], T.float16]\n    {top}\n"
              f"    with T.Kernel(1, threads=32) as bx:\n        {restated}\n        X[0] = Y[0]\n")
    kernel = _kernel(tmp_path, source, postponed, prefix="def widen(shape):\n    shape[0] = shape[0] * 2\n")
    path = tmp_path / "kernel_module.py"
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith("        X:"))
    halves = [torch.empty(8, dtype=torch.float16, device="meta") for _ in range(2)]
    with pytest.raises(tl.ElaborationError) as refused:
        kernel.lower(*halves)
    assert f"kernel_module.py:{line}: ElaborationError: parameter 'X' is {run} as the body runs, but was read as " \
        f"{read} from its source when the kernel was decorated" in str(refused.value)


STRIDED = {  # a case -> the body's declarations and X's annotation, the statements opening the kernel frame
    "dyn strides (upstream's spelling)": ("m, s = T.dynamic(\"m\"), T.dynamic(\"s\")\n"
                                          "    X: T.StridedTensor[[m, 16], [s, 1], T.float32]", ""),
    "const strides, call form": ("M = T.const(\"M\")\n    X: T.StridedTensor((M, 16), (32, 1), T.float32)", ""),
    "quoted": ("m, s = T.dynamic(\"m\"), T.dynamic(\"s\")\n    X: 'T.StridedTensor[[m, 16], [s, 1], T.float32]'", ""),
    "restated in the kernel's frame": ("m, s = T.dynamic(\"m\"), T.dynamic(\"s\")\n"
                                       "    X: T.StridedTensor[[m, 16], [s, 1], T.float32]",
                                       "X: T.StridedTensor[[m, 16], [s, 1], T.float32]\n        "),
    "a T.Tensor given a view": ("m = T.dynamic(\"m\")\n    X: T.Tensor[[m, 16], T.float32]",
                                "X: T.Tensor[[m, 16], T.float32]\n        "),
}


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("case", list(STRIDED))
def test_a_strided_tensor_builds_as_it_states(tmp_path, case: str, postponed: bool) -> None:
    """The strides a `T.StridedTensor` states are the built buffer's, so the check passes and the kernel lowers,
    restated in the kernel's frame too (where TileLang would fail on the buffer); a `T.Tensor` states no strides,
    and is built with a non-contiguous call's, which the check leaves alone."""
    declared, opening = STRIDED[case]
    source = (f"def kernel(X):\n    {declared}\n    with T.Kernel(1, threads=32) as bx:\n"
              f"        {opening}X[0, 0] = X[0, 1]\n")
    kernel = _kernel(tmp_path, source, postponed)
    kernel.lower(torch.empty_strided((4, 16), (32, 1), dtype=torch.float32, device="meta"))


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
def test_an_assert_on_a_shape_assert_s_line_is_refused(tmp_path, postponed: bool) -> None:
    """The build leaves a shape assert's line out of the kernel (every call checks it), and TileLang's run of the
    body tells its statements apart by line only: `assert flag` after it on that line would never run, so it is
    refused at decoration. Shape asserts sharing a line are all checked by the calls."""
    source = ("def kernel(X, flag: bool = False):\n    N = T.dynamic(\"N\")\n    X: T.Tensor[[N], T.float32]\n"
              "    assert X.shape[0] % 8 == 0; {second}\n"
              "    with T.Kernel(1, threads=32) as bx:\n        X[0] = 1.0\n")
    with pytest.raises(tl.DefinitionError) as refused:
        _kernel(tmp_path, source.format(second="assert flag"), postponed)
    path = tmp_path / "kernel_module.py"
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith("assert"))
    assert str(refused.value) == (f"{path}:{line}: another assert shares this shape assert's line, where the kernel "
                                  "would not run it; write each assert on a line of its own")
    kernel = _kernel(tmp_path, source.format(second="assert X.shape[0] % 4 == 0"), postponed)
    kernel.lower(meta(16))
    with pytest.raises(tl.ArgumentValueError):
        kernel.lower(meta(12))


SIZES_READ = {  # a spelling -> the body after A's annotation, B's dims as read, A's and B's sizes of one call
    "unpacked": ("m, k = A.shape\n    B: T.Tensor[[k, m], T.float32]", "K, M", (64, 32), (32, 64)),
    "parenthesised": ("(m, k) = A.shape\n    B: T.Tensor[[k, m], T.float32]", "K, M", (64, 32), (32, 64)),
    "indexed": ("k = A.shape[1]\n    n = A.shape[-2]\n    B: T.Tensor[[k, n], T.float32]", "K, M", (64, 32), (32, 64)),
    "inline": ("B: T.Tensor[[A.shape[1] * 2, A.shape[-2]], T.float32]", "K * 2, M", (64, 32), (64, 64)),
    "through an alias": ("m, k = A.shape\n    k2 = k * 2\n    B: T.Tensor[[k2, m], T.float32]", "K * 2, M", (64, 32),
                         (64, 64)),
    "in a computed shape": ("m, k = A.shape\n    shape = (k, m)\n    B: T.Tensor(shape, T.float32)", "K, M", (64, 32),
                            (32, 64)),
}


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("declared", ["const", "dynamic"])
@pytest.mark.parametrize("case", list(SIZES_READ))
def test_names_read_off_an_annotated_tensor_s_shape_are_its_dims(tmp_path, case: str, declared: str, postponed: bool) -> None:
    """TileLang's lazy style: after A's annotation, `m, k = A.shape` (or `A.shape[1]` written in a dim) is A's
    sizes, so B annotated with them is sized by A's dims, const or dyn; read so at decoration (B's parameter before A's
    too), and as the body's run builds the kernel (lowered, the build's check of each annotation passes), and a call
    whose B is not so sized is refused."""
    body, dims, a, b = SIZES_READ[case]
    kernel = _kernel(tmp_path, f"def kernel(B, A):\n    M, K = T.{declared}(\"M, K\")\n"
                     f"    A: T.Tensor[[M, K], T.float32]\n    {body}\n"
                     "    with T.Kernel(1, threads=32) as bx:\n        B[0, 0] = A[0, 0]\n", postponed)
    assert str(kernel.signature).startswith(f"kernel(B: Tensor[float32, {dims}], A: Tensor[float32, M, K])")
    kernel.lower(meta(*b), meta(*a))
    with pytest.raises(tl.ArgumentValueError, match=r"\bB\b"):
        kernel.lower(meta(b[0] + 2, b[1]), meta(*a))


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
def test_a_size_read_off_a_derived_or_deferred_dim_is_that_dim(tmp_path, postponed: bool) -> None:
    """A's size `ceildiv(N, 4)` is B's as written (not TVM's `N * -1 // 4 * -1`); a size that waits for a const
    (`block`) is read with the call's value."""
    derived = _kernel(tmp_path, "def kernel(A, B):\n    N = T.dynamic(\"N\")\n"
                      "    A: T.Tensor[[N, T.ceildiv(N, 4)], T.float32]\n    n, c = A.shape\n"
                      "    B: T.Tensor[[c, n], T.float32]\n", postponed)
    assert str(derived.signature).startswith("kernel(A: Tensor[float32, N, ceildiv(N, 4)], B: Tensor[float32, ceildiv(N, 4), N])")
    deferred = _kernel(tmp_path, "def kernel(A, B, block: int = 16):\n    M = T.const(\"M\")\n"
                       "    A: T.Tensor[[M, block], T.float32]\n    m, k = A.shape\n    B: T.Tensor[[k, m], T.float32]\n"
                       "    with T.Kernel(1, threads=32) as bx:\n        B[0, 0] = A[0, 0]\n", postponed)
    deferred.lower(meta(64, 16), meta(16, 64))
    deferred.lower(meta(64, 32), meta(32, 64), block=32)
    with pytest.raises(tl.ArgumentValueError, match=r"\bB\b"):
        deferred.lower(meta(64, 32), meta(16, 64), block=32)


SIZES_NOT_READ = {  # a case -> the body after `M, K = T.const("M, K")`, the line refused, its message
    "read before the annotation": (
        "m, k = A.shape\n    A: T.Tensor[[M, K], T.float32]\n    B: T.Tensor[[k, m], T.float32]", "m, k = A.shape",
        "the sizes of 'A' are not known here: 'A' is annotated after this (at {path}:{annotated}); read A.shape after "
        "its annotation"),
    "written before the annotation": (
        "B: T.Tensor[[A.shape[1]], T.float32]\n    A: T.Tensor[[M, K], T.float32]", "B:",
        "the sizes of 'A' are not known here: 'A' is annotated after this (at {path}:{annotated}); read A.shape after "
        "its annotation"),
    "too many names": (
        "A: T.Tensor[[M, K], T.float32]\n    m, k, j = A.shape\n    B: T.Tensor[[k, m], T.float32]", "m, k, j",
        "3 names unpack A.shape, but 'A' is annotated with 2 sizes"),
    "an index past the sizes": (
        "A: T.Tensor[[M, K], T.float32]\n    k = A.shape[2]\n    B: T.Tensor[[k], T.float32]", "k = ",
        "A.shape[2] is past the sizes of 'A', which is annotated with 2"),
    "a starred name": (
        "A: T.Tensor[[M, K], T.float32]\n    m, *rest = A.shape\n    B: T.Tensor[[rest[0], m], T.float32]", "m, *rest",
        "a starred name unpacks A.shape, which TileLang's run of the body does not do: name each size"),
}


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("case", list(SIZES_NOT_READ))
def test_sizes_read_where_the_annotation_does_not_give_them_are_refused(tmp_path, case: str, postponed: bool) -> None:
    """A's sizes read before its annotation (which a reading of the source cannot know there), or into names that
    do not fit them, are refused naming A and the line, not read as some size."""
    body, refused_line, message = SIZES_NOT_READ[case]
    with pytest.raises(tl.DefinitionError) as refused:
        _kernel(tmp_path, f"def kernel(A, B):\n    M, K = T.const(\"M, K\")\n    {body}\n", postponed).signature
    path = tmp_path / "kernel_module.py"
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip().startswith(refused_line))
    annotated = next(i for i, text in enumerate(lines, 1) if text.strip().startswith("A:"))
    assert str(refused.value) == f"{path}:{line}: {message.format(path=path, annotated=annotated)}"


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
def test_a_name_for_a_tensor_type_computed_from_a_parameter_is_refused(tmp_path, postponed: bool) -> None:
    """`B: Bt` is read before the tensor forms, when no parameter's sizes (nor scalar's variable) are known, so a
    `Bt` computed from A's sizes is refused naming B, A and the line reading A, rather than failing on A as an
    undefined name; the tensor type written in B's annotation is read with A's sizes, and builds."""
    source = ("def kernel(A, B):\n    M, K = T.const(\"M, K\")\n    A: T.Tensor[[M, K], T.float32]\n"
              "    m, k = A.shape\n    {annotation}\n    with T.Kernel(1, threads=32) as bx:\n        B[0, 0] = A[0, 0]\n")
    with pytest.raises(tl.DefinitionError) as refused:
        _kernel(tmp_path, source.format(annotation="Bt = T.Tensor[[k, m], T.float32]\n    B: Bt"), postponed)
    path = tmp_path / "kernel_module.py"
    lines = path.read_text().splitlines()
    read, annotated = (next(i for i, text in enumerate(lines, 1) if text.strip().startswith(start))
                       for start in ("m, k = A.shape", "B: Bt"))
    assert str(refused.value) == (
        f"{path}:{annotated}: the annotation of 'B' is a name for a type computed from parameter 'A' (at {path}:{read}), "
        "and such a name is read before any parameter's sizes or value: write the tensor type in the annotation "
        "itself, `B: T.Tensor[[...], dtype]`")
    kernel = _kernel(tmp_path, source.format(annotation="B: T.Tensor[[k, m], T.float32]"), postponed)
    assert str(kernel.signature).startswith("kernel(A: Tensor[float32, M, K], B: Tensor[float32, K, M])")
    kernel.lower(meta(64, 32), meta(32, 64))


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
def test_a_tensor_annotated_through_a_name_has_its_sizes_read_after_it(tmp_path, postponed: bool) -> None:
    """`B: Bt`, a name the body binds to a tensor type, is read before the tensor forms, at its own place in the body
    (it has none in the def), and its sizes are what a statement after it reads (`m, k = B.shape`)."""
    kernel = _kernel(tmp_path, "def kernel(A, B):\n    Bt = T.Tensor[[8, 4], T.float32]\n    B: Bt\n    m, k = B.shape\n"
                     "    A: T.Tensor[[k, m], T.float32]\n"
                     "    with T.Kernel(1, threads=32) as bx:\n        A[0, 0] = B[0, 0]\n", postponed)
    assert str(kernel.signature).startswith("kernel(A: Tensor[float32, 4, 8], B: Tensor[float32, 8, 4])")
    kernel.lower(meta(4, 8), meta(8, 4))
    with pytest.raises(tl.ArgumentValueError, match=r"\bA\b"):
        kernel.lower(meta(8, 4), meta(8, 4))


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("spelled", ["T.StridedTensor[[M, 4], [8, 1], T.float32]",
                                     "T.StridedTensor((M, 4), (8, 1), T.float32)"], ids=["subscript", "call"])
def test_a_tensor_annotated_through_a_name_for_a_strided_tensor_has_its_strides(tmp_path, spelled: str,
                                                                                postponed: bool) -> None:
    """`Bt = T.StridedTensor[...]; B: Bt` makes B the strided tensor it names, as the type written in B's annotation
    does (TileLang's T.StridedTensor evaluates to a buffer, no signature annotation): its sizes over the body's dims
    and its strides, which a call is checked against."""
    kernel = _kernel(tmp_path, f"def kernel(A, B):\n    M = T.const(\"M\")\n    Bt = {spelled}\n    B: Bt\n"
                     "    A: T.Tensor[[M, 4], T.float32]\n"
                     "    with T.Kernel(1, threads=32) as bx:\n        A[0, 0] = B[0, 0]\n", postponed)
    assert str(kernel.signature).startswith(
        "kernel(A: Tensor[float32, M, 4], B: StridedTensor[[M, 4], [8, 1], float32])")
    strided = torch.empty_strided((8, 4), (8, 1), dtype=torch.float32, device="meta")
    kernel.lower(meta(8, 4), strided)
    with pytest.raises(tl.ArgumentValueError, match=r"argument 'B': stride 0 must be 8, got 4"):
        kernel.lower(meta(8, 4), meta(8, 4))


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("spelled", ["TL.Tensor((M, 4), TL.float32)", "TL.Tensor[[M, 4], TL.float32]"],
                         ids=["call", "subscript"])
def test_a_tensor_annotated_through_a_name_for_tilelang_s_own_tensor_is_one(tmp_path, spelled: str,
                                                                            postponed: bool) -> None:
    """TileLang's own `T.Tensor` evaluates to a buffer of the compact strides, as a `T.StridedTensor` would: through
    a name it is the tensor it states (no strides, as written in the annotation), not a const."""
    kernel = _kernel(tmp_path, f"def kernel(A, B):\n    M = T.const(\"M\")\n    Bt = {spelled}\n    B: Bt\n"
                     "    A: T.Tensor[[M, 4], T.float32]\n"
                     "    with T.Kernel(1, threads=32) as bx:\n        A[0, 0] = B[0, 0]\n", postponed,
                     prefix="import tilelang.language as TL")
    assert str(kernel.signature).startswith("kernel(A: Tensor[float32, M, 4], B: Tensor[float32, M, 4])")
    kernel.lower(meta(8, 4), meta(8, 4))
    with pytest.raises(tl.ArgumentValueError, match=r"\bB\b"):
        kernel.lower(meta(8, 4), meta(16, 4))


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("spelled", ["T.Tensor[[M, K], T.float32]", "tl.Tensor[tl.float32, M, K]"],
                         ids=["TileLang's order", "tltyped's order"])
def test_a_name_for_a_tensor_type_of_module_typevars_is_refused(tmp_path, spelled: str, postponed: bool) -> None:
    """`Bt` of module TypeVar dims, then `B: Bt`: the body declares its dims itself (the same type written in B's
    annotation refuses a TypeVar as no dim), so the name is refused naming B and the line, saying what to write,
    rather than read as dims the signature never declares (a KeyError as the call was planned)."""
    source = f"def kernel(A, B):\n    Bt = {spelled}\n    B: Bt\n    A: T.Tensor[[8, 4], T.float32]\n"
    with pytest.raises(tl.DefinitionError) as refused:
        _kernel(tmp_path, source, postponed, prefix='from typing import TypeVar\nM = TypeVar("M")\nK = TypeVar("K")')
    path = tmp_path / "kernel_module.py"
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.strip() == "B: Bt")
    assert str(refused.value) == (
        f"{path}:{line}: the annotation of 'B' is a name for a tensor type whose dims (M, K) are the signature form's "
        "(TypeVars, `int`, tl.dyn[int]), which the body does not declare: declare them in the body "
        "(`M, K = T.const(\"M, K\")` or T.dynamic) and write the tensor type in the annotation itself, "
        "`B: T.Tensor[[...], dtype]`, or annotate 'B' in the def")


@pytest.mark.parametrize("postponed", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("spelled", ["T.Tensor[[K, M], T.float32]", "tl.Tensor[tl.float32, K, M]",
                                     "T.Tensor[[K, M * 2], T.float32]"],
                         ids=["TileLang's order", "tltyped's order", "an expression"])
@pytest.mark.parametrize("declared", ['M, K = T.const("M K")', 'M = T.const("M")\n    K = T.dynamic("K")'],
                         ids=["const", "dynamic"])
def test_a_tensor_annotated_through_a_name_for_a_tensor_of_the_body_s_dims_is_that_tensor(
        tmp_path, spelled: str, declared: str, postponed: bool) -> None:
    """`Bt = T.Tensor[[K, M], T.float32]; B: Bt`, K and M dims the body declares (`T.const`, `T.dynamic`), makes B
    the tensor the same type written in B's annotation does: its signature, a right call lowered, a wrong size
    refused with the same message."""
    body = ("def kernel(A, B):\n    {declared}\n    {annotation}\n    A: T.Tensor[[M, K], T.float32]\n"
            "    with T.Kernel(1, threads=32) as bx:\n        A[0, 0] = B[0, 0]\n")
    (tmp_path / "named").mkdir()
    (tmp_path / "written").mkdir()  # each kernel's source a file of its own
    named = _kernel(tmp_path / "named", body.format(declared=declared, annotation=f"Bt = {spelled}\n    B: Bt"),
                    postponed)
    written = _kernel(tmp_path / "written", body.format(declared=declared, annotation=f"B: {spelled}"), postponed)
    assert str(named.signature) == str(written.signature)
    assert "B: Tensor[float32, K, M" in str(named.signature)
    wide = 2 if "M * 2" in spelled else 1
    named.lower(meta(8, 4), meta(4, 8 * wide))
    refusals = []
    for kernel in (named, written):
        with pytest.raises(tl.ArgumentValueError, match=r"\bB\b") as refused:
            kernel.lower(meta(8, 4), meta(4, 8 * wide + 1))
        refusals.append(str(refused.value))
    assert refusals[0] == refusals[1], refusals
