"""Lowering: TileLang's pipeline from a PrimFunc to CUDA source and a C host launcher.

The host launcher is TileLang's own (`TLCUDASourceWrapper`, the one its
ctypes/cython backends compile): it computes the grid from the dyn dims,
encodes TMA descriptors and launches on the given stream. tltyped adds only
the Python binding around it (see `launcher.py`).
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

from tltyped.backend.options import BuildOptions
from tltyped.frontend.elaborate import Elaborated


class _HostWrapper(TLCUDASourceWrapper):  # type: ignore[misc]
    """TileLang's CUDA host wrapper, taking raw pointer (`tl.ptr`) parameters and empty grids.

    A launch whose grid is empty (a dyn dim of 0) is skipped, as torch skips
    empty work, instead of failing with an invalid configuration.
    """

    _TYPE_MAP = {**TLCUDASourceWrapper._TYPE_MAP, "handle": "void*"}

    def get_kernel_launch_code(self, name: str, grid: str, block: str, smem: Any, args: str, cluster: Any) -> str:
        launch: str = super().get_kernel_launch_code(name, grid, block, smem, args, cluster)
        return f"\n\tif ({grid}.x != 0 && {grid}.y != 0 && {grid}.z != 0)" + launch

    def get_cuda_host_adapter_include(self) -> str:
        return ""  # the launcher template provides the driver entry points itself


def host_type_map() -> dict[str, str]:
    """TIR scalar type -> the C type TileLang's host launcher spells it with."""
    return dict(_HostWrapper._TYPE_MAP)


@dataclass(frozen=True)
class KernelDeclaration:
    """A `__global__` function of the device code, with its parameters as host types."""

    name: str
    params: tuple[str, ...]


HOST_SCALARS = frozenset({
    "int", "unsigned int", "long long", "unsigned long long", "float", "double", "bool",
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
})


def _host_type(param: str) -> str:
    """The type a host-side declaration of a kernel parameter needs (pointers as void*)."""
    text = " ".join(param.replace("__grid_constant__", " ").replace("__restrict__", " ").split())
    if "*" in text:
        return "void*"
    words = [w for w in text.split() if w != "const"]
    type_name = " ".join(words[:-1])
    if type_name == "CUtensorMap" or type_name in HOST_SCALARS:
        return type_name
    raise LoweringError(f"kernel parameter `{param.strip()}` has a type the host launcher does not support")


def kernel_declarations(cuda_source: str, names: list[str]) -> tuple[KernelDeclaration, ...]:
    declarations = []
    for name in names:
        found = re.search(rf"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?{re.escape(name)}\s*\(", cuda_source)
        if found is None:
            raise LoweringError(f"kernel `{name}` is not declared in the generated CUDA source")
        depth, end = 1, found.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(cuda_source[end], 0)
            end += 1
        params = [p for p in _split_top_level(cuda_source[found.end() : end - 1]) if p.strip()]
        declarations.append(KernelDeclaration(name, tuple(_host_type(p) for p in params)))
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


class LoweringError(RuntimeError):
    """TileLang/TVM rejected the kernel while lowering it."""


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
        with tvm.target.Target(self.target):
            module = tvm.IRModule({self.prim_func.attrs["global_symbol"]: self.prim_func})
            return _HostWrapper(
                module, self.cuda_source, tvm.target.Target(self.target),
                device_mod=self.artifact.device_mod, host_mod=self.artifact.host_mod, pass_configs=self.pass_configs,
            )

    @property
    def host_source(self) -> str:
        """TileLang's C host launcher (`get_last_error`, `init`, `call`): host code only."""
        code: str = self.wrapper.lib_code
        assert code.startswith(self.cuda_source)
        return code[len(self.cuda_source) :]

    @cached_property
    def kernels(self) -> tuple[KernelDeclaration, ...]:
        """The device functions the host launcher calls, in launch order."""
        return kernel_declarations(self.cuda_source, list(self.wrapper.function_names))

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


def lower(name: str, elaborated: Elaborated, target: dict[str, Any], options: BuildOptions = BuildOptions()) -> LoweredKernel:
    prim_func = elaborated.prim_func
    attrs = prim_func.attrs
    pass_configs = dict(attrs["tilelang_pass_configs"]) if attrs and "tilelang_pass_configs" in attrs else {}
    pass_configs.update(options.pass_configs)
    try:
        with tvm.transform.PassContext(opt_level=3, config=pass_configs), tvm.target.Target(target):
            artifact = tilelang.lower(prim_func, target=target)
    except Exception as exc:
        raise LoweringError(f"{name}: TileLang could not lower the kernel for {target['arch']}: {exc}") from exc
    return LoweredKernel(name, prim_func, target, artifact, elaborated.dyn_vars, pass_configs, options.compile_flags)
