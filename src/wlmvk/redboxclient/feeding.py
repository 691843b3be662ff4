"""The input side of red-box's exec stream: the caller's events sent, and the sender stopped."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from wlmvk.core.execs import ExecEvent
from wlmvk.wire import execs as sessions


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def send_events(stream: Any, events: AsyncIterator[ExecEvent], ended: asyncio.Event) -> None:
    """The caller's input events to red-box, then the end of the request stream."""
    async for event in events:
        await stream.send_message(sessions.event_to_wire(event))
    await stream.end()
    ended.set()
