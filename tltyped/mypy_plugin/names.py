"""Full names the plugin recognises, and the dtype names it reads annotations with.

The plugin never imports tltyped's runtime modules (they import torch, which
would make every mypy run pay for it); it names them. The one exception is
the dtype table (`tltyped.types.dtypes`), which imports neither torch nor
TileLang: the plugin reads its element types from there.
"""

from __future__ import annotations

from typing import Final

from tltyped.types import dtypes, in_body_grammar

JIT_MODULE: Final = "tltyped.jit_function"
JIT: Final = f"{JIT_MODULE}.jit"
JIT_FUNCTION: Final = f"{JIT_MODULE}.JitFunction"
KERNEL_OBJECT: Final = f"{JIT_MODULE}.KernelObject"  # a lazy-style factory's kernel: a JitFunction
AUTOTUNE: Final = "tltyped.autotune_configs.autotune"
AUTOTUNE_APPLIED: Final = f"{AUTOTUNE}.<decorator>"
"""The name the plugin gives the decorator `tl.autotune(configs=...)` returns, to be called again when it is applied."""
COMPILED_KERNEL: Final = "tltyped.backend.kernel.CompiledKernel"  # what `compile` returns: CompiledKernel[C, R]
JIT_CALL: Final = f"{JIT_FUNCTION}.__call__"
JIT_CALLS: Final = (JIT_CALL, f"{KERNEL_OBJECT}.__call__", f"{COMPILED_KERNEL}.__call__")
"""Calls checked as a kernel's: a kernel object's is a JitFunction's, and a compiled kernel's of its runtime params."""
JIT_INSPECTION_METHODS: Final = tuple(f"{JIT_FUNCTION}.{m}" for m in ("lower", "compile", "get_kernel_source"))
"""Properties of JitFunction, each an `Inspection` that takes the kernel's arguments or its dims by name."""

TENSOR: Final = "tltyped.types.tensor.Tensor"
"""`Tensor[dtype, *dims]`, the annotation (an alias to type checkers without the plugin, tltyped/types/tensor.py)."""
PLUGIN_TENSOR_SCOPE: Final = "tltyped.types.tensor.MypyPlugin"
PLUGIN_TENSOR: Final = f"{PLUGIN_TENSOR_SCOPE}.Tensor"
"""The class the plugin reads `Tensor[dtype, *dims]` as, which mypy shows as users write it."""
DTYPE_BASE: Final = "tltyped.types.dtypes.DType"
DYN: Final = "tltyped.types.params.dyn"
PTR: Final = "tltyped.types.params.ptr"
CONST: Final = "tltyped.types.params.const"
TUNE: Final = "tltyped.types.params.tune"
TORCH_TENSOR: Final = "torch._tensor.Tensor"
HASHABLE: Final = "typing.Hashable"

LANGUAGE: Final = "tltyped.language"
TILELANG_LANGUAGE: Final = "tilelang.language"
LANGUAGE_DEFINITIONS: Final = "tltyped._tilelang_language"
"""The typed kernel language both views (`tltyped.language`, `tilelang.language`) star-import."""
LANGUAGE_TENSOR: Final = f"{LANGUAGE_DEFINITIONS}.Tensor"
"""`T.Tensor`, the in-body form's spelling: read as tltyped's Tensor."""
TENSOR_MODULES: Final = ("tltyped", "tltyped.types", TENSOR.rpartition(".")[0], LANGUAGE, TILELANG_LANGUAGE)
"""The modules whose `Tensor` is tltyped's (`from tilelang.language import Tensor`)."""
LANGUAGE_BUFFER: Final = f"{LANGUAGE_DEFINITIONS}.Buffer"
LANGUAGE_DIM_DECLARATIONS: Final = tuple(f"{LANGUAGE_DEFINITIONS}.{c}" for c in in_body_grammar.DIM_DECLARATION_CALLS)
LANGUAGE_OUTPUTS: Final = tuple(f"{LANGUAGE}.{c}" for c in in_body_grammar.OUTPUT_CALLS)
LANGUAGE_DTYPE_ANNOTATIONS: Final = (f"{LANGUAGE}.dtype", f"{TILELANG_LANGUAGE}.dtype")
"""`T.dtype`, a parameter taking a dtype: a const."""
TILELANG_OUTPUT: Final = f"{TILELANG_LANGUAGE}.empty"
"""TileLang's own `T.empty`: its shape as a tuple, or the dims one by one (`T.empty(M, N, dtype=...)`)."""

_DTYPES_MODULE: Final = dtypes.__name__

DTYPE_CLASSES: Final = tuple(d.__name__ for d in (*dtypes.ALL_DTYPES, *dtypes.PACKED_DTYPES))
"""tltyped's element types (`tl.float16`, ...), as class names in tltyped.types.dtypes."""

LANGUAGE_DTYPE_CLASS: Final = {name: d.__name__ for name, d in dtypes.BY_NAME.items()}
"""TileLang dtype values (`T.float16`, `T.half`, ...) that name one of tltyped's element types."""


def dtype_class_fullname(class_name: str) -> str:
    return f"{_DTYPES_MODULE}.{class_name}"


def language_dtype_class(fullname: str) -> str | None:
    """`T.half` (tltyped._tilelang_language.half) -> `tltyped.types.dtypes.float16`; None if not a dtype name."""
    module, _, name = fullname.rpartition(".")
    if module != LANGUAGE_DEFINITIONS:
        return None
    class_name = LANGUAGE_DTYPE_CLASS.get(name)
    return None if class_name is None else dtype_class_fullname(class_name)


_TORCH_DTYPE_CLASS: Final = {name: d.__name__ for d in dtypes.ALL_DTYPES for name in (d.torch_name, *d.aliases)}
"""torch's dtype attributes (`torch.float16`, and the aliases it shares with TileLang: `torch.half`, `torch.long`)."""
_TORCH_DTYPE_MODULES: Final = ("torch", "torch._C")  # torch's stubs declare its dtypes in torch._C


def torch_dtype_class(fullname: str) -> str | None:
    """`torch.float16` (mypy's `torch._C.float16`) -> `tltyped.types.dtypes.float16`; None if not a torch dtype."""
    module, _, name = fullname.rpartition(".")
    class_name = _TORCH_DTYPE_CLASS.get(name) if module in _TORCH_DTYPE_MODULES else None
    return None if class_name is None else dtype_class_fullname(class_name)


def is_dtype_home(fullname: str) -> bool:
    """Whether `fullname` is a name of a module dtypes are spelled from (`tl.float16`, `T.float16`, `torch.float16`),
    where a name that is none of them is no dtype (`T.float61`, which the language stub's `__getattr__` gives)."""
    return fullname.rpartition(".")[0] in (*TENSOR_MODULES, LANGUAGE_DEFINITIONS, *_TORCH_DTYPE_MODULES)


def dtype_display(fullname: str) -> str:
    """How messages name an element type: `float16` for tltyped.types.dtypes.float16."""
    name = fullname.rpartition(".")[2]
    return "bool" if name == "bool_" else name
