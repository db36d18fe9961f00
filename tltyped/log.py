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
from tltyped.provenance import is_library_code, is_tltyped_code

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
    """Warn at the program's line that called into tltyped: the first frame outside the outermost of tltyped's
    that is not a library's (those between, as torch's autograd or Dynamo, are passed over; the program's own may
    be a file, `python -c` or a notebook cell). A thread that runs a build (the tuner's candidates, `par_compile`)
    and `python -m tltyped` have no frame of the program's: there the warning names tltyped's outermost frame.
    Issued at that frame explicitly: `warnings.warn`'s stacklevel counts past import machinery's frames."""
    stack = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    ours = [i for i, f in enumerate(stack) if is_tltyped_code(f.f_code.co_filename)]
    outermost = ours[-1] if ours else 0
    programs = (f for f in stack[outermost + 1 :]
                if not is_library_code(f.f_code.co_filename, str(f.f_globals.get("__name__", ""))))
    at = next(programs, stack[outermost])
    warnings.warn_explicit(message, category, at.f_code.co_filename, at.f_lineno, module=at.f_globals.get("__name__"),
                           registry=at.f_globals.setdefault("__warningregistry__", {}))


@functools.cache
def warn_once(message: str, category: type[Warning]) -> None:
    """`warn`, once per process for each message, for what a process reads more than once: a call reads its
    kernel's record twice (before and under the build's lock), `cache info` every record `ls` reads."""
    warn(message, category)
