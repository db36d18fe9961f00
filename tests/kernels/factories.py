"""Kernels made by factories and kernels reading module globals: each differs from its siblings only in
the values its body reads (closure cells, globals, helpers), as TileLang's own tests build them.

No `from __future__ import annotations`: most users' modules have none.
"""

import codecs
import datetime
import getpass
import importlib
import io
import os
import pathlib
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from glob import glob as listing
from subprocess import check_output

import torch
from torch.cuda import get_device_properties

import tltyped as tl
import tltyped.language as T
from tests.kernels import settings

BLOCK = int(os.environ.get("TLTYPED_TEST_BLOCK", "128"))  # a module constant read from the environment
OFFSET = 1.0  # a global the tests rebind
OFFSET_FILE = os.devnull  # a file a helper reads OFFSET from


def make_map(op, scale, threads=128, dtype=T.float32):
    """B = op(A, scale), elementwise: the op, the scale, the thread count and the dtype come from the factory."""

    @tl.jit
    def apply(A, B):
        N = T.const("N")
        A: T.Tensor[[N], dtype]
        B: T.Tensor[[N], dtype]
        with T.Kernel(1, threads=threads) as bx:
            for i in T.Parallel(N):
                B[i] = op(A[i], scale)

    return apply


def make_by_spelling(dtype):
    """A kernel branching on how its dtype is spelled, as TileLang's examples do (`accum_dtype == "float"`):
    `"float16"` doubles, `torch.float16` triples."""

    @tl.jit
    def by_spelling(A, B, acc="float"):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        B: T.Tensor[[N], T.float32]
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(N):
                B[i] = A[i] * (2.0 if dtype == "float16" else 3.0) * (5.0 if acc == "float" else 7.0)

    return by_spelling


def make_shifted(offset):
    """B = A + offset through a nested helper that closes over the factory's value."""

    def shift(x):
        return x + offset

    @tl.jit
    def shifted(A, B):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        B: T.Tensor[[N], T.float32]
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(N):
                B[i] = shift(A[i])

    return shifted


def make_reduce(reducer, init):
    """A whole-tensor reduction over a closure's reducer (TileLang's tests close over the reducer alike)."""

    @tl.jit
    def reduce(A):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        out = T.empty((1,), T.float32)
        with T.Kernel(1, threads=32) as bx:
            acc = T.alloc_local((1,), T.float32)
            acc[0] = init
            for i in T.serial(N):
                acc[0] = reducer(acc[0], A[i])
            out[0] = acc[0]
        return out

    return reduce


SUM = make_reduce(lambda a, b: a + b, 0.0)
PRODUCT = make_reduce(lambda a, b: a * b, 1.0)


@tl.jit
def add_block(A, B):
    """B = A + BLOCK: the module constant, as this process read it from the environment."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] + BLOCK


@tl.jit
def add_offset(A, B):
    """B = A + OFFSET: the global as it is when the kernel is built."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] + OFFSET


class Knobs:
    """A setting read as a class attribute: the class's source does not fix its value (the tests rebind it)."""

    shift = 0.5

    @classmethod
    def current(cls):
        return cls.shift


@tl.jit
def scaled_by_settings(A, B):
    """B = (A + settings.OFFSET) * settings.SCALE + Knobs.shift: values read off a user's module and class."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = settings.shifted(A[i]) * settings.SCALE + Knobs.shift


@tl.jit
def shifted_through_a_classmethod(A, B):
    """B = A + Knobs.shift, read as `cls.shift` in a classmethod: no global's attribute path names it."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] + Knobs.current()


@tl.jit
def shifted_through_getattr(A, B):
    """B = A + Knobs.shift, read with `getattr` and a name the code does not spell as an attribute."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] + getattr(Knobs, "shift")


def _scale_of(module=settings):
    return module.SCALE


@tl.jit
def scaled_through_a_module_default(A, B):
    """B = A * settings.SCALE, read off a module that reaches the helper as a default argument."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * _scale_of()


