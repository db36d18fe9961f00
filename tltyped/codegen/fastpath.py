"""Render and build the generated Python of the call path.

`build_fast_path` makes a jit function's fast path (and its `key` twin) from
the KernelSignature; `build_kernel_call` makes, for a compiled kernel with
outputs, the small function that allocates them around the launch.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from tltyped.backend.facts import tensor_facts
from tltyped.backend.launcher import CompiledKernel
from tltyped.codegen.render import render
from tltyped.frontend import dims as dimlib
from tltyped.frontend.binding import ALIGNMENT
from tltyped.frontend.signature import KernelSignature, Kind


@dataclass
class _TensorView:
    """The fast path's variables for one tensor parameter."""

    name: str
    dims: list[str]

    @property
    def ptr(self) -> str:
        return f"_tl_{self.name}_p"

    @property
    def sig(self) -> str:
        return f"_tl_{self.name}_s"


def fast_path_context(signature: KernelSignature) -> dict[str, Any]:
    tensors: list[_TensorView] = []
    key_items: list[str] = []
    checks: list[str] = []
    source: dict[str, str] = {}  # dim symbol -> the variable holding it
    derived: list[tuple[str, dimlib.Dim]] = []
    for p in signature.tensors:
        assert p.tensor is not None
        view = _TensorView(p.name, [f"_tl_{p.name}_{axis}" for axis in range(len(p.tensor.dims))])
        tensors.append(view)
        key_items.append(view.sig)
        for var, dim in zip(view.dims, p.tensor.dims):
            if dim.is_symbol:
                source.setdefault(dim.text, var)
            if not any(signature.dims[s] for s in dim.symbols):
                key_items.append(var)  # const: a different size is a different kernel (or a slow-path error)
            elif dim.is_symbol and source[dim.text] != var:
                checks.append(f"{var} != {source[dim.text]}")
            elif not dim.is_symbol:
                derived.append((var, dim))
    checks += [f"{var} != {dimlib.render(dim, source)}" for var, dim in derived]
    checks += [
        f"{dimlib.render(c.left, source)} != {dimlib.render(c.right, source)}"
        for c in signature.checks if c.is_dyn(signature.dims)
    ]
    key_items += [p.name for p in signature.params if p.kind is Kind.CONST]
    launch_args = [f"_tl_{p.name}_p" if p.kind is Kind.TENSOR else p.name for p in signature.params if p.is_runtime]
    launch_args += [source[d] for d in signature.dyn_dims]
    defaults = {p.name: f"_tl_default_{i}" for i, p in enumerate(signature.params) if p.has_default}
    parameters = ", ".join(f"{p.name}={defaults[p.name]}" if p.name in defaults else p.name for p in signature.params)
    return dict(
        name=signature.name, tensors=tensors, key_items=key_items, checks=checks, launch_args=launch_args,
        defaults=list(defaults.values()), parameters=parameters, names=", ".join(p.name for p in signature.params),
        alignment=ALIGNMENT,
    )


def _exec(source: str, filename: str, *closure: Any) -> Any:
    """Run generated source; its text stays visible to tracebacks and `inspect`."""
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace["_tl_make"](*closure)


def render_fast_path(signature: KernelSignature) -> str:
    return render("fast_path.py.j2", **fast_path_context(signature))


def build_fast_path(
    signature: KernelSignature,
    source: str,
    cache: dict[Any, Any],
    slow: Callable[..., Any],
    hit: Callable[[], Any],
    facts: Callable[..., tuple[Any, ...]] = tensor_facts,
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Exec the rendered fast path; returns (key, fast path)."""
    defaults = [p.default for p in signature.params if p.has_default]
    ranks = bytes(len(p.tensor.dims) for p in signature.tensors if p.tensor is not None)
    key, call = _exec(source, f"<tltyped fast path of {signature.name}>", cache, slow, facts, ranks, hit, *defaults)
    return key, call


def build_kernel_call(signature: KernelSignature, kernel: CompiledKernel, device: torch.device) -> Callable[..., Any]:
    """The cache entry's launch: the C launch itself, or allocate outputs around it."""
    if not kernel.outputs:
        return kernel.launch
    args = [f"_tl_a{i}" for i, p in enumerate(p for p in signature.params if p.is_runtime)]
    source = render(
        "kernel_call.py.j2", args=args, dims=[f"_tl_d{i}" for i in range(len(signature.dyn_dims))],
        outputs=kernel.outputs, returns=kernel.returns,
    )
    return _exec(  # type: ignore[no-any-return]
        source, f"<tltyped outputs of {signature.name}>", kernel.launch, torch.empty, device,
        *(o.dtype for o in kernel.outputs),
    )
