"""The bridge between tarfile's blocking file objects and the event loop: red-box's and staging's one way.

``tarfile`` reads and writes blocking file objects, so packing and unpacking run in a
thread and talk to the loop through a small bounded queue: a few chunks are in memory
whatever the size of the tree. Red-box (StageIn/StageOut, the dptech fork's zip files) and
staging (``wlmvk stage``) both stream tars this way; what they put in a tar (which entries,
whose owner) stays theirs, and what may come out of one is ``core.tarsafe``'s policy.

Every thread started here ends when its caller leaves (a client gone mid-call, a timeout):
``in_thread``'s work checks a stop event, the packer stops at its next chunk, an unpack's
archive is ended. Pool threads are few (cpus+4): one kept by each abandoned call would soon
hang every file rpc of red-box, so the packer has a thread of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import tarfile
import threading
from collections.abc import AsyncGenerator, AsyncIterable, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from wlmvk.core import tarsafe
from wlmvk.core.errors import NotFound

CHUNK = 256 * 1024
_DEPTH = 8  # chunks in flight between a thread and the loop

T = TypeVar("T")


async def in_thread(work: Callable[[threading.Event], T]) -> T:
    """Run ``work(stop)`` in a pool thread; a cancelled caller sets ``stop``, which ``work`` checks."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(work, stop)
    finally:
        stop.set()


# --- out: a tar written in a thread, read as chunks by the loop -------------------------------


class _QueueWriter:
    """A write-only file object for tarfile whose full chunks go on a bounded queue."""

    def __init__(self, chunks: queue.Queue[bytes | BaseException | None], stop: threading.Event) -> None:
        self._chunks = chunks
        self._stop = stop
        self._buffer = bytearray()

    def write(self, data: bytes) -> int:
        self._buffer += data
        while len(self._buffer) >= CHUNK:
            self.put(bytes(self._buffer[:CHUNK]))
            del self._buffer[:CHUNK]
        return len(data)

    def flush_chunk(self) -> None:
        if self._buffer:
            self.put(bytes(self._buffer))
            self._buffer.clear()

    def put(self, item: bytes | BaseException | None) -> None:
        while not self._stop.is_set():
            try:
                self._chunks.put(item, timeout=0.2)
                return
            except queue.Full:
                continue
        raise InterruptedError("the reader went away")


def _pack(add: Callable[[tarfile.TarFile], None], writer: _QueueWriter) -> None:
    try:
        with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as archive:  # type: ignore[call-overload]
            add(archive)
        writer.flush_chunk()
        writer.put(None)
    except InterruptedError:
        return
    except BaseException as exc:  # handed to the reader, raised there
        with contextlib.suppress(InterruptedError):
            writer.put(exc)


async def pack(add: Callable[[tarfile.TarFile], None]) -> AsyncGenerator[bytes, None]:
    """The tar stream that ``add(archive)`` writes, in chunks of at most ``CHUNK`` bytes.

    ``add`` runs in a thread of its own; what it raises is raised here. Close the stream
    (``contextlib.aclosing``) to stop the thread at its next chunk.
    """
    chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=_DEPTH)
    stop = threading.Event()
    worker = threading.Thread(target=_pack, args=(add, _QueueWriter(chunks, stop)), daemon=True)
    worker.start()
    try:
        while True:
            item = await asyncio.to_thread(chunks.get)
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        # A cancelled call leaves a pool thread blocked in ``chunks.get``: the packer
        # stops at its next put, and a last item, after the drain, releases that thread.
        stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                chunks.get_nowait()
        chunks.put_nowait(None)


# --- in: chunks from the loop, extracted in a thread ------------------------------------------


class _Reader:
    """A read-only file object for tarfile fed with chunks from the event loop."""

    def __init__(self, get: Callable[[], bytes | None]) -> None:
        self._get = get
        self._buffer = bytearray()
        self._eof = False

    def read(self, size: int = -1) -> bytes:
        while not self._eof and (size < 0 or len(self._buffer) < size):
            chunk = self._get()
            if chunk is None:
                self._eof = True
            else:
                self._buffer += chunk
        if size < 0:
            size = len(self._buffer)
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data


async def unpack(chunks: AsyncIterable[bytes], destination: Path) -> tarsafe.Totals:
    """Extract a tar stream under ``destination`` (which must exist) as it arrives. Raises InvalidInput.

    A pool thread extracts for as long as the stream lasts.
    """
    _must_be_directory(destination)
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[bytes | None] = asyncio.Queue(_DEPTH)

    def get() -> bytes | None:
        future: Future[bytes | None] = asyncio.run_coroutine_threadsafe(inbox.get(), loop)
        return future.result()

    worker = loop.run_in_executor(None, tarsafe.extract, _Reader(get), destination)
    try:
        async for chunk in chunks:
            if not chunk:
                continue
            if not await _feed(inbox, chunk, worker):
                break
        else:
            await _feed(inbox, None, worker)
        return await worker
    finally:
        if not worker.done():
            # The source failed or timed out midway: end the archive so the thread stops. The
            # queue is emptied first: with it full, the end would not fit and the thread would
            # wait for it for ever after reading what was queued.
            while not inbox.empty():
                inbox.get_nowait()
            inbox.put_nowait(None)
            with contextlib.suppress(Exception):
                await worker


def _must_be_directory(path: Path) -> None:
    if not path.is_dir():
        raise NotFound(f"{path} is not a directory")


async def _feed(inbox: asyncio.Queue[bytes | None], item: bytes | None, worker: asyncio.Future[Any]) -> bool:
    """Put ``item`` unless the worker has already stopped; False when it has."""
    put = asyncio.ensure_future(inbox.put(item))
    done, _ = await asyncio.wait({put, worker}, return_when=asyncio.FIRST_COMPLETED)
    if put in done:
        return True
    put.cancel()
    return False
