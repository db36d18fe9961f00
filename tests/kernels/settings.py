"""Settings a kernel reads as attributes of this module (`settings.SCALE`), and a helper reading them in turn."""

import os
import time  # imported, unused by any kernel: reading this module whole reads no clock

SCALE = float(os.environ.get("TLTYPED_TEST_SCALE", "2.0"))  # read from the environment, as a module constant
OFFSET = 1.0  # a global the tests rebind


def shifted(x):
    return x + OFFSET
