"""Control loops survive the unexpected: a crash is logged and the loop runs again."""

from __future__ import annotations

import asyncio

import pytest

from wlmvk.core.tasks import restarting


async def test_a_crashing_loop_is_started_again_until_it_returns() -> None:
    runs = 0

    async def loop() -> None:
        nonlocal runs
        runs += 1
        if runs < 3:
            raise AttributeError("'NoneType' object has no attribute '_transport'")

    await asyncio.wait_for(restarting(loop, name="test", pause=0.01), 5)
    assert runs == 3


async def test_cancellation_is_not_a_crash() -> None:
    started = asyncio.Event()

    async def loop() -> None:
        started.set()
        await asyncio.sleep(3600)

    task = asyncio.create_task(restarting(loop, name="test", pause=0.01))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
