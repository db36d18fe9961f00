"""What the binder, the generated fast path and the compiled launcher agree on.

A compiled kernel's `launch(*args, stream, device[, *tensors])` takes, in
order: the runtime parameters in signature order (data pointers of tensors,
dyn scalars, ptrs), the dyn dims in declaration order, then the raw CUDA
stream and the device index; it allocates the outputs itself and returns what
the kernel returns. The call path passes the call's tensor arguments last (the
torch.Tensors whose data pointers lead, in order): the launch then bumps the
version of each one its kernel writes, as torch's in-place ops do, so that
autograd refuses a backward that would read a saved tensor the kernel has
since written.

Its module's `LAUNCH_RAW` capsule ("tltyped.launch_raw") holds the same
launch for C callers (the cached call in callpath/csrc/cached_call.c):

    PyObject* launch_raw(PyObject* const* objects, const uint64_t* words, PyObject* const* tensors,
                         void* stream, long device)

with one slot per argument of `args`: a data pointer or a dyn dim's value
(as int64) in `words`, a dyn scalar's Python value in `objects`; and the
call's tensors in `tensors`. It converts and checks them as `launch` does; a
refused value raises the same TypeError or OverflowError.

A dyn scalar is passed by value, so its dtype must be one whose C type the
launcher declares and converts (`HOST_SCALARS`); `check_host_scalar` refuses
any other where the scalar's dtype is first known, before anything is
lowered.
"""

from __future__ import annotations

from collections.abc import Mapping

from tltyped.errors import DefinitionError
from tltyped.types.dtypes import ALL_DTYPES, DL_BOOL, DType

ALIGNMENT = 16
"""Bytes every tensor's data pointer is aligned to: vectorised and TMA accesses assume it."""

HOST_SCALARS: Mapping[str, str] = {
    # TileLang's device code spells a scalar parameter of each dtype thus (the CUDA typedefs `uint`, `uchar`, ...)
    "bool": "bool", "signed char": "int8_t", "uchar": "uint8_t", "short": "int16_t", "ushort": "uint16_t",
    "int": "int", "uint": "unsigned int", "int64_t": "int64_t", "uint64_t": "uint64_t",
    "half_t": "half_t", "float": "float", "double": "double",
    # and the same types under their other C names
    "int8_t": "int8_t", "uint8_t": "uint8_t", "int16_t": "int16_t", "uint16_t": "uint16_t", "int32_t": "int",
    "unsigned int": "unsigned int", "uint32_t": "unsigned int",
    "long long": "int64_t", "unsigned long long": "uint64_t",
}
"""The scalar parameters the host launcher passes a kernel by value: the device code's spelling of the type -> the
host type it declares and passes (the dtype's `c_name`, as TileLang's `call` takes it; launcher.h defines `half_t`).
The one table of them: a dyn scalar of a dtype whose device spelling is missing here has no launcher."""

HOST_SCALAR_DTYPES: tuple[type[DType], ...] = tuple(d for d in ALL_DTYPES if d.c_name in set(HOST_SCALARS.values()))
"""The dtypes a dyn scalar may have: the argument types whose C type the launcher passes by value (`HOST_SCALARS`)."""


def check_host_scalar(param: str, dtype: type[DType]) -> type[DType]:
    """`dtype`, when a dyn scalar `param` of it can be passed by value; a DefinitionError naming the parameter, its
    dtype and the dtypes a dyn scalar may have otherwise (TileLang's lowering would fail on it, far from the cause)."""
    if dtype in HOST_SCALAR_DTYPES:
        return dtype
    raise DefinitionError(
        f"parameter {param!r} is a dyn scalar of dtype {dtype.name}, which the launcher does not pass by value; a dyn "
        f"scalar's dtype is one of {', '.join(d.name for d in HOST_SCALAR_DTYPES)} (take it as float32 and convert it "
        f"in the body with T.Cast, or pass a one-element {dtype.name} tensor)"
    )


def element_type_as_parameter(param: str, dtype: type[DType]) -> str:
    """Why `alpha: tl.float32` is refused (at decoration, and by the mypy plugin): the class is an element type, of
    which no value exists, so the parameter would be a const keyed by whatever value came: one build per value."""
    constant = "bool" if dtype.dlpack_code == DL_BOOL else "int" if dtype.is_integer() else "float"
    at_run_time = (f"`{param}: T.{dtype.name}` for a scalar of dtype {dtype.name} passed at run time" if dtype in
                   HOST_SCALAR_DTYPES else f"`{param}: T.float32` for a scalar passed at run time (converted in the body)")
    return (f"parameter {param!r}: tl.{dtype.name} is an element type (as in tl.Tensor[tl.{dtype.name}, ...]), not a "
            f"parameter type; write {at_run_time}, or `{param}: {constant}` for a compile-time constant")
