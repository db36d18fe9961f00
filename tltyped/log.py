"""The `tltyped` logger, and tltyped's warnings.

Compiles, disk-cache hits and tuning are logged under the `tltyped` logger.
`TLTYPED_LOG=info` (or `debug`, `warning`) shows them on stderr without any
logging set-up in the program; otherwise they go wherever the program's own
logging configuration sends them.

Warnings (`warn`, `warn_once`) name the program's line that called into
tltyped, as a warning of Python's own does: that is the line a user can act
on, or filter by.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import warnings

from tltyped.errors import ArgumentValueError
from tltyped.templates import GENERATED

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


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str, category: type[Warning]) -> None:
    """Warn, attributed to the first frame outside tltyped and the code it generates: the program's call."""
    level, frame = 2, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith((_PACKAGE, GENERATED)):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)


@functools.cache
def warn_once(message: str, category: type[Warning]) -> None:
    """`warn`, once per process for each message, for what a process reads more than once: a call reads its
    kernel's record twice (before and under the build's lock), `cache info` every record `ls` reads."""
    warn(message, category)
