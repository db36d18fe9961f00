"""A kernel's return annotation is what a call's result is: each build checks the tensors the body returns against
it (count, dtype, rank, and each dim the call's sizes decide), and refuses to build a kernel that disagrees, so
neither the caller nor their type checker is told a float16 result is float32, or an [N * 2] one is [N]."""

import re
from typing import TypeVar

import pytest
import torch

import tltyped as tl
import tltyped.language as T
from tests.conftest import meta
from tests.kernels import returns

pytestmark = pytest.mark.usefixtures("sm90")
N = TypeVar("N")


def test_a_body_returning_what_its_annotation_states_builds() -> None:
    assert "__global__" in returns.make().lower(meta(100, 7, dtype=torch.float32)).cuda_source
    assert "__global__" in returns.pair.lower(meta(100, 7, dtype=torch.float32)).cuda_source
    assert "__global__" in returns.unstated.lower(meta(100, dtype=torch.float32)).cuda_source  # nothing stated


@pytest.mark.parametrize(("values", "problem"), [
    ({"out_dtype": tl.float16}, "returns float16[N, 7], but its return annotation states Tensor[float32, N, M]: "
                                "the tensor is float16, not float32"),
    ({"factor": 2}, "returns float32[N * 2, 7], but its return annotation states Tensor[float32, N, M]: "
                    "the tensor's axis 0 is N * 2, not N"),
    ({"extra": 1}, "the tensor's axis 1 is 8, not M"),  # M = 7, the call's const dim
    ({"both": True}, "returns float32[N, 7], float32[N, 7], but its return annotation states Tensor[float32, N, M]: "
                     "2 returned, 1 stated"),
])
def test_a_body_returning_other_tensors_than_its_annotation_states_is_refused(values: dict, problem: str) -> None:
    with pytest.raises(tl.KernelBuildError, match=f"^scaled: .*{re.escape(problem)}"):
        returns.make(**values).lower(meta(100, 7, dtype=torch.float32))


def test_one_output_returned_in_a_tuple_comes_back_itself() -> None:
    """`return (Y,)` is `return Y`: the call gives the tensor (as its annotation states), not a tuple of one;
    several outputs are a tuple."""
    one = returns.one_in_a_tuple(meta(100, dtype=torch.float32))
    assert type(one) is torch.Tensor and tuple(one.shape) == (100,) and one.dtype == torch.float32
    several = returns.pair(meta(100, 7, dtype=torch.float32))
    assert type(several) is tuple and [tuple(t.shape) for t in several] == [(100, 7), (7,)]


def test_a_kernel_stated_to_return_none_may_not_return_a_tensor() -> None:
    with pytest.raises(tl.KernelBuildError, match=re.escape("stated_none: returns float32[N], but its return annotation states None: 1 returned, 0 stated")):
        returns.stated_none.lower(meta(100, dtype=torch.float32))


def test_out_idx_tensors_against_a_return_annotation_stating_none_are_refused_at_decoration() -> None:
    """A call returns the out_idx tensors, so `-> None` would tell the caller and their type checker otherwise (the
    mypy plugin reports it in the same words); an annotation stating them, or none, is taken."""
    with pytest.raises(tl.DefinitionError, match=r"^fill: a call returns the out_idx tensor 'Out', but the return "
                                                 r"annotation states None; annotate what a call returns"):

        @tl.jit(out_idx=[1])
        def fill(X: tl.Tensor[tl.float32, N], Out: tl.Tensor[tl.float32, N]) -> None:
            pass

    @tl.jit(out_idx=[1])
    def stated(X: tl.Tensor[tl.float32, N], Out: tl.Tensor[tl.float32, N]) -> tl.Tensor[tl.float32, N]:
        pass

    assert [p.name for p in stated.signature.outputs] == ["Out"]


def test_a_return_annotation_of_a_one_tensor_tuple_is_refused_at_decoration() -> None:
    """A call returns a kernel's one output itself, so no call gives `tuple[Tensor[...]]`: the annotation would tell
    the caller and their type checker otherwise (the mypy plugin reports it in the same words)."""
    with pytest.raises(tl.DefinitionError, match=r"^one: the return annotation is a tuple of one tensor, .* -> Tensor\[\.\.\.\]$"):

        @tl.jit
        def one(X: tl.Tensor[tl.float32, N]) -> tuple[tl.Tensor[tl.float32, N]]:
            (n,) = X.shape
            Y = T.empty((n,), tl.float32)
            return (Y,)

