"""Tar streams: a tree goes out in bounded chunks and comes back only where it may."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk.core.tarstreams import CHUNK, unpack
from wlmvk.staging.packing import pack


async def collect(stream: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in stream]


async def replay(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_round_trip_keeps_names_contents_and_modes(tmp_path: Path) -> None:
    src = tmp_path / "inputs"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "foo.txt").write_text("foo\n")
    (src / "sub" / "deeper" / "x.bin").write_bytes(bytes(range(256)) * 10)
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o750)
    (src / "empty").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    totals = await unpack(pack(src), out)
    assert tree(out / "inputs") == tree(src)
    assert (totals.files, totals.bytes) == (3, 4 + 2560 + 10)
    assert (out / "inputs" / "empty").is_dir()
    assert (out / "inputs" / "run.sh").stat().st_mode & 0o777 == 0o750
    assert (out / "inputs" / "foo.txt").stat().st_uid == os.getuid()


async def test_a_single_file_arrives_under_its_base_name(tmp_path: Path) -> None:
    (tmp_path / "output.txt").write_text("hi\n")
    out = tmp_path / "out"
    out.mkdir()
    await unpack(pack(tmp_path / "output.txt"), out)
    assert (out / "output.txt").read_text() == "hi\n"


async def test_large_files_stream_in_bounded_chunks(tmp_path: Path) -> None:
    src = tmp_path / "big"
    src.mkdir()
    (src / "data").write_bytes(os.urandom(3 * CHUNK + 123))
    chunks = await collect(pack(src))
    assert len(chunks) > 3
    assert max(len(c) for c in chunks) <= CHUNK
    out = tmp_path / "out"
    out.mkdir()
    await unpack(replay(chunks), out)
    assert (out / "big" / "data").read_bytes() == (src / "data").read_bytes()


async def test_links_and_fifos_in_the_source_are_skipped(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "real").write_text("r")
    (src / "link").symlink_to("/etc/passwd")
    os.mkfifo(src / "fifo")
    out = tmp_path / "out"
    out.mkdir()
    await unpack(pack(src), out)
    assert sorted(p.name for p in (out / "src").iterdir()) == ["real"]


async def test_missing_source(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        await collect(pack(tmp_path / "nope"))


def archive(*members: tarfile.TarInfo, data: bytes = b"x") -> list[bytes]:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for member in members:
            if member.isfile():
                member.size = len(data)
                tar.addfile(member, io.BytesIO(data))
            else:
                tar.addfile(member)
    return [buffer.getvalue()]


def member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ((member("/etc/evil"),), "absolute"),
        ((member("../evil"),), "escape"),
        ((member("a/../../evil"),), "escape"),
        ((member("link", tarfile.SYMTYPE, "/etc/passwd"),), "a link to an absolute path"),
        ((member("link", tarfile.SYMTYPE, "../x"),), "a link that points outside the destination"),
        ((member("hard", tarfile.LNKTYPE, "/etc/passwd"),), "a hard link to a file outside the destination"),
        ((member("dev", tarfile.CHRTYPE),), "special"),
        ((member("fifo", tarfile.FIFOTYPE),), "special"),
    ],
)
async def test_unsafe_members_are_refused(
    tmp_path: Path, members: tuple[tarfile.TarInfo, ...], message: str
) -> None:
    out = tmp_path / "a" / "out"
    out.mkdir(parents=True)
    with pytest.raises(InvalidInput, match=message):
        await unpack(replay(archive(*members)), out)
    assert not (tmp_path / "evil").exists()
    assert not (tmp_path / "a" / "evil").exists()
    assert list(out.iterdir()) == []


async def test_links_that_stay_inside_are_kept_as_links(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    members = (
        member("d", tarfile.DIRTYPE),
        member("d/data.txt"),
        member("d/latest", tarfile.SYMTYPE, "data.txt"),
        member("top", tarfile.SYMTYPE, "d/../d/data.txt"),
        member("d/copy", tarfile.LNKTYPE, "d/data.txt"),
    )
    totals = await unpack(replay(archive(*members, data=b"abc")), out)
    assert (totals.files, totals.bytes) == (1, 3)
    assert os.readlink(out / "d" / "latest") == "data.txt"
    assert (out / "top").read_bytes() == b"abc"
    assert (out / "d" / "copy").stat().st_ino == (out / "d" / "data.txt").stat().st_ino


async def test_a_link_in_the_destination_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "bar").symlink_to(outside)
    with pytest.raises(InvalidInput, match="not a directory"):
        await unpack(replay(archive(member("bar/output.txt"))), out)
    assert list(outside.iterdir()) == []


async def test_a_file_link_in_the_destination_is_replaced_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    (out / "f").symlink_to(victim)
    await unpack(replay(archive(member("f"), data=b"new")), out)
    assert victim.read_text() == "keep"
    assert not (out / "f").is_symlink()
    assert (out / "f").read_bytes() == b"new"


async def test_garbage_is_not_a_tar(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="tar"):
        await unpack(replay([b"hello, this is not a tar archive" * 40]), tmp_path)


async def test_a_failing_source_stops_extraction(tmp_path: Path) -> None:
    good = archive(member("a"))[0]

    async def broken() -> AsyncIterator[bytes]:
        yield good[:700]
        raise RuntimeError("connection lost")

    with pytest.raises(RuntimeError, match="connection lost"):
        await unpack(broken(), tmp_path)


async def test_an_unreadable_directory_fails_the_upload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"
    (src / "locked").mkdir(parents=True)
    (src / "locked" / "f").write_text("x")
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    # (as root, a mode of 0 would not stop the walk: deny the listing itself)
    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(InvalidInput, match="Permission denied"):
        await collect(pack(src))
