"""When each node's periodic write falls due: spread over the period by the node's name.

One kubelet serving many nodes renews a Lease per node every renew interval and
writes each unchanged node's status every status interval. Done for every node at
once, 1,000 nodes are a burst of 1,000 writes, and the last of them is as late as
the burst is long. Here each node has a phase in [0, period) drawn from a hash of
its name (stable across restarts, whatever nodes come and go) and falls due at
phase + k * period: the writes of many nodes arrive evenly over the period.

``Schedule`` is the pure bookkeeping (no clock, no I/O): the node controller adds
and drops nodes, asks when the next one is due, and takes those due.
"""

from __future__ import annotations

import hashlib
import heapq
import math


def phase(name: str, period: float) -> float:
    """The node's offset within every period, in [0, period)."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 * period


def next_due(name: str, period: float, after: float) -> float:
    """The first time strictly after ``after`` at which ``name`` falls due."""
    offset = phase(name, period)
    return offset + (math.floor((after - offset) / period) + 1) * period


class Schedule:
    """Due times of named nodes, each at its phase of ``period``."""

    def __init__(self, period: float) -> None:
        if period <= 0:
            raise ValueError(f"period must be positive, not {period}")
        self.period = period
        self._due: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def __contains__(self, name: object) -> bool:
        return name in self._due

    def __len__(self) -> int:
        return len(self._due)

    def add(self, name: str, now: float) -> None:
        """Schedule ``name`` at its first slot after ``now`` (a node already scheduled keeps its slot)."""
        if name in self._due:
            return
        self._push(name, next_due(name, self.period, now))

    def discard(self, name: str) -> None:
        self._due.pop(name, None)  # its heap entry is skipped when it comes up

    def next_time(self) -> float | None:
        """The earliest due time, or None when nothing is scheduled."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def take_due(self, now: float) -> list[tuple[str, float]]:
        """(name, due time) of every node due at or before ``now``, earliest first; each is
        scheduled again at its next slot (after ``now`` when it fell more than a period behind)."""
        out: list[tuple[str, float]] = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now:
                return out
            due, name = heapq.heappop(self._heap)
            out.append((name, due))
            following = due + self.period
            self._push(name, following if following > now else next_due(name, self.period, now))

    def _push(self, name: str, due: float) -> None:
        self._due[name] = due
        heapq.heappush(self._heap, (due, name))

    def _drop_stale(self) -> None:
        while self._heap and self._due.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)
