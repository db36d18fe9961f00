"""mypy plugin for tltyped: kernels and their call sites are checked statically.

Enable it in mypy's configuration (mypy >=2.0,<2.5)::

    [mypy]
    plugins = tltyped.mypy_plugin

    # TileLang beyond `tilelang.language` (typed by stubs/, which scripts/setup.sh puts on the path)
    [mypy-tilelang.*]
    ignore_missing_imports = True
    follow_imports = skip

What it adds to plain mypy:
- the in-body form: `A: T.Tensor[[M, K], T.float16]` in a kernel's body is
  `A`'s type, `T.const` / `T.dynamic` declare the dims annotations use;
- `Tensor` annotations in both orders, with int dims, TileLang dtypes and
  derived dims, checked for unknown dtypes, undeclared dims and bad shapes;
- the seeds' definition rules (T.alloc_* use, returns, parameter kinds, tune
  defaults), reported on the offending line;
- call sites: every argument is checked against its parameter, by name;
  tensors typed `tl.Tensor[...]` against the kernel's signature (dtype, rank,
  dims shared between arguments), const arguments must be hashable, and the
  returned tensor's dims are solved from the arguments.

Errors carry the codes in `tltyped.mypy_plugin.errorcodes` (`tltyped-shape`,
`tltyped-dtype`, `tltyped-dim`, `tltyped-annotation`, `tltyped-kernel`,
`tltyped-const`, `tltyped-tune`), all sub-codes of `tltyped`.

Not supported: `--num-workers` (the plugin stops with a message).
"""

from tltyped.mypy_plugin.plugin import plugin

__all__ = ["plugin"]
