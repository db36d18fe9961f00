"""Helpers of kernel bodies in a module of their own, as users factor them (tests/kernels/broken.py and
lazy_style.py call them): a function and a `T.macro`."""

import tltyped.language as T


def blocks_for(n: int, block: int) -> int:
    if n % block:
        raise ValueError(f"{n} is not a multiple of {block}")  # FAILS HERE: blocks_for
    return n // block


@T.macro
def copy_through(src, dst):  # type: ignore[no-untyped-def]
    T.copy(src, dst, dst_typo=1)  # FAILS HERE: copy_through
