"""The `tltyped` logger: compiles, disk-cache hits and tuning are logged under it.

`TLTYPED_LOG=info` (or `debug`, `warning`) shows them on stderr without any
logging set-up in the program; otherwise they go wherever the program's own
logging configuration sends them.
"""

from __future__ import annotations

import logging
import os

from tltyped.errors import ArgumentValueError

ENV_VAR = "TLTYPED_LOG"


def configure_from_environment() -> None:
    level = os.environ.get(ENV_VAR, "").strip().upper()
    if not level:
        return
    logger = logging.getLogger("tltyped")
    if not isinstance(logging.getLevelName(level), int):
        raise ArgumentValueError(f"{ENV_VAR}={level.lower()!r}: expected debug, info, warning or error")
    logger.setLevel(level)
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("tltyped %(levelname)s %(message)s"))
        logger.addHandler(handler)
