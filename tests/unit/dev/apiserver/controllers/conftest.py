"""Helpers for driving the controllers against a real in-memory Store (no HTTP)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from tests.fixtures import polling
from wlmvk_dev.apiserver.storage.store import Store

Condition = Callable[[], Any]


async def eventually(check: Condition, *, timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll ``check`` (on the store: no I/O) until it returns a truthy value; no exception is "not yet"."""
    return await polling.eventually(check, timeout=timeout, every=interval, tolerate=())


@pytest.fixture
def store() -> Store:
    return Store()


@pytest.fixture
async def running(store: Store) -> AsyncIterator[Callable[[Callable[[Store], Awaitable[None]]], None]]:
    """Start controllers on ``store``; they are cancelled (and must not have crashed) at the end."""
    tasks: list[asyncio.Task[None]] = []

    def start(controller: Callable[[Store], Awaitable[None]]) -> None:
        tasks.append(asyncio.ensure_future(controller(store)))

    yield start
    for task in tasks:
        assert not task.done() or task.cancelled(), task.exception()
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
