"""Guarded background tasks: every never-ending coroutine starts here.

A task that crashes is logged with its name instead of vanishing silently
in an unretrieved exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
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
