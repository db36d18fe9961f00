"""The Router: a jit function whose tensor annotations are computed from const values.

    A_shape = (K, M) if trans_A else (M, K)
    A: T.Tensor(A_shape, in_dtype)

Such a kernel's signature (which axis binds which dim, the ranks) is known
only once the consts it depends on are: the Router resolves it for each
combination of their values (frontend/analyze.py), keeps one Dispatcher per
resolved signature, and its generated entry picks that Dispatcher's fast path
with one tuple and one dict lookup.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from tltyped import locks
from tltyped.backend import target as targets
from tltyped.backend.kernel import CompiledKernel
from tltyped.backend.options import BuildOptions
from tltyped.callpath.dispatcher import CacheInfo, Dispatcher
from tltyped.callpath.fastpath import (
    _exec, call_in_order, const_key, const_key_items, named_plainly, python_arguments, python_parameters, reserved_prefix,
)
from tltyped.errors import ArgumentTypeError, DefinitionError
from tltyped.frontend.analyze import Analysis
from tltyped.frontend.const_types import key_form
from tltyped.frontend.signature import KernelSignature
from tltyped.templates import GENERATED, render
from tltyped.templates.names import identifier
from tltyped.types.values import describe, typed_key

if TYPE_CHECKING:
    from tltyped.backend.lower import LoweredKernel


class Router:
    """One jit function with deferred annotations: a Dispatcher per value of the consts they depend on."""

    def __init__(self, analysis: Analysis, target: targets.TargetLike, options: BuildOptions, op: str | None = None) -> None:
        if target is not None:
            targets.normalize(target)
        self.analysis = analysis
        self.target = target
        self.options = options
        self.op = op
        self.backward: tuple[Callable[..., Any], Callable[..., Any] | None] | None = None  # given to every Dispatcher
        self.signature: KernelSignature = analysis.signature
        self.children: dict[Hashable, Dispatcher] = {}
        self.calls: dict[Hashable, Callable[..., Any]] = {}
        self._lock = locks.Lock()
        params = self.signature.params
        annotations = {p.name: p.annotation for p in params}
        # each const keyed in its key form, as the fast path keys it: `2.0` routes apart from `2`, `-0.0` from `0.0`
        self.key_forms = tuple((name, key_form(annotations[name])) for name in self.signature.depends_on)
        function = identifier(self.signature.name)
        v = reserved_prefix([p.name for p in params] + [function])
        defaults = {p.name: f"{v}default{i}" for i, p in enumerate(params) if p.has_default}
        self.fast_path_source = render(
            "route.py.j2", v=v, function=function,
            key_items=[item for name, form in self.key_forms for item in const_key_items(name, form, v)],
            defaults=list(defaults.values()), names=", ".join(p.name for p in params),
            parameters=python_parameters(params, defaults), arguments=python_arguments(params),
        )
        self.call: Callable[..., Any] = named_plainly(_exec(
            self.fast_path_source, f"{GENERATED}router of {self.signature.name}>", self.calls, self.route, Exception,
            type, typed_key, *(p.default for p in params if p.has_default),
        ), self.signature.name)

    def child(self, consts: dict[str, Any]) -> Dispatcher:
        """The Dispatcher of the signature resolved for these const values (built on first use)."""
        key = tuple(item for name, form in self.key_forms for item in const_key(form, consts[name]))
        try:
            hash(key)
        except TypeError:
            raise ArgumentTypeError(
                f"{self.signature.name}: {', '.join(self.signature.depends_on)} must be hashable "
                f"(a tensor annotation is computed from them); got {key!r}"
            ) from None
        with self._lock:
            dispatcher = self.children.get(key)
            if dispatcher is None:
                signature = self._resolved(consts)
                # its ops named from the jit function's name (torch_op.py), as its siblings' are
                dispatcher = self.children[key] = Dispatcher(
                    self.analysis.fn, signature, self.target, self.options, self.op, op_owner=self,
                    reread=functools.partial(self.analysis.reread, consts))
                if self.backward is not None:
                    dispatcher.register_autograd(*self.backward)
                self.calls[key] = dispatcher.fast_path.call
        return dispatcher

    def _resolved(self, consts: dict[str, Any]) -> KernelSignature:
        """The signature read for these const values; an annotation they make unreadable (`M // block` for
        `block=0`, a dtype table without the key given) notes the values, which its message, naming the annotation's
        line, does not (a const of the wrong type is named by its own error)."""
        try:
            return self.analysis.resolve(consts)
        except DefinitionError as exc:
            exc.add_note(f"{self.signature.name}'s annotations were read for "
                         + ", ".join(f"{name}={describe(value)}" for name, value in consts.items()))
            raise

    def _consts(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        params = self.signature.params
        values = {**{p.name: p.default for p in params if p.has_default}, **dict(zip((p.name for p in params), args)), **kwargs}
        missing = [name for name in self.signature.depends_on if name not in values]
        if missing:
            raise ArgumentTypeError(f"{self.signature.name}: missing argument {missing[0]!r}")
        return {name: values[name] for name in self.signature.depends_on}

    def route(self, *args: Any) -> Any:
        """A call with every argument in parameter order, from the generated call of a new combination."""
        return call_in_order(self.child(self._consts(args, {})).fast_path.call, self.signature.params, args)

    def lower(self, *args: Any, **kwargs: Any) -> LoweredKernel:
        return self.child(self._consts(args, kwargs)).lower(*args, **kwargs)

    def get_tir(self, *args: Any, **kwargs: Any) -> Any:
        return self.child(self._consts(args, kwargs)).get_tir(*args, **kwargs)

    def compile(self, *args: Any, **kwargs: Any) -> CompiledKernel[..., Any]:
        return self.child(self._consts(args, kwargs)).compile(*args, **kwargs)

    def register_autograd(self, backward: Callable[..., Any], setup_context: Callable[..., Any] | None = None) -> None:
        """Dispatcher.register_autograd, for every resolved signature's Dispatcher, now and later."""
        from tltyped.callpath.torch_op import Autograd  # imported by what records or traces a call, not by defining one

        Autograd.of(self.signature.name, backward, setup_context)  # refused now, not at a kernel's first call
        with self._lock:
            self.backward = (backward, setup_context)
            for dispatcher in self.children.values():
                dispatcher.register_autograd(backward, setup_context)

    def cache_info(self) -> CacheInfo:
        infos = [d.cache_info() for d in self.children.values()]
        return CacheInfo(*(sum(column) for column in zip(*infos))) if infos else CacheInfo(0, 0, 0, 0, 0)
