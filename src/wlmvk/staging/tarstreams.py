"""Tar streams of a local tree, and their safe extraction, in bounded memory.

``pack`` turns a directory (or file) into a stream of tar chunks; ``unpack``
writes a stream of tar chunks under a directory. ``tarfile`` works on
blocking file objects, so it runs in a worker thread and talks to the event
loop through a small bounded queue: at most a few chunks are in memory,
whatever the size of the tree.

Extraction trusts nothing in the archive: it follows ``core.tarsafe``, the one
safe-extraction policy red-box's StageIn shares (relative names without ``..``,
no write through any symlink, links kept only when they stay inside, no
special files; files belong to this process).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import stat
import tarfile
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from wlmvk.core import tarsafe
from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk.core.tarsafe import Totals as Totals  # what unpack returns

CHUNK = 256 * 1024
_DEPTH = 4  # chunks in flight between the thread and the loop


class _End:
    pass


class _Stopped(Exception):
    """The consumer left (a timeout, a failed upload): the producer thread ends at its next chunk."""


_END = _End()


class _Writer:
    """A write-only file object for tarfile that hands full chunks to the event loop."""

    def __init__(self, put: Callable[[bytes | _End | BaseException], None]) -> None:
        self._put = put
        self._buffer = bytearray()

    def write(self, data: bytes) -> int:
        self._buffer += data
        while len(self._buffer) >= CHUNK:
            self._put(bytes(self._buffer[:CHUNK]))
            del self._buffer[:CHUNK]
        return len(data)

    def flush(self) -> None:
        if self._buffer:
            self._put(bytes(self._buffer))
            self._buffer.clear()


async def pack(source: Path) -> AsyncIterator[bytes]:
    """A tar stream of ``source`` (a directory or a file), named by its base name.

    Symlinks and special files in the tree are skipped: only what is really
    in the volume is uploaded.
    """
    _must_exist(source)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | _End | BaseException] = asyncio.Queue(_DEPTH)
    stop = threading.Event()

    def put(item: bytes | _End | BaseException) -> None:
        if stop.is_set():
            raise _Stopped
        asyncio.run_coroutine_threadsafe(queue.put(item), loop).result()

    def produce() -> None:
        try:
            writer = _Writer(put)
            with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as archive:  # type: ignore[call-overload]
                _add_tree(archive, source)
            writer.flush()
            put(_END)
        except _Stopped:
            return
        except BaseException as exc:  # handed to the consumer, which raises it
            with contextlib.suppress(_Stopped):
                put(exc)

    worker = loop.run_in_executor(None, produce)
    try:
        while True:
            item = await queue.get()
            if isinstance(item, _End):
                break
            if isinstance(item, BaseException):
                raise InvalidInput(f"cannot read {source}: {item}") from item
            yield item
    finally:
        # Without the stop the thread would read the rest of the tree first: a --timeout or a
        # failed upload would wait for every byte of the volume. Unblock its put, then wait.
        stop.set()
        while not worker.done():
            with contextlib.suppress(asyncio.QueueEmpty):
                queue.get_nowait()
            await asyncio.sleep(0.01)


def _must_exist(path: Path) -> None:
    if not path.exists():
        raise NotFound(f"{path} does not exist")


def _must_be_directory(path: Path) -> None:
    if not path.is_dir():
        raise NotFound(f"{path} is not a directory")


def _add_tree(archive: tarfile.TarFile, source: Path) -> None:
    base = source.name or "."
    if source.is_file():
        _add(archive, source, base)
        return
    _add(archive, source, base)
    for directory, subdirs, files in os.walk(source, followlinks=False, onerror=_unreadable):
        subdirs.sort()
        relative = os.path.relpath(directory, source)
        for name in [*sorted(subdirs), *sorted(files)]:
            path = Path(directory, name)
            arcname = posixpath.normpath(posixpath.join(base, relative, name))
            _add(archive, path, arcname)


def _unreadable(error: OSError) -> None:
    """A directory that cannot be listed fails the upload: silently leaving it out would lose data."""
    raise error


def _add(archive: tarfile.TarFile, path: Path, arcname: str) -> None:
    info = path.lstat()
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        return
    member = archive.gettarinfo(str(path), arcname=arcname)
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    if member.isfile():
        with path.open("rb") as handle:
            archive.addfile(member, handle)
    else:
        archive.addfile(member)


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


async def unpack(chunks: AsyncIterable[bytes], destination: Path) -> Totals:
    """Extract a tar stream under ``destination`` (which must exist). Raises InvalidInput."""
    _must_be_directory(destination)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue(_DEPTH)

    def get() -> bytes | None:
        future: Future[bytes | None] = asyncio.run_coroutine_threadsafe(queue.get(), loop)
        return future.result()

    worker = loop.run_in_executor(None, tarsafe.extract, _Reader(get), destination)
    try:
        async for chunk in chunks:
            if not chunk:
                continue
            if not await _feed(queue, chunk, worker):
                break
        else:
            await _feed(queue, None, worker)
        return await worker
    finally:
        if not worker.done():
            # The source failed or timed out midway: end the archive so the thread stops. The
            # queue is emptied first: with it full, the end would not fit and the thread would
            # wait for it for ever after reading what was queued.
            while not queue.empty():
                queue.get_nowait()
            queue.put_nowait(None)
            with contextlib.suppress(Exception):
                await worker


async def _feed(queue: asyncio.Queue[bytes | None], item: bytes | None, worker: asyncio.Future[Any]) -> bool:
    """Put ``item`` unless the worker has already stopped; False when it has."""
    put = asyncio.ensure_future(queue.put(item))
    done, _ = await asyncio.wait({put, worker}, return_when=asyncio.FIRST_COMPLETED)
    if put in done:
        return True
    put.cancel()
    return False
