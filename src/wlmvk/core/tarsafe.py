"""Safe extraction of an untrusted tar stream: one policy for red-box's StageIn and staging's uploads.

Unpacking is where a hostile archive strikes: ``../../.ssh/authorized_keys``, an absolute
name, a link pointing out followed by a file written through it, a link already in the
destination, a device node. The policy, the stricter of the two the project had:

- names are relative, without NUL and without any ``..`` component (refused, not rewritten);
- directories and files are reached one component at a time with ``O_NOFOLLOW`` directory
  descriptors, so no write ever goes through a symlink, whether the archive brought it or
  it was in the destination already; a symlink where a file is written is replaced;
- a symlink entry is kept as a link when it stays inside: a relative target that does not
  climb above the destination from the link's directory; once the whole archive is written,
  every link it created must still resolve inside (chains of links are judged in the final
  tree), else they are all removed and the archive refused;
- a hard link may only name a regular file the archive already put inside;
- devices, FIFOs and other special files are refused;
- files belong to the extracting process; their mode keeps the owner's rw and at most r-x
  for group and others (no set-id, sticky or group/other write bits).

Every refusal is ``InvalidInput`` naming the entry. Blocking work: callers run it in a
thread and may pass ``stopped`` to end it between entries (raises ``InterruptedError``).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from wlmvk.core.errors import InvalidInput

CHUNK = 256 * 1024


@dataclass(frozen=True)
class Totals:
    """What an extraction wrote: regular files and their bytes."""

    files: int
    bytes: int


class Readable(Protocol):
    """What a streamed tar is read from: a file, or a reader fed by the event loop."""

    def read(self, size: int = -1, /) -> bytes: ...


def _never() -> bool:
    return False


def extract(source: Readable, destination: Path, *, stopped: Callable[[], bool] = _never) -> Totals:
    """Unpack the tar stream ``source`` (plain or compressed) under the existing ``destination``."""
    files = size = 0
    links: list[str] = []
    root = os.open(destination, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with tarfile.open(fileobj=source, mode="r|*") as archive:  # type: ignore[call-overload]
            for member in archive:
                if stopped():
                    raise InterruptedError("the caller went away")
                parts = _parts(member)
                if member.isdir():
                    if parts:
                        os.close(_directory(root, parts, member))
                elif member.isreg():
                    data = archive.extractfile(member)
                    assert data is not None
                    size += _write(root, parts, member, data)
                    files += 1
                elif member.issym():
                    _symlink(root, parts, member)
                    links.append("/".join(parts))
                elif member.islnk():
                    _hardlink(root, parts, member)
                else:
                    raise _refuse(member, "devices, fifos and other special files are not accepted")
    except tarfile.TarError as exc:
        raise InvalidInput(f"not a valid tar stream: {exc}") from exc
    finally:
        os.close(root)
    _links_stay_inside(destination, links)
    return Totals(files, size)


def _refuse(member: tarfile.TarInfo, why: str) -> InvalidInput:
    return InvalidInput(f"refused tar entry {member.name!r}: {why}")


def _parts(member: tarfile.TarInfo) -> list[str]:
    name = member.name
    if "\x00" in name or "\x00" in member.linkname:
        raise _refuse(member, "NUL in a name")
    if name.startswith("/"):
        raise _refuse(member, "an absolute name")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _refuse(member, "'..' would escape the destination")
    if not parts and not member.isdir():
        raise _refuse(member, "not a file name")
    return parts


def _directory(root: int, parts: list[str], member: tarfile.TarInfo, *, create: bool = True) -> int:
    """A descriptor of ``root/parts...`` (created when missing), never following a link."""
    fd = os.dup(root)
    for part in parts:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
        try:
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as exc:
            os.close(fd)
            raise _refuse(member, f"{part} is not a directory here ({exc.strerror})") from exc
        os.close(fd)
        fd = child
    return fd


def _clear(parent: int, name: str) -> None:
    """Remove a link or file at ``name`` so that the entry replaces it, never writes through it."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISDIR(os.lstat(name, dir_fd=parent).st_mode):
            os.unlink(name, dir_fd=parent)


def _write(root: int, parts: list[str], member: tarfile.TarInfo, data: IO[bytes]) -> int:
    parent = _directory(root, parts[:-1], member)
    try:
        name = parts[-1]
        _clear(parent, name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        try:
            fd = os.open(name, flags, 0o600, dir_fd=parent)
        except OSError as exc:
            raise _refuse(member, f"cannot write ({exc.strerror})") from exc
        os.fchmod(fd, (member.mode & 0o755) | 0o600)
        written = 0
        with os.fdopen(fd, "wb") as target:
            while block := data.read(CHUNK):
                target.write(block)
                written += len(block)
        return written
    finally:
        os.close(parent)


def _symlink(root: int, parts: list[str], member: tarfile.TarInfo) -> None:
    target = member.linkname
    if not target or target.startswith("/"):
        raise _refuse(member, "a link to an absolute path")
    resolved = posixpath.normpath(posixpath.join(*parts[:-1], target) if parts[:-1] else target)
    if resolved == ".." or resolved.startswith("../"):
        raise _refuse(member, "a link that points outside the destination")
    parent = _directory(root, parts[:-1], member)
    try:
        _clear(parent, parts[-1])
        os.symlink(target, parts[-1], dir_fd=parent)
    except FileExistsError as exc:
        raise _refuse(member, "a directory is in the way") from exc
    finally:
        os.close(parent)


def _hardlink(root: int, parts: list[str], member: tarfile.TarInfo) -> None:
    source = tarfile.TarInfo(member.linkname)
    source.type = tarfile.REGTYPE
    if member.linkname.startswith("/"):
        raise _refuse(member, "a hard link to a file outside the destination")
    try:
        source_parts = _parts(source)
    except InvalidInput as exc:
        raise _refuse(member, "a hard link to a file outside the destination") from exc
    source_dir = _directory(root, source_parts[:-1], member, create=False)
    parent = _directory(root, parts[:-1], member)
    try:
        if not stat.S_ISREG(os.lstat(source_parts[-1], dir_fd=source_dir).st_mode):
            raise _refuse(member, "a hard link to something other than a file")
        _clear(parent, parts[-1])
        os.link(source_parts[-1], parts[-1], src_dir_fd=source_dir, dst_dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError as exc:
        raise _refuse(member, "a hard link to a file the archive has not put inside") from exc
    finally:
        os.close(source_dir)
        os.close(parent)


def _links_stay_inside(destination: Path, links: list[str]) -> None:
    """Judge the links in the final tree: a chain can lead out where each link alone does not."""
    root = os.path.realpath(destination)
    escaping = [link for link in links if not _inside(root, os.path.realpath(os.path.join(root, link)))]
    if escaping:
        for link in links:
            with contextlib.suppress(OSError):
                path = os.path.join(root, link)
                if os.path.islink(path):
                    os.unlink(path)
        raise InvalidInput(f"refused tar entry {escaping[0]!r}: a link that points outside the destination")


def _inside(root: str, real: str) -> bool:
    return real == root or real.startswith(root + os.sep)
