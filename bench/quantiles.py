"""The benchmarks' one percentile: the nearest rank of ``q`` among the values (p95 of 20 values is
the 19th), as every latency table of docs/performance.md reports it."""

from __future__ import annotations


def quantile(values: list[float], q: float) -> float:
    """The value at rank ``round(q * (n - 1))`` of the sorted values (``values`` may be unsorted)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
