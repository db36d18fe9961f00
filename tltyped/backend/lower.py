"""Lowering: TileLang's pipeline from a PrimFunc to CUDA source and a C host launcher.

The host launcher is TileLang's own (`TLCUDASourceWrapper`, the one its
ctypes/cython backends compile): it computes the grid from the dyn dims,
encodes TMA descriptors and launches on the given stream. tltyped adds only
the Python binding around it (see `launcher.py`), and reads from the lowered
device code which tensors the kernel writes (`LoweredKernel.written_params`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import tilelang
from tilelang import tvm
from tilelang.transform import PassConfigKey
from tilelang.jit.adapter.wrapper import TLCUDASourceWrapper
from tvm.tirx.stmt_functor import pre_order_visit

from tltyped.abi import HOST_SCALARS
from tltyped.backend.options import BuildOptions, environment_pass_configs
from tltyped.errors import LoweringError
from tltyped.frontend.elaborate import Elaborated
from tltyped.frontend.tir_nodes import tir_nodes
from tltyped.types.dtypes import PACKED_DTYPES


class _HostWrapper(TLCUDASourceWrapper):  # type: ignore[misc]
    """TileLang's CUDA host wrapper, taking raw pointer (`tl.ptr`) parameters and empty grids.

    A launch whose grid is empty (a dyn dim of 0) is skipped, as torch skips
    empty work, instead of failing with an invalid configuration.
    """

    # and the sub-byte argument types' pointers, as the kernel declares them (TileLang's map lacks them)
    _TYPE_MAP = {**TLCUDASourceWrapper._TYPE_MAP, "handle": "void*", **{d.name: d.c_name for d in PACKED_DTYPES}}

    def get_kernel_launch_code(self, name: str, grid: str, block: str, smem: Any, args: str, cluster: Any) -> str:
        launch: str = super().get_kernel_launch_code(name, grid, block, smem, args, cluster)
        if not args:  # TileLang writes `cudaLaunchKernelEx(&config, kernel, )` for a kernel of no parameters
            launch = launch.replace(f"{name}, );", f"{name});")
        return f"\n\tif ({grid}.x != 0 && {grid}.y != 0 && {grid}.z != 0)" + launch

    def get_cuda_host_adapter_include(self) -> str:
        return ""  # the launcher template provides the driver entry points itself

    def get_dynamic_symbolic_set(self, prim_func: Any) -> list[tuple[str, str]]:
        """TileLang's (each shape's and stride's variables), then the variables only inside a shape (`n * 4`),
        which TileLang's leaves out of `call`'s parameters though the kernel takes them."""
        found: dict[str, str] = dict(super().get_dynamic_symbolic_set(prim_func))
        for param in prim_func.params:
            if param in prim_func.buffer_map:
                for dim in prim_func.buffer_map[param].shape:
                    for var in tvm.tirx.analysis.undefined_vars(dim, []):
                        found.setdefault(var.name, str(var.dtype))
        return list(found.items())


@dataclass(frozen=True)
class KernelDeclaration:
    """A `__global__` function of the device code, with its parameters as host types."""

    name: str
    params: tuple[str, ...]


def _host_type(param: str, kernel: str) -> str:
    """The type a host-side declaration of a kernel parameter needs (pointers as void*)."""
    text = " ".join(param.replace("__grid_constant__", " ").replace("__restrict__", " ").split())
    if "*" in text:
        return "void*"
    words = [w for w in text.split() if w != "const"]
    type_name = " ".join(words[:-1])
    if type_name == "CUtensorMap":
        return type_name
    if type_name in HOST_SCALARS:
        return HOST_SCALARS[type_name]
    raise LoweringError(
        f"{kernel}: the device code takes parameter `{param.strip()}`, of a type the host launcher does not pass; "
        f"it passes pointers, TMA descriptors and {', '.join(sorted(set(HOST_SCALARS.values())))}"
    )


def kernel_declarations(cuda_source: str, names: list[str], kernel: str) -> tuple[KernelDeclaration, ...]:
    """The device functions `names` of `cuda_source` with their parameters' host types; `kernel` names the jit
    function in errors."""
    declarations = []
    for name in names:
        found = re.search(rf"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?{re.escape(name)}\s*\(", cuda_source)
        if found is None:
            raise LoweringError(f"{kernel}: kernel `{name}` is not declared in the generated CUDA source")
        depth, end = 1, found.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(cuda_source[end], 0)
            end += 1
        params = [p for p in _split_top_level(cuda_source[found.end() : end - 1]) if p.strip()]
        declarations.append(KernelDeclaration(name, tuple(_host_type(p, kernel) for p in params)))
    return tuple(declarations)


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1, "<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts



@dataclass
class LoweredKernel:
    """One specialisation, lowered for one target: what `fn.lower(...)` returns."""

    name: str
    prim_func: Any
    target: dict[str, Any]
    artifact: Any
    dyn_vars: Mapping[str, Any]  # dyn dim -> its TIR variable in prim_func
    pass_configs: dict[str, Any]  # TileLang's pass configuration the kernel was lowered with
    extra_flags: tuple[str, ...] = ()  # `tl.jit(compile_flags=...)`

    @cached_property
    def tir(self) -> str:
        """The elaborated TIR, before TileLang's passes: the kernel as the body built it."""
        text: str = self.prim_func.script()
        return text

    @property
    def cuda_source(self) -> str:
        """The generated CUDA C++ of the device kernel(s)."""
        source: str = self.artifact.kernel_source
        return source

    @cached_property
    def wrapper(self) -> Any:
        try:
            with tvm.target.Target(self.target):
                module = tvm.IRModule({self.prim_func.attrs["global_symbol"]: self.prim_func})
                return _HostWrapper(
                    module, self.cuda_source, tvm.target.Target(self.target),
                    device_mod=self.artifact.device_mod, host_mod=self.artifact.host_mod, pass_configs=self.pass_configs,
                )
        except AssertionError as exc:  # TileLang's wrapper asserts that each device function gets its arguments
            raise LoweringError(f"{self.name}: TileLang's host code for the kernel cannot be made ({exc})") from None

    @property
    def host_source(self) -> str:
        """TileLang's C host launcher (`get_last_error`, `init`, `call`): host code only."""
        code: str = self.wrapper.lib_code
        assert code.startswith(self.cuda_source)
        return code[len(self.cuda_source) :]

    @cached_property
    def shared_memory(self) -> dict[str, int]:
        """Each device function's dynamic shared memory in bytes, as its launch asks for it (TileLang's attribute)."""
        sizes: dict[str, int] = {}
        for symbol, function in self.artifact.device_mod.functions.items():
            if function.attrs is not None and "dyn_shared_memory_buf" in function.attrs:
                sizes[str(symbol.name_hint)] = int(function.attrs["dyn_shared_memory_buf"])
        return sizes

    @cached_property
    def kernels(self) -> tuple[KernelDeclaration, ...]:
        """The device functions the host launcher calls, in launch order."""
        return kernel_declarations(self.cuda_source, list(self.wrapper.function_names), self.name)

    @cached_property
    def written_params(self) -> frozenset[int]:
        """The indices (into `prim_func.params`) of the tensor parameters the kernel may write.

        Read from the lowered device functions, where every access to global
        memory is explicit: a store into the tensor's buffer; a
        `tvm_access_ptr` to it with the write bit in its access mask (atomics,
        bulk TMA stores, `T.stg*`); a TMA store through a descriptor the host
        code makes from the tensor (the descriptor's global address). TileLang's
        own `tl.readonly_param_indices` misses the last. Where a use cannot be
        told apart it counts as a write, so a tensor may be reported written that
        is only read, never the reverse: a pointer to an element (`address_of`)
        handed to any operation, an access mask that is not a constant, a
        descriptor passed to anything but a TMA load or prefetch, the parameter
        used other than through its buffer or these (pointer arithmetic, a call).
        """
        pf = self.prim_func
        index_of = {pf.buffer_map[p].data.name: i for i, p in enumerate(pf.params) if p in pf.buffer_map}
        (host,) = self.artifact.host_mod.functions.values()
        descriptors = host.attrs["tma_descriptor_args"] if host.attrs and "tma_descriptor_args" in host.attrs else {}
        made_from = {desc.name: _var_names(args[_TMA_GLOBAL_ADDRESS]) for desc, args in descriptors.items()}
        written: set[str] = set()
        for function in self.artifact.device_mod.functions.values():
            for name in _written_handles(function):
                written |= made_from.get(name, {name})
        return frozenset(index_of[name] for name in written if name in index_of)

    @property
    def compile_flags(self) -> list[str]:
        """The extra nvcc flags: the body's (`T.annotate_compile_flags`), the pass configuration's, the decorator's.

        The pass configuration speaks for nvcc as it does in TileLang's own
        CUDA build: `tl.device_compile_flags`, `tl.enable_fast_math` and
        `tl.ptxas_register_usage_level`.
        """
        attrs = self.prim_func.attrs
        body = [str(f) for f in attrs["tilelang_compile_flags"]] if attrs and "tilelang_compile_flags" in attrs else []
        return body + pass_config_flags(self.pass_configs) + list(self.extra_flags)

    def __repr__(self) -> str:
        return f"<LoweredKernel {self.name} for {self.target['arch']}>"


