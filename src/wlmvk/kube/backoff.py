"""Exponential backoff with jitter for reconnecting loops."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays that double from ``initial`` up to ``maximum``; ``reset()`` after a success."""

    initial: float = 0.2
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2
    _next: float = field(default=0.0, init=False)

    def delay(self) -> float:
        """The next delay, advancing the sequence."""
        current = self._next or self.initial
        self._next = min(current * self.factor, self.maximum)
        return current * (1 + random.uniform(-self.jitter, self.jitter))

    def reset(self) -> None:
        self._next = 0.0

    async def sleep(self) -> None:
        await asyncio.sleep(self.delay())
