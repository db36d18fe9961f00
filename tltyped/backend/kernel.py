"""A compiled kernel as the call path holds it: the loaded launcher module and what it returns.

Each kernel's build folder holds its device code (`kernel.cubin`, from
`kernel.cu`) and its host launcher, a CPython extension named
`tltyped_kernel` (from `launcher.cpp`, see templates/launcher.cpp.j2). The
extension describes itself: its `DESCRIPTION` (JSON) lists the outputs it
allocates, the order it returns them in and the tensor arguments the kernel
writes, so a kernel found on disk is loaded with neither TileLang nor TVM
imported, and is the same object as one built now.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

from typing_extensions import ParamSpec

from tltyped.backend.build import extension_name, load_extension
from tltyped.errors import ArgumentTypeError

MODULE = "tltyped_kernel"  # every kernel's extension module has this name, each at its own path
CUBIN = "kernel.cubin"
CUDA_SOURCE = "kernel.cu"  # the device code's source, kept beside its cubin
LAUNCHER_SOURCE = "launcher.cpp"  # the launcher's source, kept beside its extension

P = ParamSpec("P")
R_co = TypeVar("R_co", covariant=True)


@dataclass(frozen=True)
class OutputSpec:
    """An output the launcher allocates (on torch's caching allocator) before each launch."""

    label: str  # what error messages call it
    shape: tuple[str, ...]  # C expressions over the launch's runtime arguments `a0, ...` and dyn dims `d0, ...`
    dtype: str  # the element type's name (tltyped.types.dtypes)


@dataclass
class CompiledKernel(Generic[P, R_co]):
    """`launch(*runtime args, *dyn dims, stream, device)` runs the kernel and returns its outputs.

    Generic over the call's runtime parameters (P: the kernel's tensors, dyn scalars and pointers; its consts are
    bound) and its result (R): `gemm.compile(a, b)` is a `CompiledKernel` of `(A, B) -> C` to the mypy plugin,
    and a lazy-style kernel object's `compile()` one of the object's own parameters to any type checker.
    """

    launch: Callable[..., Any]
    outputs: tuple[OutputSpec, ...]  # in parameter order
    returns: tuple[int, ...]  # indices into `outputs`, in the order the kernel returns them
    written: tuple[str, ...]  # the tensor parameters the kernel writes (LoweredKernel.written_params)
    folder: Path
    compiled: bool  # False when the build was found in the disk cache
    module: ModuleType | None = None
    call: Callable[..., Any] | None = None  # `kernel(a, b)`: this kernel's own call, consts bound (Dispatcher.compile)
    profile: Callable[[Any], Any] | None = None  # tensor supply type -> TileLang's Profiler of `call`

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co:
        """Run the kernel on torch tensors, as TileLang's compiled kernels run: the call's runtime arguments only
        (by position or by name)."""
        if self.call is None:
            raise ArgumentTypeError("this kernel was loaded without its call; call the jit function with tensors")
        return self.call(*args, **kwargs)  # type: ignore[no-any-return]

    def get_kernel_source(self) -> str:
        """TileLang's name for `cuda_source`."""
        return self.cuda_source

    def get_profiler(self, tensor_supply_type: Any = None) -> Any:
        """TileLang's Profiler (`assert_allclose(reference)`, `do_bench()`) of this kernel's call."""
        if self.profile is None:
            raise ArgumentTypeError("this kernel was loaded without its call; profile the kernel fn.compile(...) returns")
        return self.profile(tensor_supply_type)

    @property
    def cuda_source(self) -> str:
        """The CUDA C++ of the device kernel(s), as it was built."""
        return (self.folder / CUDA_SOURCE).read_text()

    @property
    def launcher_source(self) -> str:
        """The launcher's C++ (around backend/csrc/launcher.h), as it was built."""
        return (self.folder / LAUNCHER_SOURCE).read_text()

    def empty_outputs(self, *args: Any, device: int = -1) -> tuple[Any, ...]:
        """The outputs `launch(*args, ...)` would allocate, allocated but not written (device -1: the CPU)."""
        assert self.module is not None
        result: tuple[Any, ...] = self.module.empty_outputs(*args, 0, device)
        return result


def load(folder: Path, *, compiled: bool) -> CompiledKernel[..., Any]:
    """The kernel of a build folder: import its launcher and hand it the cubin."""
    module = load_extension(MODULE, folder / extension_name(MODULE))
    module.set_cubin((folder / CUBIN).read_bytes())
    about = json.loads(module.DESCRIPTION)
    outputs = tuple(OutputSpec(o["label"], tuple(o["shape"]), o["dtype"]) for o in about["outputs"])
    return CompiledKernel(module.launch, outputs, tuple(about["returns"]), tuple(about["written"]), folder, compiled, module)
