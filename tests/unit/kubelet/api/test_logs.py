from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest

from tests.unit.kubelet.fakebackend import FakeBackend
from wlmvk.core.backend import Backend
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobSpec
from wlmvk.kubelet.api.loglines import MAX_LINE, stamp
from wlmvk.kubelet.api.logs import (
    FOLLOW_QUEUE,
    TAIL_RING_BYTES,
    LogOptions,
    LogSource,
    parse_options,
    stream_logs,
)

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
    "text", ["2026-12-02T14:00:00z", "2026-12-02T15:00:00+01:00", "2026-12-02t14:00:00.5Z"]
)
def test_since_time_is_any_rfc3339_time(text: str) -> None:
    """RFC 3339 allows a lowercase z (section 5.6); the one parser (kube.times) reads every form."""
    since = parse_options({"sinceTime": text}, now=NOW).since
    assert since is not None
    assert since.replace(microsecond=0) == NOW - timedelta(hours=1)


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


async def test_follow_resumes_after_red_box_went_away_with_each_line_once() -> None:
    """red-box gone mid-follow (killed, its forward cut), the job ending meanwhile: the follow
    waits for red-box, resumes at the byte it reached, and ends after the last line."""
    backend = FakeBackend()
    path, ended = await run_job(backend, b"first\n")
    job_id = next(iter(backend.jobs))
    source = LogSource(path, NOW, ended.wait)
    stream = stream_logs(backend, source, LogOptions(follow=True), drain=0.2)
    assert await anext(stream) == b"first\n"
    backend.write(job_id, b"second\n")
    assert await asyncio.wait_for(anext(stream), 2) == b"second\n"
    backend.down = True
    backend.write(job_id, b"third\n")
    ended.set()
    await asyncio.sleep(1.0)  # well past the drain: the job's end alone must not end the follow
    backend.down = False
    rest = [chunk async for chunk in stream]
    assert b"".join(rest) == b"third\n"
    assert backend.calls["tail_file"] >= 2


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


class GeneratedOutput:
    """A job's output made on the fly (never held whole), counting what the kubelet pulls."""

    CHUNK = 256 * 1024

    def __init__(self, size: int, *, pattern: bytes = b"x") -> None:
        self.size = size
        self.block = (pattern * (self.CHUNK // len(pattern) + 1))[: self.CHUNK]
        self.opened = 0
        self.pulled = 0

    async def _chunks(self) -> AsyncIterator[bytes]:
        for start in range(0, self.size, self.CHUNK):
            self.pulled += 1
            yield self.block[: min(self.CHUNK, self.size - start)]

    async def _growing(self) -> AsyncIterator[bytes]:
        """What is there, then a job that never stops writing (the chunks pulled counted)."""
        async for chunk in self._chunks():
            yield chunk
        while True:
            self.pulled += 1
            yield self.block
            await asyncio.sleep(0)

    def open_file(self, path: str) -> AsyncIterator[bytes]:
        self.opened += 1
        return self._chunks()

    def tail_file(self, path: str) -> AsyncIterator[bytes]:
        return self._growing()


async def generated_logs(output: GeneratedOutput, options: LogOptions) -> bytes:
    done = asyncio.Event()
    done.set()
    stream = stream_logs(cast(Backend, output), LogSource("out", NOW, done.wait), options, drain=0.05)
    return b"".join([chunk async for chunk in stream])


BIG = 32 * 1024 * 1024 + 7  # no newline at all


async def test_limit_bytes_stops_reading_a_huge_output_without_newlines() -> None:
    output = GeneratedOutput(BIG)
    assert await generated_logs(output, LogOptions(limit_bytes=10)) == b"x" * 10
    assert output.pulled == 1, "red-box's stream is closed once the limit is met"


async def test_tail_of_a_huge_output_without_newlines_is_its_last_cut_piece() -> None:
    output = GeneratedOutput(BIG)
    assert await generated_logs(output, LogOptions(tail_lines=1)) == b"x" * (BIG % MAX_LINE)
    assert await generated_logs(output, LogOptions(tail_lines=1, limit_bytes=10)) == b"x" * 7
    two = await generated_logs(output, LogOptions(tail_lines=2))
    assert two == b"x" * (MAX_LINE + BIG % MAX_LINE)
    assert output.opened == 3, "a short tail is found in one pass"


async def test_a_long_tail_is_found_in_two_passes_with_the_same_bytes() -> None:
    lines = b"".join(b"line %06d\n" % i for i in range(100_000))
    backend = FakeBackend()
    path, ended = await run_job(backend, lines)
    ended.set()
    source = LogSource(path, NOW, ended.wait)
    count = TAIL_RING_BYTES // MAX_LINE + 10
    tail = b"".join(lines.splitlines(keepends=True)[-count:])  # short lines: each is one piece
    assert await read_all(backend, source, LogOptions(tail_lines=count)) == tail
    assert backend.calls["open_file"] == 2
    assert await read_all(backend, source, LogOptions(tail_lines=200_000)) == lines


async def test_following_a_slow_reader_pulls_a_bounded_number_of_chunks_ahead() -> None:
    output = GeneratedOutput(1024 * 1024, pattern=b"0123456789abcde\n")
    never = asyncio.Event()
    stream = stream_logs(
        cast(Backend, output), LogSource("out", NOW, never.wait), LogOptions(follow=True, tail_lines=0)
    )
    assert await anext(stream) == b""
    first = await anext(stream)
    assert first.startswith(b"0123456789abcde\n")
    pulled = output.pulled
    await asyncio.sleep(0.3)  # the reader dawdles; red-box's stream must wait for it
    assert output.pulled - pulled <= FOLLOW_QUEUE + 1
    await stream.aclose()
