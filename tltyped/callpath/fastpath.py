"""Render and build the generated Python of the call path.

`build_fast_path` makes a jit function's fast path (with its `key` twin and
its hit counter) from the KernelSignature.

Generated code names its own variables with a prefix that no parameter name
(and not the kernel's name) starts with, so a user's names can never shadow
them; the kernel's name, whatever its text, appears only as a sanitised
identifier.
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tltyped.abi import ALIGNMENT
from tltyped.backend import records
from tltyped.backend.facts import CachedCall, tensor_facts
from tltyped.frontend import dims as dimlib
from tltyped.frontend.const_types import key_form
from tltyped.frontend.signature import KernelSignature, Kind, Param
from tltyped.templates import render, template_digest
from tltyped.templates.names import identifier
from tltyped.types.values import typed_key


@dataclass
class _TensorView:
    """The fast path's variables for one tensor parameter."""

    name: str
    ptr: str
    sig: str
    dims: list[str]
    strides: list[str]  # a StridedTensor's stride variables (none for a Tensor)
    contiguous: list[str]  # each stride as the sizes give it when the tensor is contiguous


def address(value: Any, device: int) -> int:
    """A ptr argument given as a tensor: its data pointer, if it is a CUDA tensor on the call's device."""
    if value.is_cuda and value.get_device() == device:
        return int(value.data_ptr())
    raise ValueError("not a CUDA tensor on the call's device")  # the slow path says what was wrong


def reserved_prefix(names: list[str]) -> str:
    """A prefix for generated variables that none of `names` starts with."""
    prefix, n = "_tl_", 0
    while any(name.startswith(prefix) for name in names):
        prefix, n = f"_tl{n}_", n + 1
    return prefix


def const_key_items(p: Param, v: str) -> list[str]:
    """A const's part of the key, in the form its annotation needs (see `const_types.key_form`).

    `type(x), x` costs two specialised bytecodes; the deep form a call of
    `typed_key`. The binder admits only values of the annotation, so a
    kernel is only ever stored under such a key.
    """
    form = key_form(p.annotation)
    if form == "deep":
        return [f"{v}typed({p.name})"]
    if form == "typed":
        return [f"{v}type({p.name})", p.name]
    return [p.name]


def fast_path_context(signature: KernelSignature) -> dict[str, Any]:
    function = identifier(signature.name)
    v = reserved_prefix([p.name for p in signature.params] + [function])
    tensors: list[_TensorView] = []
    key_items: list[str] = []
    checks: list[str] = []
    source: dict[str, str] = {}  # dim symbol -> the variable holding it
    derived: list[tuple[str, dimlib.Dim]] = []
    dim_codes: dict[str, list[int]] = {}  # tensor -> per dim: -1 (in the key) or its dyn dim's index
    for i, p in enumerate(signature.tensors):
        assert p.tensor is not None
        rank = len(p.tensor.dims)
        sizes = [f"{v}t{i}_{axis}" for axis in range(rank)]
        strides = [f"{v}st{i}_{axis}" for axis in range(rank)] if p.tensor.strides is not None else []
        contiguous = [" * ".join(sizes[axis + 1 :]) or "1" for axis in range(rank)]
        view = _TensorView(p.name, f"{v}p{i}", f"{v}s{i}", sizes, strides, contiguous)
        tensors.append(view)
        key_items.append(view.sig)
        codes = dim_codes[p.name] = []
        for var, dim in zip(view.dims + view.strides, p.tensor.all_dims):
            if dim.is_symbol:
                source.setdefault(dim.text, var)
            if not any(signature.dims[s] for s in dim.symbols):
                key_items.append(var)  # const: a different size is a different kernel (or a slow-path error)
                codes.append(-1)
            elif dim.is_symbol:
                if source[dim.text] != var:
                    checks.append(f"{var} != {source[dim.text]}")
                codes.append(signature.dyn_dims.index(dim.text))
            else:
                derived.append((var, dim))
    plan_checks = len(checks)  # so far, only dyn dims that must agree: what the C path checks itself
    checks += [f"{var} != {dimlib.render(dim, source)}" for var, dim in derived]
    checks += [
        f"{dimlib.render(c.left, source)} != {dimlib.render(c.right, source)}"
        for c in signature.checks if c.is_dyn(signature.dims)
    ]
    checks += [f"{name} != {source[name]}" for name in signature.scalar_dims]  # a scalar that sizes a tensor
    key_items += [item for p in signature.params if p.kind is Kind.CONST for item in const_key_items(p, v)]
    pointers = [p.name for p in signature.params if p.kind is Kind.PTR]
    ptr_of = {t.name: t.ptr for t in tensors}
    launch_args = [ptr_of.get(p.name, p.name) for p in signature.params if p.is_runtime]
    launch_args += [source[d] for d in signature.dyn_dims]
    defaults = {p.name: f"{v}default{i}" for i, p in enumerate(signature.params) if p.has_default}
    parameters = ", ".join(f"{p.name}={defaults[p.name]}" if p.name in defaults else p.name for p in signature.params)
    # the C path: no checks but agreeing dyn dims, no ptr or strided parameters, and a tensor to take the device from
    c_path = len(checks) == plan_checks and not pointers and bool(tensors) and not any(view.strides for view in tensors)
    return dict(
        v=v, function=function, tensors=tensors, key_items=key_items, checks=checks, launch_args=launch_args,
        defaults=list(defaults.values()), parameters=parameters, names=", ".join(p.name for p in signature.params),
        alignment=ALIGNMENT, pointers=pointers, c_plan=c_plan(signature, dim_codes) if c_path else None,
    )


