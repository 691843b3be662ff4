"""tar <-> zip, for staging through an original (dptech) red-box that only knows zip files.

wlmvk stages data as tar streams (StageIn/StageOut). The dptech fork's
red-box has CreateFile + Unzip and Zip + OpenFile instead; these helpers
convert between the two on the client side, file to file, so the client
can fall back without holding the data in memory. Zip keeps regular files
and directories only (no links, no modes), as the fork did.
"""

from __future__ import annotations

import shutil
import tarfile
import zipfile
from pathlib import PurePosixPath
from typing import IO


def _safe(name: str) -> str:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise ValueError(f"refused archive entry {name!r}")
    return str(path)


def tar_to_zip(tar_file: IO[bytes], zip_file: IO[bytes]) -> tuple[int, int]:
    """Copy a tar archive's directories and regular files into a zip; returns (files, bytes)."""
    files = size = 0
    with (
        tarfile.open(fileobj=tar_file, mode="r|*") as tar,
        zipfile.ZipFile(zip_file, "w", compression=zipfile.ZIP_DEFLATED) as out,
    ):
        for member in tar:
            name = _safe(member.name)
            if member.isdir():
                out.writestr(zipfile.ZipInfo(name.rstrip("/") + "/"), b"")
            elif member.isreg():
                source = tar.extractfile(member)
                assert source is not None
                info = zipfile.ZipInfo(name, date_time=_date(member.mtime))
                info.external_attr = (member.mode & 0o777) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with out.open(info, "w") as target:
                    shutil.copyfileobj(source, target)
                files += 1
                size += member.size
    return files, size


def zip_to_tar(zip_file: IO[bytes], tar_file: IO[bytes]) -> None:
    """Copy a zip archive's entries into a tar stream, names unchanged."""
    with zipfile.ZipFile(zip_file) as archive, tarfile.open(fileobj=tar_file, mode="w|") as out:
        for info in archive.infolist():
            name = _safe(info.filename)
            entry = tarfile.TarInfo(name.rstrip("/"))
            mode = (info.external_attr >> 16) & 0o777
            if info.is_dir():
                entry.type = tarfile.DIRTYPE
                entry.mode = mode or 0o755
                out.addfile(entry)
                continue
            entry.size = info.file_size
            entry.mode = mode or 0o644
            with archive.open(info) as source:
                out.addfile(entry, source)


def _date(mtime: float) -> tuple[int, int, int, int, int, int]:
    import time

    t = time.localtime(max(mtime, 315532800))  # zip cannot store dates before 1980
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)