_TMA_GLOBAL_ADDRESS = 4
"""Where a descriptor's global address is among its `tma_descriptor_args` (create function, handle, dtype, rank, address, ...)."""

_READS_THROUGH_DESCRIPTOR = frozenset({
    "tl.tma_load", "tl.tma_load_im2col", "tl.tma_load_multicast", "tl.tma_load_gather4", "tl.prefetch_tma_descriptor",
})
"""The device operations that take a TMA descriptor and only read the tensor it describes."""

_ACCESS_PTR = "tirx.tvm_access_ptr"  # (type, data, offset, extent, access mask: 1 read, 2 write)
_ADDRESS_OF = "tirx.address_of"
_WRITE = 2


def _written_handles(function: Any) -> set[str]:
    """The names of a device function's pointer parameters (data and TMA descriptors) it may write through.

    A pre-order walk that does not enter what it has explained as a read
    (a read-only access pointer, a read through a descriptor), so a parameter
    reached anywhere else is a use it cannot explain, and counts as a write.
    """
    handles = {p.name for p in function.params if p.dtype == "handle"}
    written: set[str] = set()

    def visit(node: Any) -> bool:
        if isinstance(node, tvm.tirx.BufferStore) and node.buffer.data.name in handles:
            written.add(node.buffer.data.name)
        elif isinstance(node, tvm.tirx.Var) and node.name in handles:
            written.add(node.name)
        elif isinstance(node, tvm.tirx.Call):
            op, args = getattr(node.op, "name", None), node.args
            if op == _ACCESS_PTR and isinstance(args[1], tvm.tirx.Var) and args[1].name in handles:
                mask = args[4]
                if not isinstance(mask, tvm.tirx.IntImm) or mask.value & _WRITE:
                    written.add(args[1].name)
                return False
            if op in _READS_THROUGH_DESCRIPTOR and isinstance(args[0], tvm.tirx.Var) and args[0].name in handles:
                return False
            if op == _ADDRESS_OF and isinstance(args[0], tvm.tirx.BufferLoad) and args[0].buffer.data.name in handles:
                written.add(args[0].buffer.data.name)
        return True

    pre_order_visit(function.body, visit)
    return written


