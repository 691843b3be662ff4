"""New pods' syncs handed off the pod workers, bounded per red-box (``controller``'s workers).

A new pod's sync (its submission, then its annotation) runs apart from the worker that took its
key, up to ``bound`` at once per red-box (its user, '' the default one); the key stays taken
until that sync ends, so a pod is still synced by one at a time, and the workers go on to the
next pods. Each red-box's client then sees every submission waiting for it and sends them
together (``redboxclient.batching``), also when the pods of many tenants come interleaved,
which the workers alone (fewer than the tenants) would send one pod per call.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Coroutine
from typing import Any


class HandOffs:
    """The syncs running apart from the workers, counted by red-box."""

    def __init__(self, bound: int) -> None:
        self._bound = max(1, bound)
        self._running: Counter[str] = Counter()
        self._tasks: set[asyncio.Task[None]] = set()

    def has_room(self, holder: str) -> bool:
        """Whether one more of ``holder``'s pods may be synced apart."""
        return self._running[holder] < self._bound

    def start(self, holder: str, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` apart, counted for ``holder`` until it ends."""
        self._running[holder] += 1
        task = asyncio.create_task(self._counted(holder, work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _counted(self, holder: str, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        finally:
            self._running[holder] -= 1

    async def stop(self) -> None:
        """Cancel the syncs still running and wait for them."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
