"""Tar streams of a local tree, and their safe extraction, in bounded memory.

``pack`` turns a directory (or file) into a stream of tar chunks; ``unpack``
writes a stream of tar chunks under a directory. ``tarfile`` works on
blocking file objects, so it runs in a worker thread and talks to the event
loop through a small bounded queue: at most a few chunks are in memory,
whatever the size of the tree.

Extraction trusts nothing in the archive. Only regular files and
directories are written; absolute names, ``..``, links, devices and FIFOs
are refused with ``InvalidInput``. Paths are walked one component at a time
with ``O_NOFOLLOW`` directory descriptors, so a symlink already present in
the destination cannot redirect a write outside it. Files are created by
this process, so they belong to its UID/GID; modes keep only the permission
bits.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import stat
import tarfile
from collections.abc import AsyncIterable, AsyncIterator, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wlmvk.core.errors import InvalidInput, NotFound

CHUNK = 256 * 1024
_DEPTH = 4  # chunks in flight between the thread and the loop


@dataclass(frozen=True)
class Totals:
    files: int
    bytes: int


class _End:
    pass


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

    def put(item: bytes | _End | BaseException) -> None:
        asyncio.run_coroutine_threadsafe(queue.put(item), loop).result()

    def produce() -> None:
        try:
            writer = _Writer(put)
            with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as archive:  # type: ignore[call-overload]
                _add_tree(archive, source)
            writer.flush()
            put(_END)
        except BaseException as exc:  # handed to the consumer, which raises it
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
        # Unblock a producer still waiting to put, then wait for it.
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

    worker = loop.run_in_executor(None, _extract, _Reader(get), destination)
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
            # The source failed midway: end the archive so the thread stops.
            with contextlib.suppress(asyncio.QueueFull):
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


def _extract(reader: _Reader, destination: Path) -> Totals:
    files = size = 0
    root = os.open(destination, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with tarfile.open(fileobj=reader, mode="r|") as archive:  # type: ignore[call-overload]
            for member in archive:
                parts = _parts(member.name)
                if member.isdir():
                    if parts:
                        os.close(_directory(root, parts))
                    continue
                if not member.isfile():
                    raise InvalidInput(f"{member.name}: links and special files are not accepted")
                if not parts:
                    raise InvalidInput(f"{member.name!r} is not a file name")
                source = archive.extractfile(member)
                assert source is not None
                size += _write(root, parts, source, member.mode)
                files += 1
    except tarfile.TarError as exc:
        raise InvalidInput(f"not a valid tar stream: {exc}") from exc
    finally:
        os.close(root)
    return Totals(files, size)


def _parts(name: str) -> list[str]:
    if name.startswith("/") or "\x00" in name:
        raise InvalidInput(f"{name!r}: absolute names are not accepted")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise InvalidInput(f"{name!r}: '..' would escape the destination")
    return parts


def _directory(root: int, parts: list[str]) -> int:
    """A descriptor of ``root/parts...``, creating directories, never following a link."""
    fd = os.dup(root)
    for part in parts:
        try:
            os.mkdir(part, 0o755, dir_fd=fd)
        except FileExistsError:
            pass
        try:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as exc:
            os.close(fd)
            raise InvalidInput(f"{'/'.join(parts)}: {part} is not a directory here ({exc.strerror})") from exc
        os.close(fd)
        fd = child
    return fd


def _write(root: int, parts: list[str], source: Any, mode: int) -> int:
    parent = _directory(root, parts[:-1])
    try:
        name = parts[-1]
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            if stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode):
                os.unlink(name, dir_fd=parent)  # replace a link, never write through it
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        try:
            fd = os.open(name, flags, (mode & 0o777) or 0o644, dir_fd=parent)
        except OSError as exc:
            raise InvalidInput(f"{'/'.join(parts)}: cannot write ({exc.strerror})") from exc
        written = 0
        with os.fdopen(fd, "wb") as target:
            while block := source.read(CHUNK):
                target.write(block)
                written += len(block)
        return written
    finally:
        os.close(parent)
