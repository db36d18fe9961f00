"""What the binder, the generated fast path and the compiled launcher agree on.

A compiled kernel's `launch(*args, stream, device)` takes, in order: the
runtime parameters in signature order (data pointers of tensors, dyn scalars,
ptrs), the dyn dims in declaration order, then the raw CUDA stream and the
device index; it allocates the outputs itself and returns what the kernel
returns.

Its module's `LAUNCH_RAW` capsule ("tltyped.launch_raw") holds the same
launch for C callers (the cached call in backend/csrc/facts.c):

    PyObject* launch_raw(PyObject* const* objects, const uint64_t* words, void* stream, long device)

with one slot per argument of `args`: a data pointer or a dyn dim's value
(as int64) in `words`, a dyn scalar's Python value in `objects`. It converts
and checks them as `launch` does; a refused value raises the same TypeError
or OverflowError.
"""

from __future__ import annotations

ALIGNMENT = 16
"""Bytes every tensor's data pointer is aligned to: vectorised and TMA accesses assume it."""
