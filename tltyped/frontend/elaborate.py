"""Elaboration: run the kernel's Python body once per static signature to build TIR.

TileLang's eager-mode internals (`mutate`, `Builder`, `_patch_prim_func_attrs`
from `tilelang.language.eager`) are used here, and its `OutTensor` in language.py; the backend
uses TileLang's host wrapper (backend/lower.py, backend/launcher.py). Tests in
`tests/unit/test_tilelang_contract.py` fail loudly if an upgrade changes any of them.

TileLang's `mutate` rewrites the body once per jit function (keeping the
user's file and line numbers); each specialisation then runs it through a
Builder with every tensor parameter passed as a TIR buffer (const dims as
ints, each dyn dim as one shared TIR variable) and every const as its Python
value, so Python control flow on consts and on `A.shape` runs as Python.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

import tilelang.language as tl_language
from tilelang import tvm
from tilelang.language.eager import ast as tl_ast
from tilelang.language.eager import builder as tl_builder

from tltyped.frontend.signature import KernelSignature, Kind
from tltyped.templates.names import c_names, identifier
from tltyped.types.dtypes import DType, to_tilelang

tirx = tvm.tirx
_INTERNAL_FILES = frozenset({tl_builder.__file__, tl_ast.__file__, __file__})


class KernelBuildError(RuntimeError):
    """The kernel body failed to elaborate; the message names the user's source line."""


@dataclass(frozen=True)
class Specialization:
    """Everything one compiled kernel is specialised on (the meaning of a cache key)."""

    consts: Mapping[str, Any]  # const parameter -> value (tuning already resolved)
    dims: Mapping[str, int]  # const dim -> size
    dtypes: Mapping[str, type[DType]]  # tensor parameter -> element type
    strides: Mapping[str, tuple[int, ...] | None]  # tensor parameter -> strides, None if contiguous


@dataclass(frozen=True)
class Elaborated:
    """A specialisation's PrimFunc, and the TIR variable standing for each dyn dim in it.

    The body may rename a dyn dim's variable (`(n,) = A.shape` names it `n`),
    so the launcher maps dims to kernel parameters through these objects.
    """

    prim_func: Any
    dyn_vars: Mapping[str, Any]


class _DimValues(dict[str, Any]):
    """The dims' values as `T.const`/`T.dynamic` look them up: "N " (TileLang keeps spaces) finds "N"."""

    def __missing__(self, name: str) -> Any:
        if name.strip() == name:
            raise KeyError(name)
        return self[name.strip()]


class _Builder(tl_builder.Builder):  # type: ignore[misc]
    """TileLang's Builder, told which names are the signature's dims and tensors.

    In the body, an annotation of a tensor parameter keeps the buffer already
    built from the signature, a dim declared with `T.const`/`T.dynamic` takes
    this specialisation's value (an int, or the dim's one TIR variable), and a
    constant bound outside the kernel (such as a const dim read off `A.shape`)
    is a Python int, so plain Python can compute with it.
    """

    def __init__(self, tensors: frozenset[str], dims: dict[str, Any], c_names: Mapping[str, str]) -> None:
        super().__init__()
        self.eager_jit = "phase2"
        self.eager_jit_subs = _DimValues(dims)
        self._tensors = tensors
        self._dims = dims
        self._c_names = c_names

    def prim_func_arg(self, name: str, value: Any) -> Any:
        """A kernel parameter, named in TIR (and so in the CUDA and host code) by its safe C name."""
        return super().prim_func_arg(self._c_names.get(name, name), value)

    def get_parent_locals(self) -> dict[str, Any]:
        """The locals of the kernel body being run (the first frame outside the builder)."""
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename in _INTERNAL_FILES:
            frame = frame.f_back
        assert frame is not None
        return frame.f_locals

    def bind(self, name: str, value: Any, annot: Any = tl_ast.BaseBuilder.empty, *, loop_target: bool = False) -> Any:
        if isinstance(self.frames[-1], tl_builder.tirx.frame.PrimFuncFrame):
            if value is self.empty and name in self._tensors:
                return self.get_parent_locals()[name]
            if name in self._dims and isinstance(value, tirx.Var) and value.name == name:
                return self._dims[name]
            if isinstance(value, tirx.IntImm) and value.dtype == "int32":
                return int(value)  # `(m, k) = A.shape` gives Python ints for const dims
        return super().bind(name, value, annot, loop_target=loop_target)


class Elaborator:
    """Builds the PrimFunc of one specialisation of a jit function."""

    def __init__(self, fn: Callable[..., Any], signature: KernelSignature) -> None:
        self._fn = fn
        self._signature = signature
        self._symbol = identifier(signature.name)  # the kernel's name in TIR, CUDA and the host code
        runtime = [p.name for p in signature.params if p.is_runtime]
        safe = c_names(  # the names of kernel parameters and dyn dims in TIR, CUDA and the host code
            runtime + list(signature.dyn_dims),
            reserved=[f"{self._symbol}_kernel", *(f"{p.name}_desc" for p in signature.tensors)],  # TileLang's own
        )
        self._c_names = dict(zip(runtime, safe))
        self._dim_c_names = dict(zip(signature.dyn_dims, safe[len(runtime) :]))
        self._generator: Any = None
        self._lock = threading.Lock()

    def _ir_generator(self) -> Any:
        with self._lock:
            if self._generator is None:
                self._generator = tl_ast.mutate(self._fn)
            return self._generator

    def arguments(self, spec: Specialization) -> tuple[dict[str, Any], dict[str, Any]]:
        """The body's keyword arguments and the dims' values (a fresh TIR variable per dyn dim)."""
        dyn = {name: tirx.Var(self._dim_c_names[name], "int32") for name in self._signature.dyn_dims}
        dims: dict[str, Any] = {**spec.dims, **dyn}
        kwargs: dict[str, Any] = {}
        for p in self._signature.params:
            if p.kind is Kind.TENSOR:
                assert p.tensor is not None
                shape = [d.evaluate(dims) for d in p.tensor.dims]
                dtype = to_tilelang(spec.dtypes[p.name])
                strides = spec.strides[p.name]
                kwargs[p.name] = (
                    tl_language.Tensor(shape, dtype) if strides is None
                    else tl_language.StridedTensor(shape, strides, dtype)
                )
            elif p.kind in (Kind.DYN, Kind.PTR):
                assert p.scalar is not None
                kwargs[p.name] = tirx.Var(self._c_names[p.name], p.scalar)
            else:
                kwargs[p.name] = spec.consts[p.name]
        return kwargs, dims

    def elaborate(self, spec: Specialization) -> Elaborated:
        generator = self._ir_generator()
        kwargs, dims = self.arguments(spec)
        builder = _Builder(frozenset(p.name for p in self._signature.tensors), dims, self._c_names)
        try:
            with builder.prim_func(self._symbol):
                generator.gen(builder)(**kwargs)
            prim_func = tl_builder._patch_prim_func_attrs(builder.get(), builder)
        except Exception as exc:
            where = f"{builder.current_file}:{builder.current_line}" if builder.current_line else self._signature.name
            raise KernelBuildError(f"{self._signature.name}: building the kernel failed at {where}: {_describe(exc)}") from exc
        dyn_vars = {name: dims[name] for name in self._signature.dyn_dims}
        return Elaborated(prim_func, dyn_vars)


def _describe(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    if "Only tensor allocated from `T.empty` can be returned" in text:
        return "a kernel returns global buffers (T.empty / T.alloc_global) only; " + text
    return f"{type(exc).__name__}: {text}"
