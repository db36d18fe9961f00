"""TileLang, for type checkers: `tilelang.language` is typed (language/); everything else is `Any`."""

from typing import Any

from tilelang import language as language

def __getattr__(name: str) -> Any: ...
