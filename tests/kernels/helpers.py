"""A helper of kernel bodies in a module of its own, as users factor them (tests/kernels/broken.py calls it)."""


def blocks_for(n: int, block: int) -> int:
    if n % block:
        raise ValueError(f"{n} is not a multiple of {block}")  # FAILS HERE: blocks_for
    return n // block
