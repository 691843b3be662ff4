"""Tar streams in and out (StageIn/StageOut) and the dptech fork's zip files.

Unpacking is where a hostile archive strikes: an entry named
``../../.ssh/authorized_keys``, an absolute path, a symlink pointing out of
the target followed by a file written through it, a device node. Tar
entries go through ``core.tarsafe``, the one policy red-box and staging
share, which refuses all of these with ``InvalidInput``; zip entries are
checked for zip-slip. Packing streams a tar archive from a worker thread
through a small bounded queue, so a large result directory is never held
in memory.

Every thread started here ends when its caller is cancelled (a client gone
mid-call): the workers check a stop event between entries (``in_thread``),
and the packer's reader is released. The pool has only cpus+4 threads: one
kept by each cancelled call would soon hang every file rpc of red-box.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import queue
import tarfile
import tempfile
import threading
import zipfile
from collections.abc import AsyncGenerator, AsyncIterable, Callable
from pathlib import Path
from typing import IO, TypeVar

from wlmvk.core import tarsafe
from wlmvk.core.errors import InvalidInput, NotFound

CHUNK = 256 * 1024

T = TypeVar("T")


async def in_thread(work: Callable[[threading.Event], T]) -> T:
    """Run ``work(stop)`` in a pool thread; a cancelled caller sets ``stop``, which ``work`` checks."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(work, stop)
    finally:
        stop.set()


def _check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise InterruptedError("the caller went away")


# --- tar in -------------------------------------------------------------------------------


def extract_tar(source: IO[bytes], dest: Path, stop: threading.Event | None = None) -> tuple[int, int]:
    """Unpack a tar stream into ``dest`` with the one safe-extraction policy (``core.tarsafe``).

    Returns (regular files, their bytes).
    """
    totals = tarsafe.extract(source, dest, stopped=stop.is_set if stop is not None else lambda: False)
    return totals.files, totals.bytes


async def receive_tar(chunks: AsyncIterable[bytes], dest: Path) -> tuple[int, int]:
    """Spool an incoming tar stream to an unnamed temporary file next to ``dest``, then unpack it."""
    with tempfile.TemporaryFile(dir=dest) as spool:
        async for chunk in chunks:
            spool.write(chunk)
        spool.seek(0)
        return await in_thread(lambda stop: extract_tar(spool, dest, stop))


# --- tar out ------------------------------------------------------------------------------


class _QueueWriter(io.RawIOBase):
    """A file object whose writes become chunks on a bounded queue (consumer in asyncio)."""

    def __init__(self, chunks: queue.Queue[bytes | BaseException | None], stop: threading.Event) -> None:
        self._chunks = chunks
        self._stop = stop
        self._buffer = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self._buffer.extend(data)
        if len(self._buffer) >= CHUNK:
            self.flush_chunk()
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


def _pack(path: Path, arcname: str, writer: _QueueWriter) -> None:
    try:
        with tarfile.open(fileobj=writer, mode="w|") as archive:
            archive.add(path, arcname=arcname, recursive=True)
        writer.flush_chunk()
        writer.put(None)
    except InterruptedError:
        return
    except BaseException as exc:  # handed to the consumer, re-raised there
        with contextlib.suppress(InterruptedError):
            writer.put(exc)


async def send_tar(path: Path, arcname: str) -> AsyncGenerator[bytes, None]:
    """A tar stream of ``path`` (file or directory) whose top entry is ``arcname``."""
    chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=8)
    stop = threading.Event()
    worker = threading.Thread(target=_pack, args=(path, arcname, _QueueWriter(chunks, stop)), daemon=True)
    worker.start()
    try:
        while True:
            item = await asyncio.to_thread(chunks.get)
            if item is None:
                return
            if isinstance(item, BaseException):
                if isinstance(item, OSError):
                    raise InvalidInput(f"{path}: {item}") from item
                raise item
            yield item
    finally:
        # A cancelled call leaves a pool thread blocked in ``chunks.get``: the packer
        # stops at its next put, and a last item, after the drain, releases that thread
        # (else each cancelled StageOut would keep one of the few pool threads for good).
        stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                chunks.get_nowait()
        chunks.put_nowait(None)


# --- the dptech fork's zip rpcs -----------------------------------------------------------


def zip_path(path: Path, target: Path, stop: threading.Event | None = None) -> None:
    """Zip a file or directory; entry names are relative to its parent (``bar/x``), dirs end in ``/``."""
    if not path.exists():
        raise NotFound(f"{path}: no such file or directory")
    base = path.parent
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            if path.is_file():
                archive.write(path, path.name)
                return
            for root, dirs, files in os.walk(path):
                here = Path(root)
                archive.write(here, here.relative_to(base).as_posix() + "/")
                dirs.sort()
                for name in sorted(files):
                    _check(stop)
                    entry = here / name
                    if entry.is_file() and not entry.is_symlink():
                        archive.write(entry, entry.relative_to(base).as_posix())
    except InterruptedError:
        target.unlink(missing_ok=True)  # nobody waits for a half-written zip
        raise


def unzip_into(source: Path, dest: Path, stop: threading.Event | None = None) -> None:
    """Extract a zip into ``dest``; an entry that would land outside it is refused (zip-slip)."""
    if not source.is_file():
        raise NotFound(f"{source}: no such file")
    dest.mkdir(parents=True, exist_ok=True)
    real_dest = Path(os.path.realpath(dest))
    try:
        archive = zipfile.ZipFile(source)
    except zipfile.BadZipFile as exc:
        raise InvalidInput(f"{source}: not a zip file") from exc
    with archive:
        for info in archive.infolist():
            name = info.filename
            target = Path(os.path.realpath(real_dest / name))
            if name.startswith("/") or (target != real_dest and real_dest not in target.parents):
                raise InvalidInput(f"refused zip entry {name!r}: it leads outside {dest}")
        for info in archive.infolist():
            _check(stop)
            archive.extract(info, real_dest)
