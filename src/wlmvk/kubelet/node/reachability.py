"""red-box reachability, learnt from every call the kubelet makes.

An ``Unavailable`` from any call (``metered.MeteredBackend`` reports each
outcome here) marks red-box unreachable: node conditions go not Ready, pods are
left alone; the next call that succeeds marks it reachable again. Waiters on
``changed()`` (the node controller) wake on each flip.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime


class Reachability:
    """Whether red-box answers, since when, and why not."""

    def __init__(self) -> None:
        self.reachable = True
        self.message = ""
        self.since = datetime.now(UTC)
        self._flipped = asyncio.Event()

    def ok(self) -> None:
        if not self.reachable:
            self.reachable, self.message, self.since = True, "", datetime.now(UTC)
            self._flip()

    def failed(self, message: str) -> None:
        if self.reachable:
            self.reachable, self.since = False, datetime.now(UTC)
            self._flip()
        self.message = message

    def _flip(self) -> None:
        self._flipped.set()
        self._flipped = asyncio.Event()

    async def changed(self) -> None:
        """Resolve at the next flip."""
        await self._flipped.wait()
