"""A keyed work queue: each key is worked on by one worker at a time.

Like client-go's workqueue: adding a key that is already waiting is a
no-op; adding a key that is being worked on marks it dirty, and it is
handed out again once the worker calls ``done``. So every pod is reconciled
by one serialized worker, however many events arrive for it, and a burst of
events costs one reconcile.
"""

from __future__ import annotations

import asyncio


class KeyedQueue:
    def __init__(self) -> None:
        self._waiting: asyncio.Queue[str] = asyncio.Queue()
        self._queued: set[str] = set()
        self._active: set[str] = set()
        self._dirty: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def __len__(self) -> int:
        return len(self._queued)

    def add(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        if key in self._active:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        self._waiting.put_nowait(key)

    def add_after(self, key: str, delay: float) -> None:
        """Add ``key`` after ``delay`` seconds (an earlier ``add`` wins)."""
        if key in self._timers or key in self._queued:
            return
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(delay, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def get(self) -> str:
        key = await self._waiting.get()
        self._queued.discard(key)
        self._active.add(key)
        return key

    def done(self, key: str) -> None:
        self._active.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
