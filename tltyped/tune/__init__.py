"""The autotuner behind `tl.tune([...])`."""

from tltyped.tune.search import candidates, search, time_call

__all__ = ["candidates", "search", "time_call"]
