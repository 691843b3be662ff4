"""Tar streams in and out (StageIn/StageOut) and the dptech fork's zip files.

Unpacking is where a hostile archive strikes: an entry named
``../../.ssh/authorized_keys``, an absolute path, a symlink pointing out of
the target followed by a file written through it, a device node. Tar
entries go through the standard library's ``data`` filter, which refuses
all of these (and its refusals become ``InvalidInput``); zip entries are
checked the same way. Packing streams a tar archive from a worker thread
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
    """Unpack a tar stream into ``dest`` safely; returns (regular files, their bytes).

    Every entry is checked before it is written, with the rules of the
    standard library's ``data`` filter (which only Python 3.11.4 and later
    have, while login nodes often run an older 3.11): names stay inside
    ``dest`` (a leading ``/`` is dropped, ``..`` and writes through links
    that point out are refused), links may only point inside, devices and
    fifos are refused, and owners and special mode bits are not restored.
    """
    files = 0
    size = 0
    root = os.path.realpath(dest)
    try:
        with tarfile.open(fileobj=source, mode="r|*") as archive:
            for member in archive:
                _check(stop)
                _check_member(member, root)
                _extract_member(archive, member, root)
                if member.isreg():
                    files += 1
                    size += member.size
    except tarfile.TarError as exc:
        raise InvalidInput(f"not a valid tar stream: {exc}") from exc
    return files, size


def _refuse(member: tarfile.TarInfo, why: str) -> InvalidInput:
    return InvalidInput(f"refused tar entry {member.name!r}: {why}")


def _inside(root: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


def _check_member(member: tarfile.TarInfo, root: str) -> None:
    """Refuse what would escape ``root`` or is not a plain file, directory or inner link."""
    if "\x00" in member.name or "\x00" in member.linkname:
        raise _refuse(member, "NUL in a name")
    member.name = member.name.lstrip("/")
    target = os.path.join(root, member.name)
    if not member.name or not _inside(root, target):
        raise _refuse(member, "it would be written outside the destination")
    if member.issym():
        if os.path.isabs(member.linkname):
            raise _refuse(member, "a link to an absolute path")
        if not _inside(root, os.path.join(os.path.dirname(target), member.linkname)):
            raise _refuse(member, "a link that points outside the destination")
    elif member.islnk():
        if os.path.isabs(member.linkname) or not _inside(root, os.path.join(root, member.linkname)):
            raise _refuse(member, "a hard link to a file outside the destination")
    elif not (member.isreg() or member.isdir()):
        raise _refuse(member, "devices, fifos and other special files are not accepted")


def _extract_member(archive: tarfile.TarFile, member: tarfile.TarInfo, root: str) -> None:
    if hasattr(tarfile, "fully_trusted_filter"):
        # Checked above already; the newer API only wants to be told so.
        archive.extract(member, root, set_attrs=False, filter="fully_trusted")
    else:
        archive.extract(member, root, set_attrs=False)
    if member.isreg():
        os.chmod(os.path.join(root, member.name), (member.mode & 0o755) | 0o600)


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
