"""Compile a lowered kernel into the launcher the fast path calls directly.

The ABI of `launch` (and of its raw twin, for the C cached call) is fixed by
the signature, not by TileLang (see `tltyped.abi`); the generated C code maps
its arguments onto TileLang's `call(...)` by name, allocates the kernel's
outputs through torch's allocator and returns them.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from tilelang import tvm
from tilelang.jit.adapter.utils import pythonic_expr
from tvm.tirx.stmt_functor import substitute

from tltyped.backend import build
from tltyped.backend.kernel import CUBIN, MODULE, CompiledKernel, OutputSpec, load
from tltyped.backend.lower import HOST_SCALARS, LoweredKernel, host_type_map
from tltyped.frontend.signature import KernelSignature, Kind
from tltyped.templates import render
from tltyped.types.dtypes import ALL_DTYPES, as_dtype, bool_


@dataclass(frozen=True)
class CArg:
    """A value `launch` converts from a Python argument."""

    label: str  # what an error message calls it
    cname: str
    ctype: str
    convert: str  # "ptr" | "int" | "bool" | "float"
    lo: int = 0
    hi: int = 0
    dim: bool = False  # a dyn dim: a raw launch passes it as a word, not a Python int (tltyped.abi)


@dataclass(frozen=True)
class COutput:
    """An output `launch` allocates: its spec, and the DLPack type it is allocated with."""

    spec: OutputSpec
    dlpack_code: int
    bits: int


@dataclass(frozen=True)
class ABI:
    """How one lowered kernel's launcher reads its arguments and calls TileLang's host code."""

    args: tuple[CArg, ...]  # in the order `launch` takes them: runtime parameters, then dyn dims
    outputs: tuple[COutput, ...]  # allocated by the launcher, in parameter order; pointers `out[i]`
    call_args: tuple[str, ...]  # C expressions, in the order TileLang's `call` takes them
    returns: tuple[int, ...]  # indices into `outputs`, in the order the kernel returns them
    tensors: tuple[tuple[str, str], ...]  # each tensor's name in TileLang's host code, and what errors call it


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


def describe_abi(lowered: LoweredKernel, signature: KernelSignature) -> ABI:
    """Map the lowered PrimFunc's parameters onto the signature's runtime arguments and the outputs."""
    pf = lowered.prim_func
    runtime = [p for p in signature.params if p.is_runtime]
    params = list(pf.params)
    if len(params) < len(runtime):
        raise ABIError(f"{signature.name}: lowered kernel has {len(params)} parameters, expected at least {len(runtime)}")
    args: list[CArg] = []
    outputs: list[COutput] = []
    cname_of: dict[str, str] = {}
    tensors: list[tuple[str, str]] = []
    # what output shapes may name: dyn dims as `d0, d1, ...`, dyn scalars as their argument `a<index>`
    placeholders = {lowered.dyn_vars[d]: tvm.tirx.Var(f"d{i}", "int32") for i, d in enumerate(signature.dyn_dims)}
    for index, var in enumerate(params):
        if index < len(runtime):
            kind = runtime[index].kind
            if (kind is Kind.TENSOR and var not in pf.buffer_map) or (var in pf.buffer_map and kind not in (Kind.TENSOR, Kind.PTR)):
                # (a ptr parameter may be a buffer: `T.make_tensor(ptr, shape, dtype)`)
                raise ABIError(f"{signature.name}: parameter {index} ({var.name}) does not match {runtime[index].name!r}")
            if var in pf.buffer_map:
                args.append(CArg(runtime[index].name, f"a{index}", "void*", "ptr"))
            else:
                args.append(_scalar_arg(runtime[index].name, f"a{index}", str(var.dtype)))
                placeholders[var] = tvm.tirx.Var(f"a{index}", var.dtype)
            cname = f"a{index}"
        elif var in pf.buffer_map:
            cname = f"out[{len(outputs)}]"
            outputs.append(_output(f"output {pf.buffer_map[var].name!r}", pf.buffer_map[var], placeholders))
        else:
            raise ABIError(f"{signature.name}: parameter {index} ({var.name}) is a scalar where an output buffer was expected")
        if var in pf.buffer_map:
            buffer = pf.buffer_map[var]
            cname_of[buffer.data.name] = f"({as_dtype(str(buffer.dtype)).c_name}*){cname}"
            label = f"argument {runtime[index].name!r}" if index < len(runtime) else outputs[-1].spec.label
            tensors.append((buffer.data.name, label))
        else:
            cname_of[var.name] = cname
    for offset, name in enumerate(signature.dyn_dims):
        cname = f"d{offset}"
        args.append(dataclasses.replace(_scalar_arg(f"dim {name}", cname, "int32"), dim=True))
        cname_of.setdefault(lowered.dyn_vars[name].name, cname)  # the variable's name in the kernel
    call_args = [cname_of[pf.buffer_map[var].data.name if var in pf.buffer_map else var.name] for var in params]
    param_names = {pf.buffer_map[var].data.name if var in pf.buffer_map else var.name for var in params}
    for name, _dtype in lowered.wrapper.get_dynamic_symbolic_set(pf):
        if name in param_names:
            continue  # a scalar parameter that also sizes a buffer: TileLang's `call` takes it once
        if name not in cname_of:
            raise ABIError(f"{signature.name}: the kernel needs dyn symbol {name!r}, which is not a declared dyn dim")
        call_args.append(cname_of[name])
    out_idx = list(pf.attrs["tilelang_out_idx"]) if pf.attrs and "tilelang_out_idx" in pf.attrs else []
    returns = tuple(len(outputs) + int(i) for i in out_idx)  # TileLang counts outputs from the end
    return ABI(tuple(args), tuple(outputs), tuple(call_args), returns, tuple(tensors))


def _output(label: str, buffer: object, placeholders: dict[object, object]) -> COutput:
    """An output buffer's shape as C expressions over the launch's arguments, and its element type."""
    shape = tuple(
        str(int(s)) if isinstance(s, tvm.tirx.IntImm)
        else pythonic_expr(substitute(s, placeholders), host_type_map(), floor_div_op="/", func_name_map=_C_FUNCTIONS)
        for s in buffer.shape  # type: ignore[attr-defined]
    )
    dtype = as_dtype(str(buffer.dtype))  # type: ignore[attr-defined]
    return COutput(OutputSpec(label, shape, dtype.name), dtype.dlpack_code, dtype.bits)


_C_FUNCTIONS = {"min": "std::min<long long>", "max": "std::max<long long>"}
"""Sizes are non-negative, so C's `/` is floor division; min/max over the launcher's mixed int types."""


def compile_kernel(lowered: LoweredKernel, signature: KernelSignature) -> CompiledKernel:
    """Build the device code (cubin) and the host launcher (extension) side by side, or load them."""
    abi = describe_abi(lowered, signature)
    description = {"outputs": [o.spec.__dict__ for o in abi.outputs], "returns": list(abi.returns)}
    launcher = render(
        "launcher.cpp.j2", name=signature.name, module=MODULE, host_source=lowered.host_source,
        kernels=lowered.kernels, abi=abi, opaque_types=OPAQUE_TYPES, description=json.dumps(description),
    )
    steps = [
        build.Step("kernel.cu", lowered.cuda_source, build.nvcc_device_command(lowered.target["arch"], lowered.compile_flags), CUBIN),
        build.Step("launcher.cpp", launcher, build.nvcc_host_command(), build.extension_name(MODULE)),
    ]
    folder, compiled = build.build(signature.name, steps)
    return load(folder, compiled=compiled, lowered=lowered)
