"""Guarded background tasks: every never-ending coroutine starts here.

A task that crashes is logged with its name instead of vanishing silently
in an unretrieved exception; a control loop that must never stop for good
runs through ``restarting``, which starts it again after a crash.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import structlog

_log = structlog.get_logger(__name__)


def guarded(coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
    """Start ``coro`` as a named task whose crash is logged."""
    task = asyncio.create_task(coro, name=name)
    task.add_done_callback(_report)
    return task


def _report(task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        _log.error("task crashed", task=task.get_name(), exc_info=exc)


async def stop(*tasks: asyncio.Task[Any]) -> None:
    """Cancel tasks and wait for them to finish."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def restarting(
    loop: Callable[[], Awaitable[object]], *, name: str, pause: float = 1.0, max_pause: float = 30.0
) -> None:
    """Run ``loop`` until it returns; an unexpected crash is logged and the loop started again.

    Expected failures are the loop's own business; this is the last line of
    defence against the unexpected one (a library raising something new)
    silently stopping a controller for the life of the process. The pause
    doubles with each crash in a row, up to ``max_pause``.
    """
    delay = pause
    while True:
        started = asyncio.get_running_loop().time()
        try:
            await loop()
            return
        except Exception:
            _log.exception("control loop crashed; starting it again", loop=name, pause=delay)
        ran = asyncio.get_running_loop().time() - started
        delay = pause if ran > max_pause else min(delay * 2, max_pause)
        await asyncio.sleep(delay)
