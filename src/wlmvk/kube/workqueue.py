"""The work queue of every controller: the kubelet's pods and the operator's resources.

It behaves as client-go's workqueue (``util/workqueue``), which controllers are written against:

- Keys, not objects, are queued; a key already waiting is not added twice, so a burst of
  events for one object costs one reconcile.
- A key being worked on is handed to no other worker. Added meanwhile, it is marked dirty and
  handed out again once the worker calls ``done``: each object is reconciled by one worker at
  a time, and no event is lost.
- ``add_after`` adds a key later (a pending delayed add is dropped by an earlier ``add``).
- ``add_rate_limited`` requeues a key that failed after a delay that doubles with each
  consecutive failure of that key (``base_delay`` to ``max_delay``); ``forget`` ends the
  series once the key succeeds. A key that keeps failing thus does not spin, and one key's
  failures do not delay the others.

The kubelet adds one thing: keys added ``urgent`` (a pod to submit or to cancel) are handed out
before the others (status writes), first in first out within each class, so that in a burst
of new pods the jobs reach Slurm first and their statuses follow. Adding a waiting key as
urgent moves it forward.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

_URGENT = 0
_NORMAL = 1


class WorkQueue(Generic[K]):
    def __init__(self, *, base_delay: float = 0.5, max_delay: float = 10.0) -> None:
        self._waiting: asyncio.PriorityQueue[tuple[int, int, K]] = asyncio.PriorityQueue()
        self._order = itertools.count()
        self._queued: dict[K, int] = {}  # key -> the class it waits in
        self._active: set[K] = set()
        self._active_urgent: set[K] = set()
        self._dirty: dict[K, int] = {}
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._failures: dict[K, int] = {}
        self._base_delay = base_delay
        self._max_delay = max_delay

    def __len__(self) -> int:
        return len(self._queued)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` waits to be handed out (not counting delayed adds)."""
        return key in self._queued

    def waiting(self) -> list[K]:
        """The keys waiting to be handed out."""
        return list(self._queued)

    def urgent(self) -> int:
        """Urgent keys waiting or being worked on."""
        return len(self._active_urgent) + sum(1 for rank in self._queued.values() if rank == _URGENT)

    def add(self, key: K, *, urgent: bool = False) -> None:
        rank = _URGENT if urgent else _NORMAL
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        if key in self._active:
            self._dirty[key] = min(rank, self._dirty.get(key, _NORMAL))
            return
        waiting = self._queued.get(key)
        if waiting is not None and waiting <= rank:
            return
        # New, or moving forward: the entry in the lower class goes stale and is skipped.
        self._queued[key] = rank
        self._waiting.put_nowait((rank, next(self._order), key))

    def add_after(self, key: K, delay: float, *, urgent: bool = False) -> None:
        """Add ``key`` after ``delay`` seconds (an earlier ``add`` wins)."""
        if key in self._timers or key in self._queued:
            return
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(delay, self._fire, key, urgent)

    def add_rate_limited(self, key: K, *, urgent: bool = False) -> float:
        """Requeue ``key`` after its failure delay, and count the failure; returns the delay."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = min(self._max_delay, self._base_delay * 2.0**failures)
        self.add_after(key, delay, urgent=urgent)
        return delay

    def forget(self, key: K) -> None:
        """``key`` succeeded: its next failure waits ``base_delay`` again."""
        self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        """Consecutive failures of ``key`` since it was last forgotten."""
        return self._failures.get(key, 0)

    def _fire(self, key: K, urgent: bool) -> None:
        self._timers.pop(key, None)
        self.add(key, urgent=urgent)

    async def get(self) -> K:
        while True:
            rank, _, key = await self._waiting.get()
            if self._queued.get(key) == rank:
                break  # else a stale entry of a key moved forward (or already handed out)
        del self._queued[key]
        self._active.add(key)
        if rank == _URGENT:
            self._active_urgent.add(key)
        return key

    def done(self, key: K) -> None:
        self._active.discard(key)
        self._active_urgent.discard(key)
        rank = self._dirty.pop(key, None)
        if rank is not None:
            self.add(key, urgent=rank == _URGENT)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
