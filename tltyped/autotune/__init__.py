"""The autotuner behind `tl.tune([...])`."""

from tltyped.autotune.search import SearchResult, candidates, first_candidates, search, time_call, tuned

__all__ = ["SearchResult", "candidates", "first_candidates", "search", "time_call", "tuned"]
