"""Tar and zip handling: what goes in stays in, what comes out is the whole tree."""

from __future__ import annotations

import asyncio
import io
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from wlmvk.core import tarstreams
from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk.redbox import archives


def tar_bytes(*members: tuple[tarfile.TarInfo, bytes | None]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    buffer.seek(0)
    return buffer


def entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


def test_extract_counts_files_and_bytes(tmp_path: Path) -> None:
    source = tar_bytes(
        (entry("d", tarfile.DIRTYPE), None),
        (entry("d/a"), b"12345"),
        (entry("d/link", tarfile.SYMTYPE, "a"), None),
        (entry("b"), b""),
    )
    assert archives.extract_tar(source, tmp_path) == (2, 5)
    assert (tmp_path / "d" / "link").read_bytes() == b"12345"


@pytest.mark.parametrize(
    "member",
    [
        entry("../up"),
        entry("l", tarfile.SYMTYPE, "/etc"),
        entry("l", tarfile.SYMTYPE, "../.."),
        entry("h", tarfile.LNKTYPE, "/etc/passwd"),
        entry("fifo", tarfile.FIFOTYPE),
        entry("dev", tarfile.CHRTYPE),
    ],
)
def test_extract_refuses_escapes_and_special_files(tmp_path: Path, member: tarfile.TarInfo) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    data = b"x" if member.isreg() else None
    with pytest.raises(InvalidInput, match="refused tar entry"):
        archives.extract_tar(tar_bytes((member, data)), dest)
    assert not (tmp_path / "up").exists()


def test_an_absolute_name_is_refused_as_staging_refuses_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="refused tar entry '/abs/f': an absolute name"):
        archives.extract_tar(tar_bytes((entry("/abs/f"), b"x")), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_chain_of_inner_links_that_leads_out_is_refused(tmp_path: Path) -> None:
    # Each link alone stays inside when it is written; together t -> x/u/.. -> ../ leads out.
    dest = tmp_path / "dest"
    dest.mkdir()
    source = tar_bytes(
        (entry("x", tarfile.DIRTYPE), None),
        (entry("t", tarfile.SYMTYPE, "x/u/.."), None),
        (entry("x/u", tarfile.SYMTYPE, ".."), None),
    )
    with pytest.raises(InvalidInput, match="refused tar entry 't': a link that points outside"):
        archives.extract_tar(source, dest)
    assert not (dest / "t").is_symlink()
    assert not (dest / "x" / "u").is_symlink()


def test_a_file_written_through_a_link_of_the_archive_is_refused(tmp_path: Path) -> None:
    source = tar_bytes(
        (entry("sub", tarfile.DIRTYPE), None),
        (entry("l", tarfile.SYMTYPE, "sub"), None),
        (entry("l/f"), b"x"),
    )
    with pytest.raises(InvalidInput, match="refused tar entry 'l/f': l is not a directory here"):
        archives.extract_tar(source, tmp_path)


def test_a_file_written_through_an_inner_symlink_is_refused(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "out").symlink_to(tmp_path)
    with pytest.raises(InvalidInput):
        archives.extract_tar(tar_bytes((entry("out/evil"), b"x")), dest)
    assert not (tmp_path / "evil").exists()


def test_garbage_is_not_a_tar(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="not a valid tar"):
        archives.extract_tar(io.BytesIO(b"this is not a tar archive" * 100), tmp_path)


async def test_send_tar_streams_a_tree_in_chunks(tmp_path: Path) -> None:
    top = tmp_path / "results"
    (top / "sub").mkdir(parents=True)
    payload = bytes(range(256)) * 5000
    (top / "sub" / "big.bin").write_bytes(payload)
    chunks = [c async for c in archives.send_tar(top, "results")]
    assert len(chunks) > 1
    assert max(len(c) for c in chunks) <= tarstreams.CHUNK + tarfile.RECORDSIZE
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as archive:
        member = archive.extractfile("results/sub/big.bin")
        assert member is not None
        assert member.read() == payload


async def test_send_tar_stops_its_worker_when_the_reader_leaves(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"x" * (tarstreams.CHUNK * 40))
    stream = archives.send_tar(tmp_path / "big.bin", "big.bin")
    assert await anext(stream)
    await stream.aclose()


def test_zip_and_unzip_like_the_dptech_fork(tmp_path: Path) -> None:
    (tmp_path / "bar" / "baz").mkdir(parents=True)
    (tmp_path / "bar" / "baz" / "f").write_text("f")
    archives.zip_path(tmp_path / "bar", tmp_path / "bar.zip")
    with zipfile.ZipFile(tmp_path / "bar.zip") as archive:
        assert archive.namelist() == ["bar/", "bar/baz/", "bar/baz/f"]
    archives.unzip_into(tmp_path / "bar.zip", tmp_path / "out")
    assert (tmp_path / "out" / "bar" / "baz" / "f").read_text() == "f"
    with pytest.raises(NotFound):
        archives.zip_path(tmp_path / "none", tmp_path / "none.zip")


@pytest.mark.parametrize("name", ["../evil", "a/../../evil", "/abs/evil"])
def test_unzip_refuses_zip_slip(tmp_path: Path, name: str) -> None:
    with zipfile.ZipFile(tmp_path / "slip.zip", "w") as archive:
        archive.writestr(name, b"x")
    with pytest.raises(InvalidInput, match="leads outside"):
        archives.unzip_into(tmp_path / "slip.zip", tmp_path / "dest")
    assert not (tmp_path / "evil").exists()


def test_a_stopped_zip_ends_at_the_next_entry_and_leaves_no_zip(tmp_path: Path) -> None:
    (tmp_path / "bar").mkdir()
    (tmp_path / "bar" / "x").write_text("x")
    stop = threading.Event()
    stop.set()
    with pytest.raises(InterruptedError):
        archives.zip_path(tmp_path / "bar", tmp_path / "bar.zip", stop)
    assert not (tmp_path / "bar.zip").exists()


def test_a_stopped_unzip_and_tar_extraction_end_before_the_first_entry(tmp_path: Path) -> None:
    (tmp_path / "bar").mkdir()
    (tmp_path / "bar" / "x").write_text("x")
    archives.zip_path(tmp_path / "bar", tmp_path / "bar.zip")
    stop = threading.Event()
    stop.set()
    with pytest.raises(InterruptedError):
        archives.unzip_into(tmp_path / "bar.zip", tmp_path / "out", stop)
    assert list((tmp_path / "out").iterdir()) == []
    with pytest.raises(InterruptedError):
        archives.extract_tar(tar_bytes((entry("f"), b"x")), tmp_path / "out", stop)
    assert list((tmp_path / "out").iterdir()) == []


async def test_in_thread_stops_its_work_when_the_caller_is_cancelled() -> None:
    started, finished = threading.Event(), threading.Event()

    def work(stop: threading.Event) -> None:
        started.set()
        stop.wait(60)
        finished.set()

    call = asyncio.ensure_future(tarstreams.in_thread(work))
    await asyncio.to_thread(started.wait, 60)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await asyncio.to_thread(finished.wait, 60), "the worker saw the stop and ended"
