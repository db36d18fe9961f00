"""`kernel.get_profiler()`: TileLang's own Profiler, driving a tltyped kernel through its fast path.

Upstream examples check and time kernels with TileLang's Profiler
(`assert_allclose(reference)`, `do_bench()`), which makes inputs from a list
of parameter descriptions and calls whatever it is given. Described here
from the kernel's signature: the inputs its call takes (a const dim at the
size it was compiled for; a dyn dim a TIR variable, as in TileLang, sized
through the Profiler's `dynamic_symbolic_constraints`), and no outputs: the
Profiler compares what the call returns. A kernel found in the disk cache
profiles without its PrimFunc.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tilelang import tvm
from tilelang.engine.param import KernelParam
from tilelang.profiler import Profiler
from tilelang.utils.tensor import TensorSupplyType

from tltyped.frontend.signature import Param, Specialization
from tltyped.types.dtypes import to_tilelang


def profiler(call: Callable[..., Any], inputs: Sequence[Param], spec: Specialization, supply: Any = None) -> Any:
    """TileLang's Profiler for a kernel of specialisation `spec` called as `call(*inputs) -> outputs`."""
    symbols = {s for p in inputs if p.tensor is not None for d in p.tensor.dims for s in d.symbols}
    sizes: dict[str, Any] = {name: tvm.tirx.Var(name, "int32") for name in symbols}
    sizes.update(spec.dims)
    params = [
        KernelParam(tvm.DataType(p.scalar), []) if p.tensor is None
        else KernelParam(tvm.DataType(to_tilelang(spec.dtypes[p.name])), [d.evaluate(sizes) for d in p.tensor.dims])
        for p in inputs
    ]
    return Profiler(params, [], supply if supply is not None else TensorSupplyType.Auto).with_default_adapter(call)
