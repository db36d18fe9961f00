"""Type information for `tltyped.mypy_plugin` as an importable package.

mypy analyses a package whenever one of its modules is imported, and a
kernel module that imports `tilelang.language` is read through
`tltyped.mypy_plugin.tilelang_language` (see rewrite.py). This stub keeps
that from pulling the plugin's implementation, and so all of mypy, into the
user's type check.
"""

def plugin(version: str) -> type: ...
