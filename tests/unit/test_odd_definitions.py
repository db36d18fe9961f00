"""Odd annotations a user may write: decoration accepts them or raises a tl.Error naming what is wrong, never
another exception (a ValueError from unpacking, a TypeError from TileLang), with and without
`from __future__ import annotations` (which decides who evaluates the annotation: Python at `def`, or tltyped)."""

from __future__ import annotations

import functools
import importlib.util
import re
import textwrap
import traceback
from pathlib import Path

import pytest
import torch

import tltyped as tl
import tltyped.language as T

DIMS = ["M", "Literal[True]", "Literal[-1]", "Literal[2**70]", "Literal[64, 128]", "Literal['a']", "1.5", "'M'", "None",
        "...", "(M, M)", "[M]", "Annotated[int, 3]", "Optional[int]", "tl.dyn[float]", "tl.dyn[int, 'K']",
        "tl.dyn[int, 3]", "tl.dyn", "tl.dyn[str]", "tl.ptr", "tl.const[int]", "int", "float", "C", "-1", "tl.float16",
        "BOUND_FLOAT", "T.dynamic('x')", "T.int32"]
DTYPES = ["torch.float16", "'float16'", "'fp16'", "int", "None", "M", "T.float16", "torch.complex64",
          "numpy.float16", "tl.DType", "'bool'"]
SCALARS = ["tl.dyn[bool]", "tl.dyn[tl.float16]", "tl.const", "tl.const[list]", "Optional[tl.Tensor[tl.float16, M]]",
           "list[tl.Tensor[tl.float16, M]]", "tuple[tl.Tensor[tl.float16, M], ...]", "T.handle", "tl.dyn[int] = 3",
           "int = tl.tune([1, 'a'])", "int = tl.tune(3)", "tl.dyn[int] = tl.tune([1, 2])", "tl.float32", "tl.int64 = 3"]
PARAMETERS = ([f"A: tl.Tensor[tl.float16, {d}]" for d in DIMS] + [f"A: tl.Tensor[[{d}], tl.float16]" for d in DIMS[:12]]
              + [f"A: tl.Tensor[{t}, M]" for t in DTYPES] + [f"A: tl.Tensor[tl.float16, M], s: {s}" for s in SCALARS])
HEADER = """
from typing import Annotated, Literal, Optional, TypeVar
import numpy, torch
import torch

import tltyped as tl
import tltyped.language as T
import tltyped.language as T
M = TypeVar("M")
C = TypeVar("C", int, str)
BOUND_FLOAT = TypeVar("BOUND_FLOAT", bound=tl.dyn[float])
"""


@pytest.mark.parametrize("future", [False, True], ids=["evaluated", "postponed"])
@pytest.mark.parametrize("parameters", PARAMETERS)
def test_an_odd_definition_is_accepted_or_refused_with_a_tl_error(parameters: str, future: bool, tmp_path: Path) -> None:
    source = ("from __future__ import annotations\n" if future else "") + HEADER + textwrap.dedent(f"""
        @tl.jit
        def kernel({parameters}):
            pass
    """)
    path = tmp_path / "odd_definition.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("odd_definition", path)
    assert spec is not None and spec.loader is not None
    try:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    except tl.Error:
        pass
    except Exception as exc:  # raised by Python's own evaluation at `def` (TileLang's T.dynamic outside a kernel)
        assert not any(Path(tl.__file__).parent in Path(f.filename).parents for f in traceback.extract_tb(exc.__traceback__)), repr(exc)


