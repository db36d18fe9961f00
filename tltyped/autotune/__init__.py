"""The autotuner behind `tl.tune([...])`."""

from tltyped.autotune.search import candidates, search, time_call

__all__ = ["candidates", "search", "time_call"]
