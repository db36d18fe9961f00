"""The autotuner behind `tl.tune([...])`."""

from tltyped.autotuner.search import SearchResult, candidates, first_candidates, memory_copy, search, time_call, tuned

__all__ = ["SearchResult", "candidates", "first_candidates", "memory_copy", "search", "time_call", "tuned"]