REFUSED = {
    "A: tl.Tensor[tl.float16, Literal[-1]]": "parameter 'A'",
    "A: tl.Tensor[tl.float16, Literal[64, 128]]": "parameter 'A'",
    "A: tl.Tensor[tl.float16, 1.5]": "parameter 'A'",
    "A: tl.Tensor[tl.float16, M], s: tl.dyn[str]": "parameter 's'",
    "A: tl.Tensor[tl.float16, M], s: Optional[tl.Tensor[tl.float16, M]] = None": "parameter 's'",
    "A: tl.Tensor[tl.float16, M], s: int = tl.tune(3)": "tl.tune() takes a list of candidate values",
    "A: tl.Tensor": "parameter 'A'",
    "A: tl.Tensor[tl.float16, M], Y: tl.Tensor[tl.float16, M] = None": "tensor parameter 'Y' has a default (None)",
    "A: tl.Tensor[tl.float16, M], alpha: tl.float32": "parameter 'alpha': tl.float32 is an element type",
    "A: tl.Tensor[tl.float16, M], scale: tl.bfloat16 = 1.0": "`scale: T.float32` for a scalar passed at run time",
    # the tuner chooses a const's value by speed, never a tensor or a value the kernel computes with at run time
    "A: tl.Tensor[tl.float16, M], s: tl.dyn[int] = tl.tune([1, 2])": "parameter 's': a dyn parameter cannot take a tl.tune default",
    "A: tl.Tensor[tl.float16, M], s: T.float32 = tl.tune([1.0, 2.0])": "parameter 's': a dyn parameter cannot take a tl.tune",
    "A: tl.Tensor[tl.float16, M], p: tl.ptr = tl.tune([0, 1])": "parameter 'p': a ptr parameter cannot take a tl.tune",
    "A: tl.Tensor[tl.float16, M] = tl.tune([1, 2])": "parameter 'A': a tensor parameter cannot take a tl.tune default",
}


@pytest.mark.parametrize("parameters", sorted(REFUSED))
def test_an_odd_definition_that_cannot_work_is_refused_naming_what(parameters: str, tmp_path: Path) -> None:
    source = "from __future__ import annotations\n" + HEADER + f"\n@tl.jit\ndef kernel({parameters}):\n    pass\n"
    path = tmp_path / "refused_definition.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("refused_definition", path)
    assert spec is not None and spec.loader is not None
    with pytest.raises(tl.Error, match=re.escape(REFUSED[parameters])):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))



ODD_BODIES = {  # the kernel's parameters and body, a call, what the error says
    "an empty dim name": ("A", 'M, N = T.const("M,,N")\n    A: T.Tensor[[M, N], T.float32]',
                          "kernel(torch.empty(4, 4, device='meta'))", "T.const(\"M,,N\"): '' is not a dim name"),
    "a dim dividing by zero": ("A, B", 'N = T.const("N")\n    A: T.Tensor[[N], T.float32]\n    B: T.Tensor[[N // 0], T.float32]',
                               "kernel(torch.empty(4, device='meta'), torch.empty(4, device='meta'))",
                               "argument 'B': dim 0 cannot be checked: `N // 0` divides by zero (N = 4)"),
    # a const or a global in a shape assert escaped as "dim `block` is used but never declared", with no line
    "a shape assert naming a const": ("A: tl.Tensor[tl.float16, M], block: int = 64", "assert A.shape[0] % block == 0", "",
                                      "odd_body.py:15: `assert A.shape[0] % block == 0` is checked at each call against the "
                                      "tensors' dims, and 'block' is not a dim of the kernel"),
    "a shape assert naming a global": ("A: tl.Tensor[tl.float16, M]", "assert A.shape[0] == 2 * BLOCK_SIZE", "",
                                       "odd_body.py:15: `assert A.shape[0] == 2 * BLOCK_SIZE` is checked at each call "
                                       "against the tensors' dims, and 'BLOCK_SIZE' is not a dim of the kernel"),
    "a tuned scalar annotated in the body": ("A, alpha=tl.tune([1.0, 2.0])", "N = T.dynamic('N')\n    A: T.Tensor[[N], T.float32]\n    alpha: T.float32",
                                             "", "parameter 'alpha': a dyn parameter cannot take a tl.tune default"),
}