def c_plan(signature: KernelSignature, dim_codes: dict[str, list[int]]) -> list[Any] | None:
    """The parameters as the C path (csrc/facts.c, `CachedCall`) reads them, or None where it cannot.

    A tensor is its dims' codes, a const its key form (0: the value, 1: its
    type and value, 2: `typed_key`), a dyn scalar None. The C path builds the
    same key as the generated function and passes the same launch arguments;
    it covers signatures whose only checks are dyn dims agreeing between
    tensors (see `fast_path_context`).
    """
    plan: list[Any] = []
    for p in signature.params:
        if p.kind is Kind.TENSOR:
            plan.append(dim_codes[p.name])
        elif p.kind is Kind.CONST:
            plan.append(["value", "typed", "deep"].index(key_form(p.annotation)))
        elif p.kind is Kind.DYN:
            plan.append(None)
        else:
            return None
    return plan


def _exec(source: str, filename: str, *closure: Any) -> Any:
    """Run generated source; its text stays visible to tracebacks and `inspect`."""
    filename = filename.replace("\0", "\\0")  # the kernel's name is any text; compile() refuses NUL
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace["make"](*closure)


def named_plainly(call: Any) -> Any:
    """A generated function named by its own name: Python's errors about its arguments say `f()`, not `make.<locals>.f()`."""
    call.__qualname__ = call.__name__
    if hasattr(call.__code__, "co_qualname"):  # where those errors take the name from, on Python >= 3.11
        call.__code__ = call.__code__.replace(co_qualname=call.__name__)
    return call


def render_fast_path(signature: KernelSignature) -> str:
    """The fast path's source: rendered once, then read from the disk cache by every later process."""
    context = fast_path_context(signature)
    key = records.source_key("fast path", template_digest(_TEMPLATE), context)
    record = records.read(records.SourceRecord, key)
    if record is not None:
        return record.source
    source = render(_TEMPLATE, **context)
    records.write(key, records.SourceRecord(f"fast path of {signature.name}", source, hashlib.sha256(source.encode()).hexdigest()))
    return source


_TEMPLATE = "fast_path.py.j2"


@dataclass(frozen=True)
class FastPath:
    """A jit function's generated call path: the call itself, its key, and its hit count."""

    call: Callable[..., Any]
    key: Callable[..., Any]  # the static key of a call, as `call` computes it
    hits: Callable[[], int]  # calls served from the cache so far


def build_fast_path(
    signature: KernelSignature,
    source: str,
    launches: dict[Any, Any],
    slow: Callable[..., Any],
    facts: Callable[..., tuple[Any, ...]] = tensor_facts,
    in_c: bool = True,
) -> FastPath:
    """Exec the rendered fast path around `launches` (static key -> launch) and the slow path.

    The call is C's `CachedCall` in front of the generated function where
    the signature allows it, `in_c` is set and the C facts are built.
    """
    defaults = [p.default for p in signature.params if p.has_default]
    ranks = bytes(len(p.tensor.dims) for p in signature.tensors if p.tensor is not None)
    call, key, hits = _exec(
        source, f"<tltyped fast path of {signature.name}>", launches, slow, facts, ranks, address, int, tuple, type, typed_key,
        Exception, (TypeError, OverflowError), *defaults,
    )
    named_plainly(call)
    plan = fast_path_context(signature)["c_plan"] if in_c and facts is tensor_facts and CachedCall is not None else None
    if plan is None:
        return FastPath(call, key, hits)
    assert CachedCall is not None
    params = tuple(tuple(p) if isinstance(p, list) else p for p in plan)
    names = tuple(p.name for p in signature.params)
    c_call = CachedCall(launches, call, typed_key, params, names, tuple(defaults), ALIGNMENT)
    return FastPath(c_call, key, lambda: hits() + c_call.hits)
