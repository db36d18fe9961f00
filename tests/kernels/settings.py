"""Settings a kernel reads as attributes of this module (`settings.SCALE`), and a helper reading them in turn."""

import enum
import os
import time  # imported, unused by any kernel: reading this module whole reads no clock
from typing import NamedTuple

SCALE = float(os.environ.get("TLTYPED_TEST_SCALE", "2.0"))  # read from the environment, as a module constant
OFFSET = 1.0  # a global the tests rebind


def shifted(x):
    return x + OFFSET


class Tile(NamedTuple):
    """A configuration a kernel reads through a property, which reads OFFSET: the tuple's items do not fix it."""

    block: int = 64

    @property
    def shift(self):
        return OFFSET


class Shift(enum.Enum):
    """An enum whose members a kernel reads through a property, which reads OFFSET: their values do not fix it."""

    ONE = 1

    @property
    def shift(self):
        return self.value * OFFSET
