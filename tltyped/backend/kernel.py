"""A compiled kernel as the call path holds it: the loaded launcher module and what it returns.

Each kernel's build folder holds its device code (`kernel.cubin`) and its
host launcher, a CPython extension named `tltyped_kernel` (see
templates/launcher.cpp.j2). The extension describes itself: its `DESCRIPTION`
(JSON) lists the outputs it allocates and the order it returns them in, so a
kernel found on disk is loaded with neither TileLang nor TVM imported.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tltyped.backend.torch_direct import torch_empty
from tltyped.backend.build import extension_name, load_extension

if TYPE_CHECKING:
    from tltyped.backend.lower import LoweredKernel

MODULE = "tltyped_kernel"  # every kernel's extension module has this name, each at its own path
CUBIN = "kernel.cubin"


@dataclass(frozen=True)
class OutputSpec:
    """An output the launcher allocates (on torch's caching allocator) before each launch."""

    label: str  # what error messages call it
    shape: tuple[str, ...]  # C expressions over the launch's runtime arguments `a0, ...` and dyn dims `d0, ...`
    dtype: str  # the element type's name (tltyped.types.dtypes)


@dataclass
class CompiledKernel:
    """`launch(*runtime args, *dyn dims, stream, device)` runs the kernel and returns its outputs."""

    launch: Callable[..., Any]
    outputs: tuple[OutputSpec, ...]  # in parameter order
    returns: tuple[int, ...]  # indices into `outputs`, in the order the kernel returns them
    folder: Path
    compiled: bool  # False when the build was found in the disk cache
    lowered: LoweredKernel | None = None  # None for a kernel loaded from disk without lowering it
    module: ModuleType | None = None

    def empty_outputs(self, *args: Any, device: int = -1) -> tuple[Any, ...]:
        """The outputs `launch(*args, ...)` would allocate, allocated but not written (device -1: the CPU)."""
        assert self.module is not None
        result: tuple[Any, ...] = self.module.empty_outputs(*args, 0, device)
        return result


def load(folder: Path, *, compiled: bool, lowered: LoweredKernel | None = None) -> CompiledKernel:
    """The kernel of a build folder: import its launcher and hand it the cubin."""
    module = load_extension(MODULE, folder / extension_name(MODULE))
    module.set_cubin((folder / CUBIN).read_bytes())
    about = json.loads(module.DESCRIPTION)
    if about["outputs"]:
        module.set_allocator(torch_empty())
    outputs = tuple(OutputSpec(o["label"], tuple(o["shape"]), o["dtype"]) for o in about["outputs"])
    return CompiledKernel(module.launch, outputs, tuple(about["returns"]), folder, compiled, lowered, module)
