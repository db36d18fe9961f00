"""Compile a lowered kernel into the launcher the fast path calls directly.

The ABI of `launch` (and of its raw twin, for the C cached call) is fixed by
the signature, not by TileLang (see `tltyped.abi`). The launcher is
backend/csrc/launcher.h around what varies per kernel
(templates/launcher.cpp.j2): its arguments and how TileLang's `call(...)`
takes them, the shapes of the outputs it allocates, and, where the kernel
writes a tensor argument, the memory each tensor argument spans, so that a
launch in which a written tensor shares memory is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import torch
from tilelang import tvm
from tilelang.jit.adapter.utils import pythonic_expr
from tvm.tirx.stmt_functor import substitute

from tltyped.abi import HOST_SCALARS
from tltyped.backend import build
from tltyped.backend import target as targets
from tltyped.backend.kernel import CUBIN, CUDA_SOURCE, LAUNCHER_SOURCE, MODULE, CompiledKernel, OutputSpec, load
from tltyped.backend.lower import LoweredKernel
from tltyped.errors import ABIError, KernelBuildError
from tltyped.frontend.extents import check_launches
from tltyped.frontend.prim_func import compact_strides
from tltyped.frontend.signature import KernelSignature, Kind
from tltyped.frontend.tir_nodes import tir_nodes
from tltyped.templates import render
from tltyped.types.dtypes import (
    ALL_DTYPES, PACKED_DTYPES, as_dtype, bool_, dlpack_type, is_packed, packed_output_sizes, to_torch,
)

HEADER = "launcher.h"
"""The launcher's C++ (backend/csrc/), included by every kernel's launcher source."""


@functools.cache
def header_digest() -> str:
    """sha256 of launcher.h: each launcher source names it, so the build key (its source) covers the header."""
    return hashlib.sha256(_csrc().joinpath(HEADER).read_bytes()).hexdigest()


def _csrc() -> Any:
    return resources.files("tltyped.backend").joinpath("csrc")


@dataclass(frozen=True)
class CArg:
    """A value `launch` converts from a Python argument (launcher.h's `Arg`)."""

    name: str  # the user's name: the parameter's, or the dyn dim's
    cname: str  # what sizes call it: `a<parameter index>`, or `d<dim index>` for a dyn dim
    ctype: str  # its C type where TileLang's `call` takes it
    convert: str  # launcher.h's `Convert`: "pointer" | "dim" | "integer" | "boolean" | "real"
    lo: int = 0  # an integer's or a dim's range, [lo, hi] (its dtype's `value_range`, as the binder's)
    hi: int = 0
    max: float = 0.0  # a real's largest finite value (torch.finfo's max, as the binder's)

    @property
    def label(self) -> str:
        """What an error message calls it."""
        return f"dim {self.name}" if self.convert == "dim" else self.name

    @property
    def c_range(self) -> str:
        """launcher.h's `Arg` less the label and conversion, as C: `lo, hi, max`."""
        lo = "LLONG_MIN" if self.lo == -(2**63) else f"{self.lo}LL"  # (-2**63 is no literal: 2**63 is unsigned)
        return f"{lo}, {self.hi}ULL, {self.max!r}"

    def value(self, position: int) -> str:
        """The converted value of the launch's argument at `position` (launcher.h's `Value v[]`), as C."""
        return f"v[{position}].{_VALUE_FIELDS[self.convert]}"


_VALUE_FIELDS = {"pointer": "pointer", "dim": "integer", "integer": "integer", "boolean": "boolean", "real": "real"}


@dataclass(frozen=True)
class SizeExpr:
    """A size the launcher computes from the launch's arguments: launcher.h's `Size` (64-bit, never wrapped)."""

    code: str  # C++ over the arguments' C names (`d0 * 4`): what the launcher computes and messages show
    text: str  # the same over the user's names (`n * 4`)
    names: tuple[tuple[str, str], ...]  # each argument it names: (user name, C name)
    int32: bool  # computed, by the kernel, in int32 (an int32 TIR expression; an argument is range-checked itself)


@dataclass(frozen=True)
class COutput:
    """An output `launch` allocates: its spec, its shape as sizes, and the DLPack type it is allocated with."""

    spec: OutputSpec
    shape: tuple[SizeExpr, ...]
    dlpack_code: int
    bits: int
    lanes: int = 1  # a packed output's storage: torch's float4_e2m1fn_x2 is 2 lanes of float4_e2m1fn

    @property
    def int32_dims(self) -> list[tuple[int, SizeExpr]]:
        """The dims the kernel computes its indices of in int32: past 2**31 - 1 they overflow."""
        return [(dim, size) for dim, size in enumerate(self.shape) if size.int32]


@dataclass(frozen=True)
class CTensor:
    """A tensor argument, as the launcher's check of the tensors the kernel writes sees it (launcher.h's `span`)."""

    name: str  # the parameter's
    data: str  # its data pointer, as C
    bits: int  # per element
    shape: tuple[SizeExpr, ...]
    strides: tuple[SizeExpr, ...]  # in elements, as the kernel is built for them
    written: bool  # by the kernel (LoweredKernel.written_params)

    @property
    def label(self) -> str:
        return f"argument {self.name!r}"


@dataclass(frozen=True)
class ABI:
    """How one lowered kernel's launcher reads its arguments and calls TileLang's host code."""

    args: tuple[CArg, ...]  # in the order `launch` takes them: runtime parameters, then dyn dims
    outputs: tuple[COutput, ...]  # allocated by the launcher, in parameter order; pointers `out[i]`
    call_args: tuple[str, ...]  # C expressions, in the order TileLang's `call` takes them
    returns: tuple[int, ...]  # indices into `outputs`, in the order the kernel returns them
    tensors: tuple[tuple[str, str], ...]  # each tensor's name in TileLang's host code, and what errors call it
    tensor_args: tuple[CTensor, ...]  # the tensors among `args`, in order
    given_tensors: int  # the signature's tensor parameters, which the call path passes `launch` last (tltyped/abi.py)
    written: tuple[int, ...]  # those the kernel writes, as indices among them: each launch bumps their versions

    @property
    def writes_arguments(self) -> bool:
        """Whether the kernel writes a tensor it is given: then each launch checks what those share memory with."""
        return any(t.written for t in self.tensor_args)

    @property
    def output_sizes(self) -> list[SizeExpr]:
        return [size for o in self.outputs for size in o.shape]

    @property
    def tensor_sizes(self) -> list[SizeExpr]:
        return [size for t in self.tensor_args for size in (*t.shape, *t.strides)]

    def arguments_named(self, sizes: Iterable[SizeExpr]) -> list[tuple[str, str]]:
        """(C name, value) of each argument `sizes` name, in launch order: what the launcher declares as sizes."""
        named = {cname for size in sizes for _, cname in size.names}
        return [(a.cname, a.value(position)) for position, a in enumerate(self.args) if a.cname in named]



OPAQUE_TYPES = tuple(sorted({d.c_name for d in (*ALL_DTYPES, *PACKED_DTYPES) if " " not in d.c_name}
                           - set(HOST_SCALARS.values())))
"""Element types the host launcher names only through pointers (`bfloat16_t`, ...): declared, never defined."""


def _scalar_arg(name: str, cname: str, dtype: str) -> CArg:
    """A scalar parameter of the lowered kernel (`handle`: a pointer), converted to exactly what the binder admits:
    an integer in its dtype's `value_range`, a float within `torch.finfo(dtype).max` (or not finite)."""
    if dtype == "handle":
        return CArg(name, cname, "void*", "pointer")
    element = as_dtype(dtype)
    if element is bool_:
        return CArg(name, cname, element.c_name, "boolean")
    if element.is_float():
        return CArg(name, cname, element.c_name, "real", max=float(torch.finfo(to_torch(element)).max))
    lo, hi = element.value_range()
    return CArg(name, cname, element.c_name, "integer", lo, hi)


def describe_abi(lowered: LoweredKernel, signature: KernelSignature) -> ABI:
    """Map the lowered PrimFunc's parameters onto the signature's runtime arguments and the outputs."""
    pf = lowered.prim_func
    wrapper = lowered.wrapper  # TileLang's host code, made first: a parameter it cannot pass is its LoweringError
    runtime = [p for p in signature.params if p.is_runtime]
    params = list(pf.params)
    if len(params) < len(runtime):
        raise ABIError(f"{signature.name}: lowered kernel has {len(params)} parameters, expected at least {len(runtime)}")
    args: list[CArg] = []
    outputs: list[COutput] = []
    cname_of: dict[str, str] = {}
    tensors: list[tuple[str, str]] = []
    tensor_args: list[tuple[int, str, Any]] = []  # (index, parameter name, buffer)
    # what sizes may name: dyn dims as `d0, d1, ...`, dyn scalars as their argument `a<index>`
    sizes = _Sizes(signature.name, {lowered.dyn_vars[d]: (f"d{i}", d) for i, d in enumerate(signature.dyn_dims)})
    for index, var in enumerate(params):
        if index < len(runtime):
            kind = runtime[index].kind
            if (kind is Kind.TENSOR and var not in pf.buffer_map) or (var in pf.buffer_map and kind not in (Kind.TENSOR, Kind.PTR)):
                # (a ptr parameter may be a buffer: `T.make_tensor(ptr, shape, dtype)`)
                raise ABIError(f"{signature.name}: parameter {index} ({var.name}) does not match {runtime[index].name!r}")
            name = runtime[index].name
            if var in pf.buffer_map:
                args.append(CArg(name, f"a{index}", "void*", "pointer"))
                tensor_args.append((index, name, pf.buffer_map[var]))
            else:
                args.append(_scalar_arg(name, f"a{index}", str(var.dtype)))
                sizes.names[var] = (f"a{index}", name)
            value = args[-1].value(index)
        elif var in pf.buffer_map:
            value = f"out[{len(outputs)}]"
            outputs.append(_output(f"output {pf.buffer_map[var].name!r}", pf.buffer_map[var], sizes))
        else:
            raise ABIError(f"{signature.name}: parameter {index} ({var.name}) is a scalar where an output buffer was expected")
        if var in pf.buffer_map:
            buffer = pf.buffer_map[var]
            cname_of[buffer.data.name] = f"({as_dtype(str(buffer.dtype)).c_name}*){value}"
            label = f"argument {runtime[index].name!r}" if index < len(runtime) else outputs[-1].spec.label
            tensors.append((buffer.data.name, label))
        else:
            cname_of[var.name] = f"({args[-1].ctype}){value}"
    for offset, name in enumerate(signature.dyn_dims):
        args.append(dataclasses.replace(_scalar_arg(name, f"d{offset}", signature.dim_dtype(name)), convert="dim"))
        cname_of.setdefault(lowered.dyn_vars[name].name, f"({args[-1].ctype}){args[-1].value(len(args) - 1)}")
    call_args = [cname_of[pf.buffer_map[var].data.name if var in pf.buffer_map else var.name] for var in params]
    param_names = {pf.buffer_map[var].data.name if var in pf.buffer_map else var.name for var in params}
    for name, _dtype in wrapper.get_dynamic_symbolic_set(pf):
        if name in param_names:
            continue  # a scalar parameter that also sizes a buffer: TileLang's `call` takes it once
        if name not in cname_of:
            raise ABIError(f"{signature.name}: the kernel needs dyn symbol {name!r}, which is not a declared dyn dim")
        call_args.append(cname_of[name])
    out_idx = list(pf.attrs["tilelang_out_idx"]) if pf.attrs and "tilelang_out_idx" in pf.attrs else []
    returns = tuple(len(outputs) + int(i) for i in out_idx)  # TileLang counts outputs from the end
    written = lowered.written_params
    arguments = tuple(
        CTensor(name, args[index].value(index), as_dtype(str(buffer.dtype)).bits, sizes.of(buffer.shape),
                sizes.of(buffer.strides or compact_strides(buffer.shape)), index in written)
        for index, name, buffer in tensor_args
    )
    written_names = {t.name for t in arguments if t.written}
    written_given = tuple(i for i, p in enumerate(signature.tensors) if p.name in written_names)
    return ABI(tuple(args), tuple(outputs), tuple(call_args), returns, tuple(tensors), arguments, len(signature.tensors),
               written_given)


class _Sizes:
    """Sizes (`SizeExpr`) from TIR expressions over the kernel's dyn dims and scalar parameters."""

    def __init__(self, kernel: str, names: dict[Any, tuple[str, str]]) -> None:
        self.kernel = kernel
        self.names = names  # TIR variable -> (C name, user name)

    def of(self, exprs: Iterable[Any]) -> tuple[SizeExpr, ...]:
        return tuple(self.size(expr) for expr in exprs)

    def size(self, expr: Any) -> SizeExpr:
        used: dict[Any, tuple[str, str]] = {}
        for node in tir_nodes(expr):
            if isinstance(node, tvm.tirx.Var):
                if node not in self.names:
                    raise ABIError(f"{self.kernel}: a size names {node.name!r}, which is neither a dyn dim nor a scalar "
                                   "parameter")
                used[node] = self.names[node]
            elif not isinstance(node, _SIZE_NODES):
                raise ABIError(f"{self.kernel}: the size {expr} uses {type(node).__name__}, which the launcher does not "
                               "compute")
        return SizeExpr(
            code=_render(expr, {var: cname for var, (cname, _) in used.items()}, "/"),
            text=_render(expr, {var: user for var, (_, user) in used.items()}, "//"),
            names=tuple((user, cname) for cname, user in used.values()),
            int32=str(expr.dtype) == "int32" and not isinstance(expr, (tvm.tirx.IntImm, tvm.tirx.Var)),
        )


_SIZE_NODES = (
    tvm.tirx.IntImm, tvm.tirx.Add, tvm.tirx.Sub, tvm.tirx.Mul, tvm.tirx.FloorDiv, tvm.tirx.FloorMod,
    tvm.tirx.Min, tvm.tirx.Max, tvm.tirx.Cast,
)
"""What a size may be made of: launcher.h's `Size` has each operation (`/` and `%` floor, as TIR's; `min`, `max`);
casts are dropped, every size being 64-bit."""


def _render(expr: Any, names: Mapping[Any, str], floor_div: str) -> str:
    renamed = substitute(expr, {var: tvm.tirx.Var(name, var.dtype) for var, name in names.items()})
    return str(pythonic_expr(renamed, ignore_cast=True, floor_div_op=floor_div))


def _output(label: str, buffer: Any, sizes: _Sizes) -> COutput:
    """An output buffer's shape as sizes over the launch's arguments, and its element type."""
    dtype = as_dtype(str(buffer.dtype))
    if not is_packed(dtype):
        shape = sizes.of(buffer.shape)
        return COutput(OutputSpec(label, tuple(s.code for s in shape), dtype.name), shape, dtype.dlpack_code, dtype.bits)
    # a sub-byte output: allocated as its packed storage, the final dim halved (types/dtypes.py's PACKED_DTYPES)
    shape = sizes.of(packed_output_sizes(tuple(buffer.shape)))
    code, bits, lanes = dlpack_type(to_torch(dtype))
    return COutput(OutputSpec(label, tuple(s.code for s in shape), dtype.name), shape, code, bits, lanes)


def check_launchable(lowered: LoweredKernel, name: str) -> None:
    """Refuse, before nvcc, a lowered kernel no launch could run (frontend/extents.py checks the TIR's extents)."""
    check_launches(name, lowered.prim_func)
    limit = targets.shared_memory_limit(lowered.target)
    for kernel, size in lowered.shared_memory.items():
        if limit is not None and size > limit:  # the launch would fail on the GPU, after nvcc
            raise KernelBuildError(
                f"{name}: {kernel} uses {size} bytes of shared memory; {lowered.target['arch']} allows a block at "
                f"most {limit}"
            )


def build_steps(lowered: LoweredKernel, signature: KernelSignature) -> list[build.Step]:
    """The kernel's two compiler runs: its device code into a cubin, its launcher into an extension.

    The launcher's source includes launcher.h (from backend/csrc/, on the
    include path) and names the header's sha256, so that the build's key,
    which covers each step's source, changes with the header.
    """
    check_launchable(lowered, signature.name)
    abi = describe_abi(lowered, signature)
    description = {
        "outputs": [o.spec.__dict__ for o in abi.outputs], "returns": list(abi.returns),
        "written": [t.name for t in abi.tensor_args if t.written],
    }
    launcher = render(
        "launcher.cpp.j2", name=signature.name, module=MODULE, host_source=lowered.host_source, kernels=lowered.kernels,
        abi=abi, opaque_types=OPAQUE_TYPES, description=json.dumps(description), header_digest=header_digest(),
    )
    return [
        build.Step(CUDA_SOURCE, lowered.cuda_source, build.nvcc_device_command(lowered.target["arch"], lowered.compile_flags), CUBIN),
        build.Step(LAUNCHER_SOURCE, launcher, [*build.nvcc_host_command(), f"-I{_csrc()}"], build.extension_name(MODULE)),
    ]


def compile_kernel(lowered: LoweredKernel, signature: KernelSignature) -> CompiledKernel[..., Any]:
    """Build the device code (cubin) and the host launcher (extension) side by side, or load them."""
    folder, compiled = build.build(signature.name, build_steps(lowered, signature))
    return load(folder, compiled=compiled)
