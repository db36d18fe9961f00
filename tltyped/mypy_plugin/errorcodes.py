"""The plugin's error codes: one per kind of check, all sub-codes of `tltyped`.

`# type: ignore[tltyped-shape]` or `disable_error_code = tltyped-shape` silences
one kind; `tltyped` silences them all. mypy loads plugins before it validates
`disable_error_code`, so these names are accepted in configuration files.
"""

from __future__ import annotations

from typing import Final

from mypy.errorcodes import ErrorCode

_CATEGORY: Final = "tltyped"


def sentence(message: str) -> str:
    """A message of the shared grammars, written in lower case to follow the runtime's `file:line: `, as mypy
    reports one: capitalised."""
    return message[:1].upper() + message[1:]


TLTYPED: Final = ErrorCode("tltyped", "Checks of tltyped kernels and their call sites", _CATEGORY)

SHAPE: Final = ErrorCode(
    "tltyped-shape", "A tensor argument's rank or dims disagree with the kernel's signature", _CATEGORY,
    sub_code_of=TLTYPED,
)
DTYPE: Final = ErrorCode(
    "tltyped-dtype", "Tensor dtypes: known in annotations, matching at call sites", _CATEGORY, sub_code_of=TLTYPED
)
DIM: Final = ErrorCode(
    "tltyped-dim", "Dims are declared once, before use, and bound by some tensor", _CATEGORY, sub_code_of=TLTYPED
)
ANNOTATION: Final = ErrorCode(
    "tltyped-annotation", "Tensor and dyn annotations are well formed", _CATEGORY, sub_code_of=TLTYPED
)
KERNEL: Final = ErrorCode(
    "tltyped-kernel", "Kernel rules: parameters, T.alloc_* results, returned values", _CATEGORY,
    sub_code_of=TLTYPED,
)
CONST: Final = ErrorCode(
    "tltyped-const", "Arguments of const parameters are hashable (they key the kernel cache)", _CATEGORY,
    sub_code_of=TLTYPED,
)
TUNE: Final = ErrorCode(
    "tltyped-tune", "tl.tune() candidates fit the parameter's type", _CATEGORY, sub_code_of=TLTYPED
)
