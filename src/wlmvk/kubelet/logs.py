"""Container logs of a Slurm job: the query options and the byte stream.

The kubelet API's log query is parsed once into ``LogOptions`` (errors are
``InvalidInput``, answered 400). ``stream_logs`` then reads the job's stdout
through the backend: ``open_file`` for what is there now (cut to
``tailLines`` and ``limitBytes``), then, with ``follow``, ``tail_file`` from
that offset until the job has ended and its last bytes were drained.

Slurm output carries no per-line times: a line's time is when the kubelet
first saw it (job start for what was already written). ``sinceTime`` and
``sinceSeconds`` compare against that, and ``timestamps`` prints it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from wlmvk.core.backend import Backend
from wlmvk.core.errors import InvalidInput


@dataclass(frozen=True)
class LogOptions:
    follow: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since: datetime | None = None
    timestamps: bool = False


def _flag(query: Mapping[str, str], key: str) -> bool:
    value = query.get(key, "false").strip().lower()
    if value in ("", "true", "1", "yes"):
        return value != "" or key in query
    if value in ("false", "0", "no"):
        return False
    raise InvalidInput(f"{key}: not a boolean: {value!r}")


def _count(query: Mapping[str, str], key: str, *, minimum: int) -> int | None:
    if key not in query:
        return None
    try:
        value = int(query[key])
    except ValueError as exc:
        raise InvalidInput(f"{key}: not an integer: {query[key]!r}") from exc
    if value < minimum:
        raise InvalidInput(f"{key}: must be at least {minimum}")
    return value


def parse_options(query: Mapping[str, str], *, now: datetime) -> LogOptions:
    """The options of a ``/containerLogs`` query; ``previous`` and bad values raise InvalidInput."""
    if _flag(query, "previous"):
        raise InvalidInput("previous: a Slurm job is never restarted, there is no previous container")
    since: datetime | None = None
    seconds = _count(query, "sinceSeconds", minimum=1)
    if seconds is not None:
        since = now - timedelta(seconds=seconds)
    if "sinceTime" in query:
        if since is not None:
            raise InvalidInput("at most one of sinceTime or sinceSeconds may be set")
        try:
            since = datetime.fromisoformat(query["sinceTime"].replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInput(f"sinceTime: not an RFC 3339 time: {query['sinceTime']!r}") from exc
        if since.tzinfo is None:
            since = since.replace(tzinfo=UTC)
    return LogOptions(
        follow=_flag(query, "follow"),
        tail_lines=_count(query, "tailLines", minimum=0),
        limit_bytes=_count(query, "limitBytes", minimum=1),
        since=since,
        timestamps=_flag(query, "timestamps"),
    )


def last_lines(data: bytes, count: int) -> bytes:
    """The last ``count`` lines of ``data`` (a trailing partial line counts as one)."""
    if count == 0:
        return b""
    lines = data.splitlines(keepends=True)
    return b"".join(lines[-count:])


def stamp(data: bytes, moment: datetime) -> bytes:
    """Prefix each line with an RFC 3339 nano timestamp, as the kubelet does."""
    prefix = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z ").encode()
    return b"".join(prefix + line for line in data.splitlines(keepends=True))


@dataclass(frozen=True)
class LogSource:
    """Where a pod's log is and how to know it is complete."""

    path: str
    started: datetime | None
    # Resolves when the job ends (or at once when it has).
    wait_ended: Callable[[], Awaitable[object]]


async def stream_logs(
    backend: Backend,
    source: LogSource,
    options: LogOptions,
    *,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    drain: float = 1.0,
) -> AsyncIterator[bytes]:
    """The log bytes for ``options`` (see the module docstring); the first chunk may be empty."""
    budget = options.limit_bytes
    chunks = [chunk async for chunk in backend.open_file(source.path)]
    existing = b"".join(chunks)
    first_time = source.started or now()
    head = existing
    if options.since is not None and first_time < options.since:
        head = b""
    if options.tail_lines is not None:
        head = last_lines(head, options.tail_lines)
    if options.timestamps:
        head = stamp(head, first_time)
    if budget is not None:
        head = head[:budget]
        budget -= len(head)
    # Always yield first (even nothing): the server answers errors of the opening read
    # with an HTTP status, and starts the response once this arrives.
    yield head
    if not options.follow or (budget is not None and budget <= 0):
        return
    async for chunk in _follow(backend, source, skip=len(existing), drain=drain):
        out = stamp(chunk, now()) if options.timestamps else chunk
        if budget is not None:
            out = out[:budget]
            budget -= len(out)
        if out:
            yield out
        if budget is not None and budget <= 0:
            return


async def _follow(backend: Backend, source: LogSource, *, skip: int, drain: float) -> AsyncIterator[bytes]:
    """New bytes past ``skip`` until the job ended and ``drain`` seconds brought nothing more."""
    stream = backend.tail_file(source.path)
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async for chunk in stream:
                await queue.put(chunk)
        finally:
            await queue.put(None)

    pumping = asyncio.create_task(pump(), name=f"tail {source.path}")
    ending: asyncio.Future[object] = asyncio.ensure_future(source.wait_ended())
    pending = b""
    try:
        while True:
            chunk = await _next_chunk(queue, ending, drain)
            if chunk is None:
                if pumping.done() and not pumping.cancelled() and pumping.exception() is not None:
                    raise pumping.exception()  # type: ignore[misc]
                break
            if skip:
                cut = min(skip, len(chunk))
                skip -= cut
                chunk = chunk[cut:]
            # Hand out whole lines while following, so that timestamps stay per line.
            pending += chunk
            whole, sep, rest = pending.rpartition(b"\n")
            if sep:
                pending = rest
                yield whole + sep
        if pending:
            yield pending
    finally:
        ending.cancel()
        pumping.cancel()
        with contextlib.suppress(BaseException):
            await pumping
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(BaseException):
                await aclose()


async def _next_chunk(
    queue: asyncio.Queue[bytes | None], ending: asyncio.Future[object], drain: float
) -> bytes | None:
    """The next chunk; None when the stream ended, or the job ended and ``drain`` seconds were quiet."""
    while True:
        if ending.done():
            try:
                return await asyncio.wait_for(queue.get(), timeout=drain)
            except TimeoutError:
                return None
        getter: asyncio.Future[bytes | None] = asyncio.ensure_future(queue.get())
        waiters: set[asyncio.Future[Any]] = {getter, ending}
        try:
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not getter.done():
                getter.cancel()
        if getter in done:
            return getter.result()
