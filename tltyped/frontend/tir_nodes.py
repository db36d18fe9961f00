"""The nodes of a TIR tree, read in Python rather than inside TVM's visitor.

An exception raised inside the callback of TVM's `post_order_visit` reaches
the caller as TVM's own RuntimeError, not as itself: so the readers of a tree
(extents.py, prim_func.py, backend/launcher.py, backend/lower.py) take its
nodes as a list first, and raise their errors while reading it.
"""

from __future__ import annotations

from typing import Any

from tilelang import tvm


def tir_nodes(tree: Any) -> list[Any]:
    """Every node of `tree` (a statement or an expression), children before their parent."""
    found: list[Any] = []
    tvm.tirx.stmt_functor.post_order_visit(tree, found.append)
    return found
