"""The autotuner behind `tl.tune([...])`."""

from tltyped.autotune.search import SearchResult, candidates, search, time_call

__all__ = ["SearchResult", "candidates", "search", "time_call"]
