"""What staging uploads from a volume: a tar stream of its tree, regular files and directories only.

``pack`` turns a directory (or file) into a stream of tar chunks through
``core.tarstreams``, the thread-to-loop bridge red-box shares; entries belong
to no one (uid 0, no names) and symlinks or special files in the tree are left
out. Downloads are ``core.tarstreams.unpack`` with ``core.tarsafe``'s policy.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat
import tarfile
from collections.abc import AsyncGenerator
from pathlib import Path

from wlmvk.core import tarstreams
from wlmvk.core.errors import InvalidInput, NotFound


async def pack(source: Path) -> AsyncGenerator[bytes, None]:
    """A tar stream of ``source`` (a directory or a file), named by its base name.

    Symlinks and special files in the tree are skipped: only what is really
    in the volume is uploaded. Close the stream to stop its thread.
    """
    _must_exist(source)
    async with contextlib.aclosing(tarstreams.pack(lambda archive: _add_tree(archive, source))) as chunks:
        try:
            async for chunk in chunks:
                yield chunk
        except Exception as exc:
            raise InvalidInput(f"cannot read {source}: {exc}") from exc


def _must_exist(path: Path) -> None:
    if not path.exists():
        raise NotFound(f"{path} does not exist")


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