@pytest.mark.parametrize("odd", sorted(ODD_BODIES))
def test_an_odd_body_is_refused_with_a_tl_error_naming_what(odd: str, tmp_path: Path) -> None:
    """At decoration, or at the call (on meta tensors: no build), never a KeyError or ZeroDivisionError."""
    params, body, call, message = ODD_BODIES[odd]
    path = tmp_path / "odd_body.py"
    path.write_text(HEADER + f"\n@tl.jit\ndef kernel({params}):\n    {body}\n\n\n{call}\n")
    spec = importlib.util.spec_from_file_location("odd_body", path)
    assert spec is not None and spec.loader is not None
    with pytest.raises(tl.Error, match=re.escape(message)):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_a_method_is_refused_at_decoration_naming_its_self(tmp_path: Path) -> None:
    """A jit function is no descriptor: `self` would be taken for a const. A @staticmethod above @tl.jit works."""
    source = HEADER + textwrap.dedent("""
        class Ops:
            @staticmethod
            @tl.jit
            def fine(A: tl.Tensor[tl.float16, M]) -> None:
                pass

            @tl.jit
            def method(self, A: tl.Tensor[tl.float16, M]) -> None:
                pass
    """)
    path = tmp_path / "methods.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("methods", path)
    assert spec is not None and spec.loader is not None
    with pytest.raises(tl.DefinitionError, match=r"Ops\.method: @tl\.jit makes a kernel of a function, not a method \(its 'self'\)"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_a_keyword_only_parameter_without_a_default_after_one_with_is_refused(tmp_path: Path) -> None:
    """`def kernel(A, *, block=64, threads)`: a call's missing arguments are its last parameters' defaults."""
    path = tmp_path / "keyword_only.py"
    path.write_text(HEADER + "\n@tl.jit\ndef kernel(A: tl.Tensor[tl.float16, M], *, block: int = 64, threads: int) -> None:\n    pass\n")
    spec = importlib.util.spec_from_file_location("keyword_only", path)
    assert spec is not None and spec.loader is not None
    with pytest.raises(tl.DefinitionError, match="keyword-only parameter 'threads' has no default but follows 'block'"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_keyword_only_parameters_are_taken_by_name_only() -> None:
    """As Python takes them, by every call form: the jit function (its first call and a cached one), a kernel whose
    annotations depend on consts (a Router), `lower`, and the compiled kernel."""
    from tests.conftest import has_nvcc, meta
    from tests.kernels.keyword_only import routed, scaled

    assert tuple(scaled(meta(8, dtype=torch.float32), alpha=3.0, block=32).shape) == (8,)
    for call in (lambda: scaled(meta(8, dtype=torch.float32), 3.0), lambda: routed(meta(8, dtype=torch.float32), T.float32)):
        for _ in range(2):
            with pytest.raises(TypeError, match=r"takes 1 positional argument but 2 were given"):
                call()
    routed(meta(8, dtype=torch.float32), dtype=T.float32, block=32)
    with pytest.raises(tl.ArgumentTypeError, match=r"scaled: expected at most 1 positional arguments, got 2"):
        scaled.lower(meta(8, dtype=torch.float32), 3.0)
    assert scaled.lower(meta(8, dtype=torch.float32), alpha=3.0, block=32) is not None
    if has_nvcc():
        compiled = scaled.compile(meta(8, dtype=torch.float32), block=32)
        with pytest.raises(tl.ArgumentTypeError, match=r"scaled: the compiled kernel takes \(A, \*, alpha\): too many positional"):
            compiled(meta(8, dtype=torch.float32), 3.0)


class _CallableObject:
    def __call__(self, A: object) -> None:
        pass


def _plain(A: object) -> None:
    pass


@pytest.mark.parametrize(
    ("made_of", "named"),
    [(_CallableObject, "the class _CallableObject"), (_CallableObject(), "tests.unit.test_odd_definitions._CallableObject <"),
     (functools.partial(_plain), "functools.partial functools.partial(<function _plain"), (len, "builtin_function_or_method <built-in function len>"),
     (3, "int 3"), (staticmethod(_plain), "staticmethod <staticmethod(")],
    ids=["class", "callable object", "partial", "builtin", "int", "staticmethod object"],
)
def test_jit_of_something_other_than_a_function_is_refused_naming_what_it_got(made_of: object, named: str) -> None:
    """A callable object, a partial or an int has no `__qualname__` or source: refused as what it is, not with the
    AttributeError that reading its name raised."""
    with pytest.raises(tl.DefinitionError, match=r"^@tl\.jit takes a plain `def` function, not " + re.escape(named)):
        tl.jit(made_of)  # type: ignore[call-overload]
    with pytest.raises(tl.DefinitionError, match=r"^@tl\.jit takes a plain `def` function, not " + re.escape(named)):
        tl.jit(out_idx=-1)(made_of)  # type: ignore[arg-type]
