"""Compile a lowered kernel into a launch function the fast path calls directly.

The Python-side ABI of `launch` is fixed by the signature, not by TileLang
(see `tltyped.abi`); the generated C code maps its arguments onto TileLang's
`call(...)` by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from tilelang import tvm
from tilelang.jit.adapter.utils import pythonic_expr
from tvm.tirx.stmt_functor import substitute

from tltyped.backend import build
from tltyped.backend.lower import HOST_SCALARS, LoweredKernel
from tltyped.frontend.signature import KernelSignature, Kind
from tltyped.templates import render
from tltyped.types.dtypes import ALL_DTYPES, as_dtype, bool_, to_torch

MODULE = "tltyped_kernel"  # every kernel's extension module has this name, each at its own path


@dataclass(frozen=True)
class CArg:
    label: str  # what an error message calls it
    cname: str
    ctype: str
    convert: str  # "ptr" | "int" | "bool" | "float"
    lo: int = 0
    hi: int = 0


@dataclass(frozen=True)
class OutputSpec:
    """An output the kernel writes: allocated by the caller before each launch."""

    shape: tuple[str, ...]  # Python expressions over the launch's runtime arguments `a0, ...` and dyn dims `d0, ...`
    dtype: torch.dtype


@dataclass
class CompiledKernel:
    lowered: LoweredKernel
    launch: Callable[..., None]
    outputs: tuple[OutputSpec, ...]  # in parameter order (the order `launch` takes them)
    returns: tuple[int, ...]  # indices into `outputs`, in the order the kernel returns them
    compiled: bool  # False when the build was found in the disk cache


class ABIError(RuntimeError):
    """The lowered kernel's parameters are not what the signature implies (an internal error)."""


OPAQUE_TYPES = tuple(sorted({d.c_name for d in ALL_DTYPES} - HOST_SCALARS))
"""Element types the host launcher names only through pointers (`half_t`, ...): declared, never defined."""


def _scalar_arg(label: str, cname: str, dtype: str) -> CArg:
    if dtype == "handle":
        return CArg(label, cname, "void*", "ptr")
    element = as_dtype(dtype)
    if element is bool_:
        return CArg(label, cname, element.c_name, "bool")
    if element.is_float():
        return CArg(label, cname, element.c_name, "float")
    lo, hi = element.value_range()
    return CArg(label, cname, element.c_name, "int", lo, hi)


def describe_abi(lowered: LoweredKernel, signature: KernelSignature) -> tuple[list[CArg], list[str], tuple[OutputSpec, ...], tuple[int, ...]]:
    """The C arguments in Python order, TileLang's call order, and the outputs."""
    pf = lowered.prim_func
    wrapper = lowered.wrapper
    runtime = [p for p in signature.params if p.is_runtime]
    params = list(pf.params)
    if len(params) < len(runtime):
        raise ABIError(f"{signature.name}: lowered kernel has {len(params)} parameters, expected at least {len(runtime)}")
    args: list[CArg] = []
    cname_of: dict[str, str] = {}
    outputs: list[OutputSpec] = []
    # what output shapes may name: dyn dims as `d0, d1, ...`, dyn scalars as their argument `a<index>`
    placeholders = {lowered.dyn_vars[d]: tvm.tirx.Var(f"d{i}", "int32") for i, d in enumerate(signature.dyn_dims)}
    for index, var in enumerate(params):
        cname = f"a{index}"
        if var in pf.buffer_map:
            buffer = pf.buffer_map[var]
            if index < len(runtime) and runtime[index].kind is not Kind.TENSOR:
                raise ABIError(f"{signature.name}: parameter {index} is a buffer, expected {runtime[index].name}")
            label = runtime[index].name if index < len(runtime) else f"output {index - len(runtime)}"
            args.append(CArg(label, cname, "void*", "ptr"))
            cname_of[buffer.data.name] = f"({as_dtype(str(buffer.dtype)).c_name}*){cname}"
            if index >= len(runtime):
                shape = tuple(
                    str(int(s)) if isinstance(s, tvm.tirx.IntImm) else pythonic_expr(substitute(s, placeholders), floor_div_op="//")
                    for s in buffer.shape
                )
                outputs.append(OutputSpec(shape, to_torch(str(buffer.dtype))))
        else:
            if index >= len(runtime) or runtime[index].kind is Kind.TENSOR:
                raise ABIError(f"{signature.name}: parameter {index} ({var.name}) is a scalar where a buffer was expected")
            args.append(_scalar_arg(runtime[index].name, cname, str(var.dtype)))
            cname_of[var.name] = cname
            placeholders[var] = tvm.tirx.Var(cname, var.dtype)
    for offset, name in enumerate(signature.dyn_dims):
        cname = f"d{offset}"
        args.append(_scalar_arg(f"dim {name}", cname, "int32"))
        cname_of.setdefault(lowered.dyn_vars[name].name, cname)  # the variable's name in the kernel
    call_args = []
    for var in params:
        key = pf.buffer_map[var].data.name if var in pf.buffer_map else var.name
        call_args.append(cname_of[key])
    for name, _dtype in wrapper.get_dynamic_symbolic_set(pf):
        if name not in cname_of:
            raise ABIError(f"{signature.name}: the kernel needs dyn symbol {name!r}, which is not a declared dyn dim")
        call_args.append(cname_of[name])
    out_idx = list(pf.attrs["tilelang_out_idx"]) if pf.attrs and "tilelang_out_idx" in pf.attrs else []
    returns = tuple(len(outputs) + int(i) for i in out_idx)
    return args, call_args, tuple(outputs), returns


def compile_kernel(lowered: LoweredKernel, signature: KernelSignature) -> CompiledKernel:
    """Build the device code (cubin) and the host launcher (extension) side by side, or load them."""
    args, call_args, outputs, returns = describe_abi(lowered, signature)
    launcher = render(
        "launcher.cpp.j2", name=signature.name, module=MODULE, host_source=lowered.host_source,
        kernels=lowered.kernels, args=args, call_args=call_args, opaque_types=OPAQUE_TYPES,
    )
    steps = [
        build.Step("kernel.cu", lowered.cuda_source, build.nvcc_device_command(lowered.target["arch"], lowered.compile_flags), "kernel.cubin"),
        build.Step("launcher.cpp", launcher, build.nvcc_host_command(), build.extension_name(MODULE)),
    ]
    module, folder, compiled = build.build(signature.name, MODULE, steps)
    module.set_cubin((folder / "kernel.cubin").read_bytes())
    return CompiledKernel(lowered, module.launch, outputs, returns, compiled)
