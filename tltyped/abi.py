"""What the binder, the generated fast path and the compiled launcher agree on.

A compiled kernel's `launch(*args, stream, device)` takes, in order: the
runtime parameters in signature order (data pointers of tensors, dyn scalars,
ptrs), the data pointers of the outputs, the dyn dims in declaration order,
then the raw CUDA stream and the device index.
"""

from __future__ import annotations

ALIGNMENT = 16
"""Bytes every tensor's data pointer is aligned to: vectorised and TMA accesses assume it."""
