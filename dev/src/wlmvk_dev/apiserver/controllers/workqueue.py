"""A deduplicating work queue for the in-process controllers.

Store change callbacks run synchronously inside a write, so they only ``add``
keys here; the controller's worker takes them in batches (``take``), in the
order they were first added, each key once however often it was added. Once
``close``\\ d (the controller stopped), ``add`` is a no-op, because store
callbacks cannot be unregistered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self) -> None:
        self._keys: dict[K, None] = {}
        self._ready = asyncio.Event()
        self._closed = False
        self._timers: set[asyncio.TimerHandle] = set()

    def add(self, key: K) -> None:
        if self._closed:
            return
        self._keys[key] = None
        self._ready.set()

    def add_after(self, key: K, delay: float) -> None:
        """Add ``key`` once ``delay`` seconds have passed."""
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle

        def fire() -> None:
            self._timers.discard(handle)
            self.add(key)

        handle = loop.call_later(delay, fire)
        self._timers.add(handle)

    async def take(self, timeout: float | None = None) -> list[K]:
        """Every queued key (waiting for one first; empty after ``timeout`` seconds)."""
        if not self._keys:
            self._ready.clear()
            try:
                async with asyncio.timeout(timeout):
                    await self._ready.wait()
            except TimeoutError:
                return []
        keys = list(self._keys)
        self._keys.clear()
        self._ready.clear()
        return keys

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._keys)

    def close(self) -> None:
        self._closed = True
        self._keys.clear()
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
