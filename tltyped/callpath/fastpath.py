"""Render and build the generated Python of the call path, and put the C cached call in front of it.

`render_fast_path` spells a CallPlan (plan.py) as Python; `build_fast_path`
makes a jit function's fast path from it (with its `key` twin and its hit
counter), and where the plan allows, the C cached call (csrc/cached_call.c)
configured by the same plan.

Generated code names its own variables with a prefix that no parameter name
(and not the kernel's name) starts with, so a user's names can never shadow
them; the kernel's name, whatever its text, appears only as a sanitised
identifier.
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import CellType, FunctionType, ModuleType
from typing import Any

from tltyped.abi import ALIGNMENT
from tltyped.backend import records
from tltyped.callpath import tensors
from tltyped.callpath.plan import DERIVED, STATIC, Axis, CallPlan
from tltyped.errors import ArgumentValueError
from tltyped.frontend import dims as dimlib
from tltyped.frontend.fingerprint import Watch, unchanged
from tltyped.frontend.signature import Param
from tltyped.templates import GENERATED, render, template_digest
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
    raise ArgumentValueError("not a CUDA tensor on the call's device")  # the slow path says what was wrong


def reserved_prefix(names: list[str]) -> str:
    """A prefix for generated variables that none of `names` starts with."""
    prefix, n = "_tl_", 0
    while any(name.startswith(prefix) for name in names):
        prefix, n = f"_tl{n}_", n + 1
    return prefix


def python_parameters(params: Sequence[Param], defaults: Mapping[str, str], *, as_declared: bool = True) -> str:
    """A generated function's parameter list: `A, B, *, block=_tl_default0` (each default by the closure variable
    holding it), with the kernel's keyword-only parameters after the `*`, so that Python refuses them by
    position; or, not `as_declared`, every parameter taken by position too (for tltyped's own calls)."""
    texts = [f"{p.name}={defaults[p.name]}" if p.name in defaults else p.name for p in params]
    first = next((i for i, p in enumerate(params) if p.keyword_only and as_declared), len(params))
    return ", ".join([*texts[:first], *(["*"] if first < len(params) else []), *texts[first:]])


def python_arguments(params: Sequence[Param]) -> str:
    """The arguments that pass each parameter on to a function with the same parameters: `A, B, block=block`."""
    return ", ".join(f"{p.name}={p.name}" if p.keyword_only else p.name for p in params)


def call_in_order(call: Callable[..., Any], params: Sequence[Param], values: Sequence[Any]) -> Any:
    """`call` (a jit function's fast path) with the parameters' values in order, each keyword-only one by name."""
    if not any(p.keyword_only for p in params):
        return call(*values)
    given = list(zip(params, values))
    return call(*(v for p, v in given if not p.keyword_only), **{p.name: v for p, v in given if p.keyword_only})


def unpack(outputs: Sequence[Any]) -> Any:
    """A call's outputs (the slow path's, the torch op's) as the kernel returns them: None, one tensor, or a tuple,
    as the launcher returns them on the fast path."""
    return None if not outputs else outputs[0] if len(outputs) == 1 else tuple(outputs)


def const_key_items(name: str, form: str, v: str) -> list[str]:
    """A const's part of the key, in its key form (see plan.py).

    `type(x), x` costs two specialised bytecodes; the deep form a call of
    `typed_key`. The binder admits only values of the annotation, so a
    kernel is only ever stored under such a key.
    """
    if form == "deep":
        return [f"{v}typed({name})"]
    if form == "typed":
        return [f"{v}type({name})", name]
    return [name]


def const_key(form: str, value: Any) -> tuple[Any, ...]:
    """A const's part of the key, computed here as `const_key_items` spells it in generated code."""
    return (typed_key(value),) if form == "deep" else (type(value), value) if form == "typed" else (value,)


def variable_prefix(plan: CallPlan) -> str:
    """What every name the generated fast path makes starts with: no parameter's name, nor the kernel's, does."""
    return reserved_prefix([p.name for p in plan.params] + [identifier(plan.name)])


def fast_path_context(plan: CallPlan) -> dict[str, Any]:
    """The fast path template's variables: the plan, spelled as Python over generated variable names."""
    function = identifier(plan.name)
    v = variable_prefix(plan)
    tensors: list[_TensorView] = []
    key_items: list[str] = []
    agree: list[str] = []  # dyn dims read again on later axes, which must agree
    below: list[str] = []  # sizes a dyn dim is solved from, too small to give one >= 0
    source: dict[str, str] = {}  # dim symbol -> the variable holding it
    derived: list[tuple[str, Axis]] = []
    for i, t in enumerate(plan.tensors):
        sizes = [f"{v}t{i}_{axis}" for axis in range(t.rank)]
        strides = [f"{v}st{i}_{axis}" for axis in range(t.rank)] if t.strided else []
        contiguous = [" * ".join(sizes[axis + 1 :]) or "1" for axis in range(t.rank)]
        view = _TensorView(t.name, f"{v}p{i}", f"{v}s{i}", sizes, strides, contiguous)
        tensors.append(view)
        key_items.append(view.sig)
        for stored, axis in zip(view.dims + view.strides, t.axes):
            var = stored if axis.scale == 1 else f"({stored} * {axis.scale})" if axis.scale else "1"  # its logical value
            if axis.scale == 0 and axis.code != STATIC:
                agree.append(f"{stored} != 1")  # a packed tensor's innermost stride (a static one is in the key)
            if axis.dim.is_symbol:
                source.setdefault(axis.dim.text, var)
            if axis.code == STATIC:
                key_items.append(stored)  # the storage's value (a packed tensor's too: plan.py)
            elif axis.code == DERIVED:
                derived.append((var, axis))
            elif axis.solved:  # `n * 4`: dim_grammar.solve spelled inline (size >= b; the size checked as derived)
                assert axis.dim.affine is not None
                name, a, b = axis.dim.affine
                source[name] = f"(({var} - {b}) // {a})"
                if b > 0:
                    below.append(f"{var} < {b}")
                derived.append((var, axis))
            elif not axis.first:
                agree.append(f"{var} != {source[axis.dim.text]}")
    source.update({name: name for name in plan.scalar_sized})  # no input's axis gives it: the scalar argument does
    checks = agree + below + [f"{var} != {dimlib.render(axis.dim, source)}" for var, axis in derived]
    checks += [f"{dimlib.render(c.left, source)} != {dimlib.render(c.right, source)}" for c in plan.shape_checks]
    checks += [f"{name} != {source[name]}" for name in plan.scalar_dims]  # a scalar that sizes a tensor
    key_items += [item for name, form in plan.key_forms for item in const_key_items(name, form, v)]
    ptr_of = {t.name: t.ptr for t in tensors}
    launch_args = [ptr_of.get(p.name, p.name) for p in plan.params if p.is_runtime]
    launch_args += [source[d] for d in plan.dyn_dims]
    defaults = {p.name: f"{v}default{i}" for i, p in enumerate(plan.params) if p.has_default}
    return dict(
        v=v, function=function, tensors=tensors, key_items=key_items, checks=checks, launch_args=launch_args,
        defaults=list(defaults.values()), parameters=python_parameters(plan.params, defaults),
        key_parameters=python_parameters(plan.params, defaults, as_declared=False),
        names=", ".join(p.name for p in plan.params), arguments=python_arguments(plan.params),
        alignment=ALIGNMENT, pointers=list(plan.pointers),
    )


def _exec(source: str, filename: str, *closure: Any) -> Any:
    """Run generated source; its text stays visible to tracebacks and `inspect`."""
    filename = filename.replace("\0", "\\0")  # the kernel's name is any text; compile() refuses NUL
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace["make"](*closure)


def named_plainly(call: Any, name: str) -> Any:
    """A generated function named by its kernel's name: Python's errors about its arguments say `double()`, not
    `make.<locals>._double()` (the `def` has the name made safe for C++ as well, where `double` is a keyword)."""
    call.__name__ = call.__qualname__ = name
    if hasattr(call.__code__, "co_qualname"):  # where those errors take the name from, on Python >= 3.11
        call.__code__ = call.__code__.replace(co_name=name, co_qualname=name)
    else:
        call.__code__ = call.__code__.replace(co_name=name)
    return call


def render_fast_path(plan: CallPlan) -> str:
    """The fast path's source: rendered once, then read from the disk cache by every later process."""
    context = fast_path_context(plan)
    key = records.source_key("fast path", template_digest(_TEMPLATE), context)
    record = records.read(records.SourceRecord, key)
    if record is not None:
        return record.source
    source = render(_TEMPLATE, **context)
    records.write(key, records.SourceRecord(f"fast path of {plan.name}", source, hashlib.sha256(source.encode()).hexdigest()))
    return source


_TEMPLATE = "fast_path.py.j2"


@dataclass(frozen=True)
class FastPath:
    """A jit function's generated call path: the call itself, its key, its hit count, the facts it reads with."""

    call: Callable[..., Any]
    key: Callable[..., Any]  # the static key of a call, as `call` computes it
    python_hits: Callable[[], int]  # calls the generated function served
    generated: Callable[..., Any]  # the generated Python function (`call` itself, or what the C cached call falls back to)
    variables: str  # what the generated function's variables start with
    make_c_call: Callable[[ModuleType, Callable[..., Any]], Any] | None  # the C cached call in front of a function

    def hits(self) -> int:
        """Calls served from the cache so far, by the generated function and the C cached call."""
        c_call = self.c_call()
        return self.python_hits() + (c_call.hits if c_call is not None else 0)

    def c_call(self) -> Any:
        """The C cached call serving calls: `call` itself, or the one `call` forwards to; None while there is none."""
        return self.call if self.call is not self.generated else self._cell("forward").cell_contents

    def read_with(self, facts: Callable[..., tuple[Any, ...]]) -> None:
        """Read tensors with `facts` from now on (the C helper's, once it is built), and check the guard in C where
        the helper is; the call stays the same object. Where the helper was built only after `call` was handed out
        (the generated function), `call` forwards each call to a C cached call from now on, whose own fallback is
        a copy of the generated function that does not forward."""
        self._cell("facts").cell_contents = facts
        native = tensors.native()
        if native is None:
            return
        self._cell("unchanged").cell_contents = native.unchanged
        if self.make_c_call is not None and self.c_call() is None:
            c_call = self.make_c_call(native, _without_forward(self.generated, self.variables + "forward"))
            c_call.guard_with(self._cell("guard").cell_contents)
            self._cell("forward").cell_contents = c_call

    def guard_with(self, watched: tuple[Watch, ...]) -> None:
        """Serve a call from `launches` only while each place in `watched` holds its object (what the kernels in it
        were built from); remembered hits are forgotten."""
        self._cell("guard").cell_contents = watched
        c_call = self.c_call()
        if c_call is not None:
            c_call.guard_with(watched)

    def _cell(self, variable: str) -> Any:
        cells = dict(zip(self.generated.__code__.co_freevars, self.generated.__closure__ or ()))
        return cells[self.variables + variable]


def _without_forward(function: Any, forward: str) -> Any:
    """`function` again, sharing every closure cell but `forward`, which holds None: the C cached call's fallback."""
    cells = tuple(CellType(None) if name == forward else cell
                  for name, cell in zip(function.__code__.co_freevars, function.__closure__))
    copy = FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__, cells)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    return copy


