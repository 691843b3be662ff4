"""Confined file access: every path a client names must stay inside the allowed roots.

red-box reads and writes as the job owner, so a client that could name any
path could read the owner's keys. Paths are resolved the way the kernel will
see them (relative ones against the working root, symlinks followed with
``realpath``) and must end inside the working root or an ``--allow-root``.
``..`` and symlinks that lead out, and absolute paths elsewhere, are refused
with ``InvalidInput``; so are symlink loops and names the kernel finds too
long. Only regular files are read or written: a FIFO would block red-box on
``open`` and a device would stream forever, so special files are refused too,
and files are opened non-blocking and checked once open (no race with a swap).
This module also reads files whole (OpenFile) and follows growing ones (TailFile).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from wlmvk.core.errors import InvalidInput, NotFound

CHUNK = 64 * 1024
TAIL_INTERVAL = 0.1


class Confinement:
    """Resolves client paths against the working root and checks them against the roots."""

    def __init__(self, work_dir: Path, roots: Sequence[Path]) -> None:
        self.work_dir = Path(os.path.realpath(work_dir))
        self.roots = tuple(Path(os.path.realpath(r)) for r in roots) or (self.work_dir,)
        self._below_root_allowed = self.inside(self.work_dir)

    def inside(self, real: Path) -> bool:
        return any(real == root or root in real.parents for root in self.roots)

    def resolve(self, path: str, *, base: Path | None = None) -> Path:
        """The real path a client means; InvalidInput when it leads outside the roots."""
        if not path or "\x00" in path:
            raise InvalidInput("a path is required")
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = (base or self.work_dir) / candidate
        real = _real(path, candidate)
        if not self.inside(real):
            raise InvalidInput(f"{path}: outside the allowed roots ({', '.join(map(str, self.roots))})")
        return real

    def existing_file(self, path: str) -> Path:
        real = self.resolve(path)
        if not real.exists():
            raise NotFound(f"{path}: no such file")
        if real.is_dir():
            raise InvalidInput(f"{path}: is a directory")
        refuse_special(real, path)
        return real

    def directory(self, path: str, *, create: bool) -> Path:
        """A directory inside the roots, created (with parents) when asked."""
        if path == ".":
            # The working root itself, resolved and checked at start: every submission
            # without a working directory names it, so it is not resolved again each time.
            return self.work_dir
        if create and (made := self._made_below_root(path)) is not None:
            return made
        real = self.resolve(path)
        if create:
            try:
                real.mkdir(parents=True, exist_ok=True)
            except FileExistsError as exc:
                raise InvalidInput(f"{path}: exists and is not a directory") from exc
            except OSError as exc:
                raise InvalidInput(f"{path}: cannot create: {exc.strerror}") from exc
            # mkdir may have followed a symlink created meanwhile: check again.
            real = self.resolve(str(real))
        elif not real.is_dir():
            raise NotFound(f"{path}: no such directory")
        return real

    def _made_below_root(self, path: str) -> Path | None:
        """The directory ``path`` names plainly below the working root, made (with parents)
        without following any symlink: one mkdir and one open per component, each relative
        to the directory opened before it, from the root's own. The kubelet names a new
        directory of this shape for every pod; resolving it by name, before and after making
        it, walked every component of the path three times (0.4 ms per submission here).

        None when ``path`` is not plainly below the root (absolute elsewhere, ``..``, ``.``,
        empty components) or a component is a symlink or not a directory: the general way
        (``resolve``) then decides, and gives the error.
        """
        parts = plain_parts(path, self.work_dir)
        if not parts or not self._below_root_allowed:
            return None
        if len(str(self.work_dir)) + len(parts) + sum(map(len, parts)) >= _PATH_MAX:
            return None  # each name is short, but no program could name the whole: refused the general way
        try:
            at = os.open(self.work_dir, _DIRECTORY)
        except OSError:
            return None
        try:
            for name in parts:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=at)
                below = os.open(name, _DIRECTORY | os.O_NOFOLLOW, dir_fd=at)
                os.close(at)
                at = below
        except OSError:
            return None
        finally:
            os.close(at)
        return self.work_dir.joinpath(*parts)


_PATH_MAX = 4096
"""Linux's longest path name, its terminating NUL included (``PATH_MAX``)."""

_DIRECTORY = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY
"""How a directory is opened only to name others relative to it (``O_PATH``: no read right needed)."""


def plain_parts(path: str, root: Path) -> tuple[str, ...]:
    """The components of ``path`` below ``root`` when it names a place plainly below it
    (relative, or absolute under ``root``; no ``.``, ``..`` or empty component); else ()."""
    if "\x00" in path:
        return ()
    rest = path
    if path.startswith("/"):
        prefix = str(root).rstrip("/") + "/"
        if not path.startswith(prefix):
            return ()
        rest = path[len(prefix) :]
    parts = tuple(rest.split("/"))
    if any(part in ("", ".", "..") for part in parts):
        return ()
    return parts


def _real(given: str, candidate: Path) -> Path:
    """realpath, with loops and over-long names refused (a missing tail is fine: it may be created)."""
    try:
        return Path(os.path.realpath(candidate, strict=True))
    except (FileNotFoundError, NotADirectoryError):
        return Path(os.path.realpath(candidate))
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENAMETOOLONG):
            raise InvalidInput(f"{given[:200]}: {os.strerror(exc.errno)}") from exc
        raise InvalidInput(f"{given[:200]}: {exc.strerror}") from exc


def refuse_special(real: Path, given: str) -> None:
    """InvalidInput when ``real`` exists and is neither a regular file nor a directory."""
    try:
        mode = real.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InvalidInput(f"{given}: {exc.strerror}") from exc
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InvalidInput(f"{given}: not a regular file (FIFOs, sockets and devices are refused)")


def _opened_regular(fd: int, path: Path) -> int:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InvalidInput(f"{path}: not a regular file (FIFOs, sockets and devices are refused)")
    os.set_blocking(fd, True)
    return fd


def open_for_reading(path: Path) -> int:
    """A descriptor of a regular file; never blocks on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise NotFound(f"{path}: no such file") from exc
    except OSError as exc:
        raise InvalidInput(f"{path}: {exc.strerror}") from exc
    return _opened_regular(fd, path)


def open_for_writing(path: Path) -> int:
    """A descriptor of a regular file created or truncated; never a FIFO, never through a final symlink."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise InvalidInput(f"{path}: {exc.strerror}") from exc
    return _opened_regular(fd, path)


async def read_chunks(path: Path, chunk: int = CHUNK) -> AsyncIterator[bytes]:
    """The whole file as it is now, in chunks."""
    handle = os.fdopen(open_for_reading(path), "rb")
    with handle:
        while data := handle.read(chunk):
            yield data
            await asyncio.sleep(0)


async def follow(path: Path, stop: asyncio.Event, *, interval: float = TAIL_INTERVAL) -> AsyncIterator[bytes]:
    """The file from its start, then new bytes as they are written, until ``stop`` is set.

    A file that does not exist yet is waited for (a job's output appears
    when the job starts). After ``stop`` the rest of the file is sent and the
    stream ends. A truncated file is followed from its new start.
    """
    offset = 0
    while True:
        stopping = stop.is_set()
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            size = -1
        if size >= 0:
            if size < offset:
                offset = 0
            if size > offset:
                with os.fdopen(open_for_reading(path), "rb") as handle:
                    handle.seek(offset)
                    while data := handle.read(CHUNK):
                        offset += len(data)
                        yield data
        if stopping:
            return
        try:
            await asyncio.wait_for(stop.wait(), interval)
        except TimeoutError:
            pass
