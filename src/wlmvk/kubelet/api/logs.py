"""Container logs of a Slurm job: the query options and the byte stream.

The kubelet API's log query is parsed once into ``LogOptions`` (errors are
``InvalidInput``, answered 400). ``stream_logs`` then reads the job's stdout
through the backend: ``open_file`` for what is there now (cut to
``tailLines`` and ``limitBytes``), then, with ``follow``, ``tail_file`` from
that offset until the job has ended and its last bytes were drained.

One pod's log must not take the kubelet's memory, whatever its size or shape:
the output streams through chunk by chunk; ``limitBytes`` stops the reading
once met; ``tailLines`` keeps a ring of the last lines (or, for a tail longer
than ``TAIL_RING_BYTES``, counts lines in a first pass and skips them in a
second); lines are cut at ``loglines.MAX_LINE``; the follow queue is bounded.
red-box's ``OpenFile`` has no offset, so a tail still reads the file from
its start (at red-box's pace, in bounded memory) instead of seeking to its end.

Following survives red-box going away (killed, restarted, its SSH forward cut): the
file is still there, as a container's log file is still on the node when its runtime
restarts, so the kubelet reconnects with backoff and resumes at the byte it had reached;
a follower sees each line once, in order. While red-box is away the job's end cannot
end the follow (its last lines are yet to come); after ``RESUME_LIMIT`` seconds without
red-box the follow ends with the error.

Slurm output carries no per-line times: a line's time is when the kubelet
first saw it (job start for what was already written). ``sinceTime`` and
``sinceSeconds`` compare against that, and ``timestamps`` prints it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from wlmvk.core.backend import Backend
from wlmvk.core.errors import InvalidInput, Unavailable
from wlmvk.kube import times
from wlmvk.kubelet.api.loglines import MAX_LINE, LineCutter, stamp_pieces


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
            since = times.parse(query["sinceTime"])
        except ValueError as exc:
            raise InvalidInput(f"sinceTime: not an RFC 3339 time: {query['sinceTime']!r}") from exc
    return LogOptions(
        follow=_flag(query, "follow"),
        tail_lines=_count(query, "tailLines", minimum=0),
        limit_bytes=_count(query, "limitBytes", minimum=1),
        since=since,
        timestamps=_flag(query, "timestamps"),
    )


@dataclass(frozen=True)
class LogSource:
    """Where a pod's log is and how to know it is complete."""

    path: str
    started: datetime | None
    # Resolves when the job ends (or at once when it has).
    wait_ended: Callable[[], Awaitable[object]]


# Chunks (256 KiB each from red-box) read ahead of a slow reader while following.
FOLLOW_QUEUE = 4
# Reconnecting a follow after red-box went away: first delay, longest delay, and how long
# red-box may stay away before the follow ends with the error.
RESUME_FIRST = 0.2
RESUME_MAX = 5.0
RESUME_LIMIT = 300.0
# A tail of up to this many bytes of pieces is kept in one pass; a longer one is
# found by counting the pieces first, then reading again past those not wanted.
TAIL_RING_BYTES = 8 * 1024 * 1024


@dataclass
class _Reading:
    """What reading the existing output found: its size, where following starts."""

    size: int = 0


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
    reading = _Reading()
    # Always yield first (even nothing): the server answers errors of the opening read
    # with an HTTP status, and starts the response once this arrives.
    first = True
    async with contextlib.aclosing(_head(backend, source, options, reading, now)) as head:
        async for out in head:
            if budget is not None:
                out = out[:budget]
                budget -= len(out)
            if out or first:
                first = False
                yield out
            if budget is not None and budget <= 0:
                return
    if first:
        yield b""
    if not options.follow:
        return
    async with contextlib.aclosing(_follow(backend, source, skip=reading.size, drain=drain)) as tail:
        async for chunk in tail:
            out = stamp_pieces(chunk, now()) if options.timestamps else b"".join(chunk)
            if budget is not None:
                out = out[:budget]
                budget -= len(out)
            if out:
                yield out
            if budget is not None and budget <= 0:
                return


async def _chunks(
    backend: Backend, path: str, reading: _Reading, *, stop_at: int | None = None
) -> AsyncGenerator[bytes, None]:
    """The file's chunks as they come (``stop_at``: no byte past it); counts ``reading.size``."""
    stream = backend.open_file(path)
    try:
        async for chunk in stream:
            if stop_at is not None:
                chunk = chunk[: max(0, stop_at - reading.size)]
            reading.size += len(chunk)
            if chunk:
                yield chunk
            if stop_at is not None and reading.size >= stop_at:
                return
    finally:
        await _close(stream)


async def _head(
    backend: Backend,
    source: LogSource,
    options: LogOptions,
    reading: _Reading,
    now: Callable[[], datetime],
) -> AsyncGenerator[bytes, None]:
    """The output already written, as ``options`` want it, read with bounded memory."""
    moment = source.started or now()
    hidden = options.since is not None and moment < options.since
    chunks = _chunks(backend, source.path, reading)
    async with contextlib.aclosing(chunks):
        if hidden or options.tail_lines == 0:
            # Nothing to show; read on only to learn where following starts.
            async for _ in chunks:
                if not options.follow:
                    return
            return
        if options.tail_lines is not None:
            async for out in _tail(backend, source.path, chunks, reading, options.tail_lines):
                yield stamp_pieces(out, moment) if options.timestamps else b"".join(out)
            return
        if not options.timestamps:
            async for chunk in chunks:
                yield chunk
            return
        cutter = LineCutter()
        async for chunk in chunks:
            yield stamp_pieces(cutter.feed(chunk), moment)
        yield stamp_pieces(cutter.finish(), moment)