@tl.jit
def scaled_through_vars_of_a_module(A, B):
    """B = A * settings.SCALE, read with `vars(settings)[...]`."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * vars(settings)["SCALE"]


@tl.jit
def one_block_per_sm(A, B):
    """B = 2 A over a persistent grid of one block per SM: read from the GPU the body runs on."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    with T.Kernel(sms, threads=128) as bx:
        for step in T.serial(T.ceildiv(N, sms * 128)):
            for i in T.Parallel(128):
                if (step * sms + bx) * 128 + i < N:
                    B[(step * sms + bx) * 128 + i] = A[(step * sms + bx) * 128 + i] * 2.0


@tl.jit
def one_block_per_sm_imported(A, B):
    """The same, with the query imported by name."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    sms = get_device_properties(0).multi_processor_count
    with T.Kernel(sms, threads=128) as bx:
        for step in T.serial(T.ceildiv(N, sms * 128)):
            for i in T.Parallel(128):
                if (step * sms + bx) * 128 + i < N:
                    B[(step * sms + bx) * 128 + i] = A[(step * sms + bx) * 128 + i] * 2.0


@tl.jit
def scheduled_per_sm(A, B):
    """B = 2 A, its tiles handed out by TileLang's persistent scheduler (one worker per SM unless told)."""
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    scheduler = T.PersistentTileScheduler(T.ceildiv(N, 128), 1)
    with T.Kernel(scheduler.num_workers, threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < N:
                B[bx * 128 + i] = A[bx * 128 + i] * 2.0


class Scaled:
    """A user's decorator class: what it wraps, times its own factor (which `__wrapped__` does not show)."""

    def __init__(self, fn, factor):
        self.__wrapped__, self.factor = fn, factor

    def __call__(self, x, s):
        return self.__wrapped__(x, s) * self.factor


class Opaque:
    """A value with no text that is the same in every process."""

    def __init__(self, factor):
        self.factor = factor


def make_opaque(config):
    """A kernel reading an object's attribute: it cannot be recorded on disk, only built."""

    @tl.jit
    def scaled(A, B):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        B: T.Tensor[[N], T.float32]
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(N):
                B[i] = A[i] * config.factor

    return scaled


def make_configured(config):
    """A kernel reading attributes of the factory's argument, a user's class or module (`config.shift`)."""

    @tl.jit
    def configured(A, B):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        B: T.Tensor[[N], T.float32]
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(N):
                B[i] = A[i] + config.shift

    return configured


@tl.jit
def imports_in_body(A, B):
    """B = A * SCALE, SCALE imported in the body from a user's module."""
    from tests.kernels.settings import SCALE

    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * SCALE


@tl.jit
def imports_a_module_whole(A, B):
    """B = A * settings.SCALE, the user's module imported whole in the body and read by attribute."""
    from tests.kernels import settings as config

    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * config.SCALE


@tl.jit
def imports_a_module_by_its_path(A, B):
    """B = A * SCALE through `import tests.kernels.settings` in the body."""
    import tests.kernels.settings

    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * tests.kernels.settings.SCALE


@tl.jit
def reads_getenv(A, B):
    """B = A * $TLTYPED_TEST_SCALE, read in the body through `os.getenv`."""
    factor = float(os.getenv("TLTYPED_TEST_SCALE", "2.0"))
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * factor


@tl.jit
def reads_the_environment(A, B):
    """B = A * $TLTYPED_TEST_SCALE, read in the body: from the process's environment, not from any code."""
    factor = float(os.environ.get("TLTYPED_TEST_SCALE", "2.0"))
    N = T.const("N")
    A: T.Tensor[[N], T.float32]
    B: T.Tensor[[N], T.float32]
    with T.Kernel(1, threads=128) as bx:
        for i in T.Parallel(N):
            B[i] = A[i] * factor


def make_rebindable(scale):
    """A kernel reading a closure variable that the factory's other function rebinds (`nonlocal`)."""

    @tl.jit
    def scaled(A, B):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        B: T.Tensor[[N], T.float32]
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(N):
                B[i] = A[i] * scale

    def rebind(value):
        nonlocal scale
        scale = value

    return scaled, rebind


def offset_by_name():
    return globals()["OFFSET"]


def offset_through_the_module_table():
    return sys.modules[__name__].OFFSET


def offset_through_importlib():
    return importlib.import_module(__name__).OFFSET


def offset_from_a_file():
    with open(OFFSET_FILE) as file:
        return float(file.read() or OFFSET)


def offset_from_a_path():
    return float(pathlib.Path(OFFSET_FILE).read_text() or OFFSET)


def offset_through_os_read():
    fd = os.open(OFFSET_FILE, os.O_RDONLY)
    try:
        return float(os.read(fd, 64) or OFFSET)
    finally:
        os.close(fd)


def offset_from_a_path_opened():
    with pathlib.Path(OFFSET_FILE).open() as file:
        return float(file.read() or OFFSET)


def offset_through_io_open():
    with io.open(OFFSET_FILE) as file:
        return float(file.read() or OFFSET)


def offset_through_codecs():
    with codecs.open(OFFSET_FILE, encoding="utf-8") as file:
        return float(file.read() or OFFSET)


def offset_through_fdopen():
    with os.fdopen(os.open(OFFSET_FILE, os.O_RDONLY)) as file:
        return float(file.read() or OFFSET)


def offset_from_a_process():
    return float(subprocess.run(["cat", OFFSET_FILE], capture_output=True, text=True).stdout or OFFSET)


def offset_from_a_file_s_size():
    return float(os.path.getsize(OFFSET_FILE)) + OFFSET


def offset_at_random():
    return random.random() + OFFSET


def offset_from_the_clock():
    return time.time() % 1 + OFFSET


def offset_from_a_listing():
    return float(len(listing(OFFSET_FILE))) + OFFSET


def offset_from_a_process_s_output():
    return float(check_output(["cat", OFFSET_FILE], text=True) or OFFSET)


def offset_from_the_date():
    return datetime.date.today().day + OFFSET


def offset_from_a_string():
    return eval("OFFSET")


def offset_through_its_own_import():
    import sys

    return sys.modules[__name__].OFFSET


def offset_through_a_frame():
    return sys._getframe().f_globals["OFFSET"]


def offset_from_a_path_s_bytes():
    return float(pathlib.Path(OFFSET_FILE).read_bytes() or OFFSET)


def offset_from_a_folder():
    return float(len(list(pathlib.Path(OFFSET_FILE).parent.iterdir()))) + OFFSET


def offset_through_exec():
    found = {}
    exec("value = 0.0", {}, found)  # whatever the string says is in no code the fingerprint reads
    return found["value"] + OFFSET


def offset_through_a_function_s_globals():
    return offset.__globals__["OFFSET"]


def offset_from_the_process_id():
    return float(os.getpid() % 2) + OFFSET


def offset_from_the_cpu_count():
    return float(os.cpu_count() or 1) + OFFSET


def offset_from_the_disk():
    return float(shutil.disk_usage(os.path.dirname(OFFSET_FILE)).free % 2) + OFFSET


def offset_from_a_temporary_folder():
    return float(len(tempfile.gettempdir()) % 2) + OFFSET


def offset_from_the_host_name():
    return float(len(socket.gethostname()) % 2) + OFFSET


def offset_from_a_uuid():
    return float(uuid.uuid4().int % 2) + OFFSET


def offset_from_the_machine():
    return float(len(platform.node()) % 2) + OFFSET


def offset_from_the_user():
    return float(len(getpass.getuser()) % 2) + OFFSET


def offset():
    return OFFSET


def make_blocked_copy(threads):
    """A kernel whose const's default names the factory's argument: an expression of the factory's scope, which
    TileLang's rewrite of the body, defined again elsewhere, cannot evaluate."""

    @tl.jit
    def blocked_copy(A, B, block=threads):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        B: T.Tensor[[N], T.float32]
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    B[bx * block + i] = A[bx * block + i]

    return blocked_copy
