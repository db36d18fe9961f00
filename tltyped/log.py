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
from types import FrameType

from tltyped.errors import ArgumentValueError
from tltyped.provenance import is_tltyped_code, is_users_code

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


def warn(message: str, category: type[Warning]) -> None:
    """Warn at the program's line that called into tltyped: the first frame of the user's own code outside the
    outermost of tltyped's (a library's between, as torch's autograd or Dynamo, are passed over). A thread that
    runs a build (the tuner's candidates, `par_compile`) and `python -m tltyped` have no frame of the user's: there
    the warning names tltyped's outermost frame."""
    stack = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    ours = [i for i, f in enumerate(stack) if is_tltyped_code(f.f_code.co_filename)]
    outermost = ours[-1] if ours else 0
    users = (i for i in range(outermost + 1, len(stack))
             if is_users_code(stack[i].f_code.co_filename, str(stack[i].f_globals.get("__name__", ""))))
    warnings.warn(message, category, stacklevel=next(users, outermost) + 2)  # 1 is this line, 2 stack[0]


@functools.cache
def warn_once(message: str, category: type[Warning]) -> None:
    """`warn`, once per process for each message, for what a process reads more than once: a call reads its
    kernel's record twice (before and under the build's lock), `cache info` every record `ls` reads."""
    warn(message, category)
