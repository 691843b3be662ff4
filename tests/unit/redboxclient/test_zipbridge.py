"""tar <-> zip conversion for staging through an original red-box."""

from __future__ import annotations

import io
import tarfile

import pytest

from wlmvk.redboxclient import zipbridge


def test_round_trip_keeps_files_dirs_and_modes() -> None:
    source = io.BytesIO()
    with tarfile.open(fileobj=source, mode="w") as archive:
        folder = tarfile.TarInfo("top")
        folder.type = tarfile.DIRTYPE
        archive.addfile(folder)
        data = b"\x00\x01" * 1000
        entry = tarfile.TarInfo("top/run.sh")
        entry.size, entry.mode = len(data), 0o755
        archive.addfile(entry, io.BytesIO(data))
    source.seek(0)
    zipped, tarred = io.BytesIO(), io.BytesIO()
    assert zipbridge.tar_to_zip(source, zipped) == (1, 2000)
    zipped.seek(0)
    zipbridge.zip_to_tar(zipped, tarred)
    tarred.seek(0)
    with tarfile.open(fileobj=tarred) as archive:
        member = archive.getmember("top/run.sh")
        assert member.mode == 0o755
        extracted = archive.extractfile(member)
        assert extracted is not None
        assert extracted.read() == data
        assert archive.getmember("top").isdir()


def test_escaping_names_are_refused() -> None:
    source = io.BytesIO()
    with tarfile.open(fileobj=source, mode="w") as archive:
        entry = tarfile.TarInfo("../up")
        archive.addfile(entry, io.BytesIO(b""))
    source.seek(0)
    with pytest.raises(ValueError, match="refused"):
        zipbridge.tar_to_zip(source, io.BytesIO())
