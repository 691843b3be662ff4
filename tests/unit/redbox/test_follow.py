"""Following a growing file (TailFile) and the health service's answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from grpclib import GRPCError

from wlmvk._proto.grpc.health.v1 import HealthCheckRequest, HealthCheckResponseServingStatus
from wlmvk.redbox import files
from wlmvk.redbox.health import Health


def append(path: Path, text: str) -> None:
    with path.open("a") as out:
        out.write(text)


async def test_follow_waits_for_the_file_then_streams_and_drains_on_stop(tmp_path: Path) -> None:
    path = tmp_path / "out.log"
    stop = asyncio.Event()
    stream = files.follow(path, stop, interval=0.01)
    pending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.05)
    assert not pending.done()
    path.write_text("one\n")
    assert await asyncio.wait_for(pending, 5) == b"one\n"
    append(path, "two\n")
    assert await asyncio.wait_for(anext(stream), 5) == b"two\n"
    append(path, "three\n")
    stop.set()
    assert [chunk async for chunk in stream] == [b"three\n"]


async def test_follow_restarts_after_truncation(tmp_path: Path) -> None:
    path = tmp_path / "out.log"
    path.write_text("long first content\n")
    stop = asyncio.Event()
    stream = files.follow(path, stop, interval=0.01)
    assert await anext(stream) == b"long first content\n"
    path.write_text("new\n")
    assert await asyncio.wait_for(anext(stream), 5) == b"new\n"
    stop.set()
    assert [chunk async for chunk in stream] == []


async def test_health_check_and_watch() -> None:
    health = Health()
    assert (await health.check(HealthCheckRequest())).status is HealthCheckResponseServingStatus.SERVING
    with pytest.raises(GRPCError):
        await health.check(HealthCheckRequest(service="other"))
    watch = health.watch(HealthCheckRequest(service="api.WorkloadManager"))
    assert (await anext(watch)).status is HealthCheckResponseServingStatus.SERVING
    later = asyncio.ensure_future(anext(watch))
    await asyncio.sleep(0)
    health.set_serving(False)
    assert (await asyncio.wait_for(later, 5)).status is HealthCheckResponseServingStatus.NOT_SERVING
    await watch.aclose()  # type: ignore[attr-defined]
