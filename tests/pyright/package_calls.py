"""Calls of kernels that a package imports from its module (kernel_package), through the package.

Checked by pyright through the stubs `python -m tltyped.stubs tests.pyright.kernel_package.kernels` writes (the
module's, and the package's, which imports the kernels from it) and by mypy with the plugin: each
`# wrong: <kind>` line must get an error, no other line any, and each `# reveal: <type>` is the type both infer.
"""

from typing import Literal

import tltyped as tl
from tests.pyright import kernel_package
from tests.pyright.kernel_package import add_rows, add_scaled, widen


def calls(
    a: tl.Tensor[tl.float32, Literal[8], Literal[16]],
    v: tl.Tensor[tl.float32, Literal[100]],
    h: tl.Tensor[tl.float16, Literal[8], Literal[16]],
) -> None:
    reveal_type(add_rows(a, a))  # reveal: Tensor[float32, Literal[8], Literal[16]]
    reveal_type(add_scaled(a, a))  # reveal: Tensor[float32, Literal[8], Literal[16]]
    reveal_type(kernel_package.add_rows(a, a))  # reveal: Tensor[float32, Literal[8], Literal[16]]
    print(widen(h).sum())
    add_rows(a)  # wrong: count
    add_rows(a, a, a)  # wrong: count
    add_rows(a, v)  # wrong: rank
    add_scaled(a, C=a)  # wrong: name
    add_scaled(h, h)  # wrong: dtype
    widen(a)  # wrong: dtype
    kernel_package.widen(v)  # wrong: rank
