"""Tar streams in and out (StageIn/StageOut) and the dptech fork's zip files.

Tar entries go through ``core.tarsafe``, the one safe-extraction policy red-box and
staging share, which refuses hostile entries with ``InvalidInput``; zip entries are
checked for zip-slip. The threads behind the streams are ``core.tarstreams``' (the one
bridge between tarfile and the loop). An upload is spooled to disk before a pool
thread extracts it, unlike staging's streaming ``unpack``: red-box serves every client
from a pool of cpus+4 threads, and a slow client must hold none of them.
"""

from __future__ import annotations

import contextlib
import os
import tarfile
import tempfile
import threading
import zipfile
from collections.abc import AsyncGenerator, AsyncIterable
from pathlib import Path
from typing import IO

from wlmvk.core import tarsafe, tarstreams
from wlmvk.core.errors import InvalidInput, NotFound


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
        return await tarstreams.in_thread(lambda stop: extract_tar(spool, dest, stop))


# --- tar out ------------------------------------------------------------------------------


async def send_tar(path: Path, arcname: str) -> AsyncGenerator[bytes, None]:
    """A tar stream of ``path`` (file or directory) whose top entry is ``arcname``.

    Close it (``contextlib.aclosing``) to stop its thread.
    """

    def add(archive: tarfile.TarFile) -> None:
        archive.add(path, arcname=arcname, recursive=True)

    async with contextlib.aclosing(tarstreams.pack(add)) as chunks:
        try:
            async for chunk in chunks:
                yield chunk
        except OSError as exc:
            raise InvalidInput(f"{path}: {exc}") from exc


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
