from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.kubelet.fakebackend import FakeBackend
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobSpec
from wlmvk.kubelet.logs import LogOptions, LogSource, last_lines, parse_options, stamp, stream_logs

NOW = datetime(2026, 12, 2, 15, 0, 0, tzinfo=UTC)


def test_parse_options_defaults() -> None:
    assert parse_options({}, now=NOW) == LogOptions()


def test_parse_options_all() -> None:
    options = parse_options(
        {"follow": "true", "tailLines": "5", "limitBytes": "100", "sinceSeconds": "60", "timestamps": "True"},
        now=NOW,
    )
    assert options == LogOptions(
        follow=True, tail_lines=5, limit_bytes=100, since=NOW - timedelta(seconds=60), timestamps=True
    )
    assert parse_options({"sinceTime": "2026-12-02T14:00:00Z"}, now=NOW).since == NOW - timedelta(hours=1)


@pytest.mark.parametrize(
    "query",
    [
        {"previous": "true"},
        {"tailLines": "x"},
        {"tailLines": "-1"},
        {"limitBytes": "0"},
        {"sinceSeconds": "0"},
        {"sinceTime": "yesterday"},
        {"sinceTime": "2026-12-02T14:00:00Z", "sinceSeconds": "5"},
        {"follow": "maybe"},
    ],
)
def test_parse_options_rejects(query: dict[str, str]) -> None:
    with pytest.raises(InvalidInput):
        parse_options(query, now=NOW)


def test_previous_false_is_fine() -> None:
    assert parse_options({"previous": "false"}, now=NOW) == LogOptions()


def test_last_lines() -> None:
    assert last_lines(b"a\nb\nc\n", 2) == b"b\nc\n"
    assert last_lines(b"a\nb\npartial", 1) == b"partial"
    assert last_lines(b"a\n", 0) == b""
    assert last_lines(b"a\n", 10) == b"a\n"


def test_stamp() -> None:
    assert stamp(b"x\ny\n", NOW) == b"2026-12-02T15:00:00.000000000Z x\n2026-12-02T15:00:00.000000000Z y\n"


async def run_job(backend: FakeBackend, data: bytes) -> tuple[str, asyncio.Event]:
    job_id = await backend.submit(JobSpec(script="#!/bin/sh\n", idempotency_key="k"))
    backend.run(job_id)
    backend.write(job_id, data)
    return backend.jobs[job_id].std_out, asyncio.Event()


async def read_all(backend: FakeBackend, source: LogSource, options: LogOptions) -> bytes:
    return b"".join([chunk async for chunk in stream_logs(backend, source, options, drain=0.1)])


async def test_whole_file_tail_and_limit() -> None:
    backend = FakeBackend()
    path, ended = await run_job(backend, b"".join(b"line %d\n" % i for i in range(300)))
    source = LogSource(path, NOW, ended.wait)
    whole = await read_all(backend, source, LogOptions())
    assert whole.count(b"\n") == 300
    assert await read_all(backend, source, LogOptions(tail_lines=2)) == b"line 298\nline 299\n"
    assert await read_all(backend, source, LogOptions(limit_bytes=10)) == b"line 0\nlin"


async def test_since_after_the_job_started_hides_older_output() -> None:
    backend = FakeBackend()
    path, ended = await run_job(backend, b"old\n")
    source = LogSource(path, NOW - timedelta(hours=1), ended.wait)
    assert await read_all(backend, source, LogOptions(since=NOW - timedelta(minutes=1))) == b""
    assert await read_all(backend, source, LogOptions(since=NOW - timedelta(hours=2))) == b"old\n"


async def test_follow_streams_new_lines_and_ends_after_the_job() -> None:
    backend = FakeBackend()
    path, ended = await run_job(backend, b"first\n")
    job_id = next(iter(backend.jobs))
    source = LogSource(path, NOW, ended.wait)
    stream = stream_logs(backend, source, LogOptions(follow=True), drain=0.2)
    assert await anext(stream) == b"first\n"
    backend.write(job_id, b"sec")
    backend.write(job_id, b"ond\nthird\n")
    assert await asyncio.wait_for(anext(stream), 2) == b"second\nthird\n"
    backend.write(job_id, b"no newline at the end")
    ended.set()
    rest = [chunk async for chunk in stream]
    assert b"".join(rest) == b"no newline at the end"


async def test_follow_with_limit_stops_at_the_limit() -> None:
    backend = FakeBackend()
    path, ended = await run_job(backend, b"12345\n")
    job_id = next(iter(backend.jobs))
    stream = stream_logs(backend, LogSource(path, NOW, ended.wait), LogOptions(follow=True, limit_bytes=8))
    assert await anext(stream) == b"12345\n"
    backend.write(job_id, b"6789\n")
    assert await asyncio.wait_for(anext(stream), 2) == b"67"
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(stream), 2)


async def test_follow_with_timestamps_stamps_each_new_line() -> None:
    backend = FakeBackend()
    path, ended = await run_job(backend, b"")
    job_id = next(iter(backend.jobs))
    stream = stream_logs(
        backend, LogSource(path, NOW, ended.wait), LogOptions(follow=True, timestamps=True), now=lambda: NOW
    )
    assert await anext(stream) == b""
    backend.write(job_id, b"a\nb\n")
    assert await asyncio.wait_for(anext(stream), 2) == stamp(b"a\nb\n", NOW)
    await stream.aclose()
