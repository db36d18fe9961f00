"""A package that imports its kernels from a module of its own, as a library exposes them (`from .kernels import
...`); package_calls.py calls them through the package."""

from .kernels import add_rows, add_scaled, widen

__all__ = ["add_rows", "add_scaled", "widen"]
