"""Container logs in the CRI format, read back with kubectl's options."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk_dev.hostnode.logs import LogOptions, LogWriter, parse_record, pump, read, tail_text

LINES = [
    b"2026-12-02T12:00:00.000000001Z stdout F one",
    b"2026-12-02T12:00:01.000000000Z stderr F two",
    b"2026-12-02T12:00:02.500000000Z stdout P thr",
    b"2026-12-02T12:00:02.600000000Z stdout F ee",
    b"2026-12-02T12:00:03.000000000Z stdout F four",
]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "0.log"
    path.write_bytes(b"\n".join(LINES) + b"\n")
    return path


async def collect(path: Path, options: LogOptions, **kwargs: object) -> bytes:
    return b"".join([chunk async for chunk in read(path, options, running=lambda: False, **kwargs)])  # type: ignore[arg-type]


async def test_plain(log: Path) -> None:
    assert await collect(log, LogOptions()) == b"one\ntwo\nthree\nfour\n"


async def test_tail(log: Path) -> None:
    assert await collect(log, LogOptions(tail_lines=1)) == b"four\n"
    assert await collect(log, LogOptions(tail_lines=0)) == b""
    assert await collect(log, LogOptions(tail_lines=100)) == b"one\ntwo\nthree\nfour\n"


async def test_timestamps(log: Path) -> None:
    out = await collect(log, LogOptions(timestamps=True, tail_lines=1))
    assert out == b"2026-12-02T12:00:03.000000000Z four\n"


async def test_since_time_and_seconds(log: Path) -> None:
    since = datetime(2026, 12, 2, 12, 0, 1, tzinfo=UTC)
    assert await collect(log, LogOptions(since_time=since)) == b"two\nthree\nfour\n"
    now = datetime(2026, 12, 2, 12, 0, 4, tzinfo=UTC)
    assert await collect(log, LogOptions(since_seconds=2), now=now) == b"three\nfour\n"
    assert await collect(log, LogOptions(since_seconds=1), now=now) == b"four\n"


async def test_limit_bytes(log: Path) -> None:
    assert await collect(log, LogOptions(limit_bytes=6)) == b"one\ntw"


async def test_missing_file_is_empty(tmp_path: Path) -> None:
    assert await collect(tmp_path / "none.log", LogOptions()) == b""


async def test_follow_streams_new_lines_until_the_container_stops(tmp_path: Path) -> None:
    path = tmp_path / "0.log"
    writer = LogWriter(path)
    writer.record("stdout", b"first")
    alive = True
    chunks: list[bytes] = []

    async def follow() -> None:
        async for chunk in read(path, LogOptions(follow=True), running=lambda: alive):
            chunks.append(chunk)

    task = asyncio.ensure_future(follow())
    while not chunks:
        await asyncio.sleep(0.02)
    assert chunks == [b"first\n"]
    writer.record("stdout", b"second")
    while len(chunks) < 2:
        await asyncio.sleep(0.02)
    assert chunks[1] == b"second\n"
    assert not task.done()
    alive = False
    await asyncio.wait_for(task, 5)
    writer.close()


async def test_pump_splits_lines_and_keeps_the_last_partial(tmp_path: Path) -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(b"a\nb")
    reader.feed_data(b"c\n" + b"x" * 20000 + b"\nend")
    reader.feed_eof()
    writer = LogWriter(tmp_path / "0.log")
    await pump(reader, "stderr", writer)
    writer.close()
    records = [parse_record(line) for line in (tmp_path / "0.log").read_bytes().splitlines()]
    texts = [r.text for r in records if r is not None]
    assert texts == [b"a\n", b"bc\n", b"x" * 16384, b"x" * (20000 - 16384) + b"\n", b"end\n"]
    assert {r.stream for r in records if r is not None} == {"stderr"}
    assert tail_text(tmp_path / "0.log", max_bytes=5) == "\nend\n"[-5:]


def test_options_from_query() -> None:
    options = LogOptions.from_query(
        {"container": "c", "follow": "true", "tailLines": "10", "timestamps": "True", "sinceSeconds": "5"}
    )
    assert options == LogOptions(container="c", follow=True, tail_lines=10, timestamps=True, since_seconds=5)
    assert options.query() == {"follow": "true", "timestamps": "true", "tailLines": "10", "sinceSeconds": "5"}


@pytest.mark.parametrize(
    "query",
    [
        {"tailLines": "x"},
        {"tailLines": "-1"},
        {"limitBytes": "0"},
        {"sinceSeconds": "0"},
        {"sinceTime": "yesterday"},
        {"sinceSeconds": "5", "sinceTime": "2026-12-02T12:00:00Z"},
    ],
)
def test_bad_options(query: dict[str, str]) -> None:
    with pytest.raises(InvalidInput):
        LogOptions.from_query(query)
