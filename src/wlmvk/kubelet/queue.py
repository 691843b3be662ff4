"""A keyed work queue: each key is worked on by one worker at a time.

Like client-go's workqueue: adding a key that is already waiting is a
no-op; adding a key that is being worked on marks it dirty, and it is
handed out again once the worker calls ``done``. So every pod is reconciled
by one serialized worker, however many events arrive for it, and a burst of
events costs one reconcile.

Keys added ``urgent`` (a pod to submit or to cancel) are handed out before the
others (status writes), first in first out within each class: in a burst of
new pods the jobs reach Slurm first and their statuses follow. Adding an
already-waiting key as urgent moves it forward.
"""

from __future__ import annotations

import asyncio
import itertools

_URGENT = 0
_NORMAL = 1


class KeyedQueue:
    def __init__(self) -> None:
        self._waiting: asyncio.PriorityQueue[tuple[int, int, str]] = asyncio.PriorityQueue()
        self._order = itertools.count()
        self._queued: dict[str, int] = {}  # key -> the class it waits in
        self._active: set[str] = set()
        self._active_urgent: set[str] = set()
        self._dirty: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def __len__(self) -> int:
        return len(self._queued)

    def urgent(self) -> int:
        """Urgent keys waiting or being worked on."""
        return len(self._active_urgent) + sum(1 for rank in self._queued.values() if rank == _URGENT)

    def add(self, key: str, *, urgent: bool = False) -> None:
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

    def add_after(self, key: str, delay: float, *, urgent: bool = False) -> None:
        """Add ``key`` after ``delay`` seconds (an earlier ``add`` wins)."""
        if key in self._timers or key in self._queued:
            return
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(delay, self._fire, key, urgent)

    def _fire(self, key: str, urgent: bool) -> None:
        self._timers.pop(key, None)
        self.add(key, urgent=urgent)

    async def get(self) -> str:
        while True:
            rank, _, key = await self._waiting.get()
            if self._queued.get(key) == rank:
                break  # else a stale entry of a key moved forward (or already handed out)
        del self._queued[key]
        self._active.add(key)
        if rank == _URGENT:
            self._active_urgent.add(key)
        return key

    def done(self, key: str) -> None:
        self._active.discard(key)
        self._active_urgent.discard(key)
        rank = self._dirty.pop(key, None)
        if rank is not None:
            self.add(key, urgent=rank == _URGENT)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