def build_fast_path(
    plan: CallPlan,
    source: str,
    launches: dict[Any, Any],
    slow: Callable[..., Any],
    facts: Callable[..., tuple[Any, ...]] | None = None,
    in_c: bool = True,
) -> FastPath:
    """Exec the rendered fast path around `launches` (static key -> launch) and the slow path.

    The call is C's `CachedCall` in front of the generated function where
    the plan allows it, `in_c` is set, no other `facts` are given and the C
    helper is built; otherwise the generated function itself, which forwards
    to a `CachedCall` once the helper is built (`FastPath.read_with`).
    """
    native = tensors.native()
    defaults = [p.default for p in plan.params if p.has_default]
    ranks = bytes(t.rank for t in plan.tensors)
    call, key, hits = _exec(
        source, f"{GENERATED}fast path of {plan.name}>", launches, slow, facts or tensors.tensor_facts(), ranks, address,
        int, tuple, type, typed_key, Exception, (TypeError, OverflowError), (),
        native.unchanged if native is not None else unchanged, *defaults,
    )
    named_plainly(call, plan.name)
    names = tuple(p.name for p in plan.params)
    positional = sum(not p.keyword_only for p in plan.params)

    def make_c_call(helper: ModuleType, fallback: Callable[..., Any]) -> Any:
        return helper.CachedCall(launches, fallback, typed_key, plan.c_table(), names, tuple(defaults), ALIGNMENT, positional)

    if facts is not None or not in_c or not plan.in_c:
        return FastPath(call, key, hits, call, variable_prefix(plan), None)
    return FastPath(make_c_call(native, call) if native is not None else call, key, hits, call, variable_prefix(plan), make_c_call)
