"""Container logs of the host kubelet: written in the CRI format, read back with kubectl's options.

Each line a container prints is stored as ``<RFC3339Nano time> <stdout|stderr>
<F|P> <text>`` (``P`` for a piece of a line longer than 16 KiB), one file per
start of the container, as container runtimes do; so ``--timestamps``,
``--since``, ``--since-time``, ``--tail``, ``--limit-bytes``, ``--previous``
and ``-f`` all work as they would against a real kubelet.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from wlmvk.core.errors import InvalidInput
from wlmvk.kube.times import nano_time
from wlmvk_dev.apiserver.objects import timestamps

MAX_RECORD = 16 * 1024
FOLLOW_POLL = 0.1


class LogWriter:
    """Appends one container start's output in the CRI format."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: IO[bytes] = open(path, "ab")  # noqa: SIM115  (closed in close())

    def record(self, stream: str, text: bytes, *, partial: bool = False) -> None:
        tag = b"P" if partial else b"F"
        self._file.write(nano_time().encode() + b" " + stream.encode() + b" " + tag + b" " + text + b"\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


async def pump(reader: asyncio.StreamReader, stream: str, writer: LogWriter) -> None:
    """Copy a process's output into ``writer`` line by line until EOF."""
    pending = b""
    while True:
        chunk = await reader.read(65536)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            _write_line(writer, stream, line)
        while len(pending) > MAX_RECORD:
            writer.record(stream, pending[:MAX_RECORD], partial=True)
            pending = pending[MAX_RECORD:]
    if pending:
        writer.record(stream, pending)


def _write_line(writer: LogWriter, stream: str, line: bytes) -> None:
    while len(line) > MAX_RECORD:
        writer.record(stream, line[:MAX_RECORD], partial=True)
        line = line[MAX_RECORD:]
    writer.record(stream, line)


def tail_text(path: Path, *, max_lines: int = 80, max_bytes: int = 2048) -> str:
    """The end of a log as plain text (``FallbackToLogsOnError`` termination messages)."""
    try:
        records = [r for r in (parse_record(line) for line in path.read_bytes().splitlines()) if r]
    except OSError:
        return ""
    text = b"".join(r.text for r in records[-max_lines:]).decode("utf-8", "replace")
    return text[-max_bytes:]


@dataclass(frozen=True)
class Record:
    time: datetime
    stamp: bytes
    stream: str
    text: bytes
    """The content, with its newline when the record ends a line."""


def parse_record(line: bytes) -> Record | None:
    try:
        stamp, stream, tag, text = line.split(b" ", 3)
    except ValueError:
        return None
    moment = timestamps.parse(stamp.decode())
    if moment is None:
        return None
    return Record(moment, stamp, stream.decode(), text + (b"" if tag == b"P" else b"\n"))


@dataclass(frozen=True)
class LogOptions:
    """The query of ``pods/{name}/log`` (and of the kubelet's ``/containerLogs``)."""

    container: str | None = None
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since_seconds: int | None = None
    since_time: datetime | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> LogOptions:
        """Parse and validate, with the API server's messages; ``InvalidInput`` when wrong."""
        since_time = None
        if query.get("sinceTime"):
            since_time = timestamps.parse(query["sinceTime"])
            if since_time is None:
                raise InvalidInput(f'parsing time "{query["sinceTime"]}" as RFC 3339 failed')
        options = cls(
            container=query.get("container") or None,
            follow=_flag(query, "follow"),
            previous=_flag(query, "previous"),
            timestamps=_flag(query, "timestamps"),
            tail_lines=_number(query, "tailLines", minimum=0),
            limit_bytes=_number(query, "limitBytes", minimum=1),
            since_seconds=_number(query, "sinceSeconds", minimum=1),
            since_time=since_time,
        )
        if options.since_seconds is not None and options.since_time is not None:
            raise InvalidInput("at most one of sinceTime or sinceSeconds may be specified")
        return options

    def query(self) -> dict[str, str]:
        """Back to query parameters (for the kubelet's ``/containerLogs``)."""
        out: dict[str, str] = {}
        for flag in ("follow", "previous", "timestamps"):
            if getattr(self, flag):
                out[flag] = "true"
        for name, value in (
            ("tailLines", self.tail_lines),
            ("limitBytes", self.limit_bytes),
            ("sinceSeconds", self.since_seconds),
        ):
            if value is not None:
                out[name] = str(value)
        if self.since_time is not None:
            out["sinceTime"] = timestamps.format_time(self.since_time)
        return out


def _flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("true", "1")


def _number(query: Mapping[str, str], name: str, *, minimum: int) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        value = int(str(raw))
    except ValueError as exc:
        raise InvalidInput(f"{name}: Invalid value: {raw!r}: must be an integer") from exc
    if value < minimum:
        raise InvalidInput(f"{name}: Invalid value: {value}: must be greater than or equal to {minimum}")
    return value


async def read(
    path: Path, options: LogOptions, *, running: Callable[[], bool], now: datetime | None = None
) -> AsyncIterator[bytes]:
    """The log as the client asked for it, in chunks; with ``follow``, until the container stops."""
    since = options.since_time
    if options.since_seconds is not None:
        since = (now or datetime.now(UTC)) - timedelta(seconds=options.since_seconds)
    budget = options.limit_bytes
    data = _read_from(path, 0)
    complete, offset = _complete_lines(data)
    records = [r for r in (parse_record(line) for line in complete) if r is not None]
    if options.tail_lines is not None:
        records = records[-options.tail_lines :] if options.tail_lines else []
    while True:
        out = _render(records, since, options.timestamps)
        if out:
            if budget is not None:
                out = out[:budget]
                budget -= len(out)
            yield out
            if budget is not None and budget <= 0:
                return
        if not options.follow:
            return
        alive = running()
        await asyncio.sleep(FOLLOW_POLL)
        data = _read_from(path, offset)
        complete, used = _complete_lines(data)
        offset += used
        records = [r for r in (parse_record(line) for line in complete) if r is not None]
        if not records and not alive:
            return


def _complete_lines(data: bytes) -> tuple[list[bytes], int]:
    end = data.rfind(b"\n")
    if end < 0:
        return [], 0
    return data[:end].split(b"\n"), end + 1


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read()
    except OSError:
        return b""


def _render(records: list[Record], since: datetime | None, stamps: bool) -> bytes:
    parts: list[Any] = []
    for record in records:
        if since is not None and record.time < since:
            continue
        if stamps:
            parts.append(record.stamp + b" ")
        parts.append(record.text)
    return b"".join(parts)
