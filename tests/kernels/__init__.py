"""Kernel definitions used by the tests.

TileLang and tltyped read a kernel's source with `inspect`, so kernels live in
real modules. Each module groups the kernels of one concern; the unit tests
(tests/unit) lower and build them on meta tensors, the GPU tests may run them.
"""