def _var_names(expr: Any) -> set[str]:
    return {node.name for node in tir_nodes(expr) if isinstance(node, tvm.tirx.Var)}


def pass_config_flags(pass_configs: Mapping[str, Any]) -> list[str]:
    """The nvcc flags TileLang's pass configuration asks for, in the order TileLang's CUDA build adds them."""
    extra = pass_configs.get(PassConfigKey.TL_DEVICE_COMPILE_FLAGS.value) or []  # a list (TVM checks)
    flags = [token for flag in extra for token in shlex.split(str(flag))]
    if pass_configs.get(PassConfigKey.TL_ENABLE_FAST_MATH.value):
        flags.append("--use_fast_math")
    level = pass_configs.get(PassConfigKey.TL_PTXAS_REGISTER_USAGE_LEVEL.value)
    if level is not None:
        flags.append(f"--ptxas-options=--register-usage-level={int(level)}")
    return flags


@tvm.instrument.pass_instrument
class _LastPass:
    """The name of TileLang's pass that began last: where a lowering failure happened. TVM's errors from inside a
    pass (a failed check) name neither the pass nor the user's statement."""

    def __init__(self) -> None:
        self.began: str | None = None  # not `name`: TVM's instruments have a `name` of their own

    def run_before_pass(self, mod: Any, info: Any) -> None:
        self.began = str(info.name)


def lower(name: str, elaborated: Elaborated, target: dict[str, Any], options: BuildOptions = BuildOptions()) -> LoweredKernel:
    prim_func = elaborated.prim_func
    attrs = prim_func.attrs
    pass_configs = dict(attrs["tilelang_pass_configs"]) if attrs and "tilelang_pass_configs" in attrs else {}
    pass_configs.update(options.pass_configs)
    for key, value in environment_pass_configs().items():  # TileLang's defaults from the environment, as it takes them
        pass_configs.setdefault(key, value)
    last = _LastPass()
    try:
        with tvm.transform.PassContext(opt_level=3, config=pass_configs, instruments=[last]), tvm.target.Target(target):
            artifact = tilelang.lower(prim_func, target=target)
    except Exception as exc:
        where = f" (in its pass {last.began})" if last.began else ""
        raise LoweringError(f"{name}: TileLang could not lower the kernel for {target['arch']}{where}: {exc}") from exc
    return LoweredKernel(name, prim_func, target, artifact, elaborated.dyn_vars, pass_configs, options.compile_flags)