async def _tail(
    backend: Backend, path: str, chunks: AsyncIterator[bytes], reading: _Reading, count: int
) -> AsyncGenerator[list[bytes], None]:
    """Groups of the last ``count`` pieces of the file, holding at most ``TAIL_RING_BYTES`` or so."""
    cutter = LineCutter()
    if count * (MAX_LINE + 1) <= TAIL_RING_BYTES:
        ring: collections.deque[bytes] = collections.deque(maxlen=count)
        async for chunk in chunks:
            ring.extend(cutter.feed(chunk))
        ring.extend(cutter.finish())
        yield list(ring)
        return
    total = 0
    async for chunk in chunks:
        total += len(cutter.feed(chunk))
    total += len(cutter.finish())
    # Second pass up to the size the first one saw; following starts there.
    skip, size = max(0, total - count), reading.size
    again = _Reading()
    async with contextlib.aclosing(_chunks(backend, path, again, stop_at=size)) as second:
        async for chunk in second:
            pieces = cutter.feed(chunk)
            dropped = min(skip, len(pieces))
            skip -= dropped
            if pieces[dropped:]:
                yield pieces[dropped:]
    last = cutter.finish()
    if last and not skip:
        yield last


async def _close(stream: AsyncIterator[bytes]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(BaseException):
            await aclose()


async def _follow(
    backend: Backend, source: LogSource, *, skip: int, drain: float
) -> AsyncGenerator[list[bytes], None]:
    """Groups of new pieces past ``skip`` until the job ended and ``drain`` seconds brought nothing more.

    Pieces are whole lines (or ``MAX_LINE`` runs) while following, so that
    timestamps stay per line; the queue between red-box's stream and the reader
    is bounded, so a slow reader slows the stream instead of filling memory.
    """
    queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=FOLLOW_QUEUE)
    # Set while red-box is known to answer: only then may the job's end and a quiet drain end this.
    connected = asyncio.Event()
    connected.set()

    async def pump() -> None:
        # red-box's TailFile streams the file from its start: each stream's first
        # ``received`` bytes were handed on already (or were the head), only what follows is new.
        received, delay, away_since = skip, RESUME_FIRST, 0.0
        loop = asyncio.get_running_loop()
        while True:
            try:
                if not connected.is_set():
                    # A stream says nothing until the file grows: ask red-box something it answers.
                    await backend.partitions()
                    connected.set()
                stream = backend.tail_file(source.path)
                position = 0
                try:
                    async for chunk in stream:
                        delay, away_since = RESUME_FIRST, 0.0
                        new = chunk[max(0, received - position) :]
                        position += len(chunk)
                        if new:
                            received += len(new)
                            await queue.put(new)
                finally:
                    await _close(stream)
                return
            except Unavailable:
                connected.clear()
                away_since = away_since or loop.time()
                if loop.time() - away_since > RESUME_LIMIT:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESUME_MAX)

    pumping = asyncio.create_task(pump(), name=f"tail {source.path}")
    ending: asyncio.Future[object] = asyncio.ensure_future(source.wait_ended())
    cutter = LineCutter()
    try:
        while True:
            chunk = await _next_chunk(queue, pumping, ending, drain, connected)
            if chunk is None:
                break
            pieces = cutter.feed(chunk)
            if pieces:
                yield pieces
        last = cutter.finish()
        if last:
            yield last
    finally:
        ending.cancel()
        pumping.cancel()
        with contextlib.suppress(BaseException):
            await pumping


async def _next_chunk(
    queue: asyncio.Queue[bytes],
    pumping: asyncio.Task[None],
    ending: asyncio.Future[object],
    drain: float,
    connected: asyncio.Event,
) -> bytes | None:
    """The next chunk; None when the stream ended, or the job ended and ``drain`` seconds were quiet
    with red-box connected (while it is away, the job's last lines may still be to come)."""
    while True:
        if not queue.empty():
            return queue.get_nowait()
        if pumping.done():
            if not pumping.cancelled() and (error := pumping.exception()) is not None:
                raise error
            return None
        getter: asyncio.Future[bytes] = asyncio.ensure_future(queue.get())
        waiters: set[asyncio.Future[Any]] = {getter, pumping}
        if not ending.done():
            waiters.add(ending)
        reconnecting: asyncio.Future[Any] | None = None
        quiet = ending.done() and connected.is_set()
        if ending.done() and not connected.is_set():
            reconnecting = asyncio.ensure_future(connected.wait())
            waiters.add(reconnecting)
        try:
            done, _ = await asyncio.wait(
                waiters, timeout=drain if quiet else None, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in (getter, reconnecting):
                if waiter is not None and not waiter.done():
                    waiter.cancel()
        if getter in done:
            return getter.result()
        if not done:
            return None
