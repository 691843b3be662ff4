"""Files through red-box: TailFile, stage-in/out round trips, and every way out of the roots refused."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import tarfile
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Status

from tests.fixtures.redbox import RedBox
from tests.fixtures.slurm import JOBS_ROOT
from wlmvk._proto import api
from wlmvk.core.errors import InvalidInput, NotFound
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = pytest.mark.slurm


def make_tree(top: Path) -> None:
    (top / "sub" / "deeper").mkdir(parents=True)
    (top / "empty-dir").mkdir()
    (top / "a.txt").write_text("alpha\n")
    (top / "empty").write_bytes(b"")
    (top / "sub" / "binary.bin").write_bytes(bytes(range(256)) * 4099)
    (top / "sub" / "deeper" / "name with spaces.txt").write_text("ünïcode\n")
    (top / "sub" / "run.sh").write_text("#!/bin/sh\n")
    (top / "sub" / "run.sh").chmod(0o755)
    os.symlink("a.txt", top / "link-to-a")


def digest(top: Path) -> dict[str, tuple[str, str]]:
    """Relative path -> (kind, content hash or link target or mode) for a whole tree."""
    result: dict[str, tuple[str, str]] = {}
    for path in sorted(top.rglob("*")):
        rel = str(path.relative_to(top))
        if path.is_symlink():
            result[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            result[rel] = ("dir", "")
        else:
            data = path.read_bytes()
            result[rel] = ("file", f"{hashlib.sha256(data).hexdigest()}:{oct(path.stat().st_mode & 0o777)}")
    return result


def tar_of(top: Path, arcname: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(top, arcname=arcname)
    return buffer.getvalue()


async def chunked(data: bytes, size: int = 100_000) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def test_stage_in_and_out_round_trip_a_tree(
    redbox: RedBox, redbox_client: RedBoxClient, tmp_path: Path
) -> None:
    source = tmp_path / "inputs"
    make_tree(source)
    files, size = await redbox_client.stage_in("job-1/in", chunked(tar_of(source, "inputs")))
    assert files == 5
    assert size == sum(p.stat().st_size for p in source.rglob("*") if p.is_file() and not p.is_symlink())
    landed = redbox.work_dir / "job-1" / "in" / "inputs"
    assert digest(landed) == digest(source)

    stream = b"".join([chunk async for chunk in redbox_client.stage_out("job-1/in/inputs")])
    back = tmp_path / "back"
    back.mkdir()
    with tarfile.open(fileobj=io.BytesIO(stream)) as archive:
        assert archive.getnames()[0] == "inputs"
        archive.extractall(back, filter="data")
    assert digest(back / "inputs") == digest(source)


async def test_stage_out_of_a_single_file_names_it_by_its_base_name(
    redbox: RedBox, redbox_client: RedBoxClient
) -> None:
    (redbox.work_dir / "result.csv").write_text("a,b\n1,2\n")
    stream = b"".join([c async for c in redbox_client.stage_out(str(redbox.work_dir / "result.csv"))])
    with tarfile.open(fileobj=io.BytesIO(stream)) as archive:
        member = archive.next()
        assert member is not None
        assert member.name == "result.csv"
        extracted = archive.extractfile(member)
        assert extracted is not None
        assert extracted.read() == b"a,b\n1,2\n"


async def test_tail_file_sees_lines_as_they_are_written(redbox: RedBox, redbox_client: RedBoxClient) -> None:
    log = redbox.work_dir / "growing.log"
    log.write_text("line 1\n")
    tail = redbox_client.tail_file("growing.log")
    received = b""
    async with asyncio.timeout(20):
        while received != b"line 1\n":
            received += await anext(tail)
        for n in range(2, 6):
            with log.open("a") as out:
                out.write(f"line {n}\n")
            expected = b"".join(f"line {i}\n".encode() for i in range(1, n + 1))
            while received != expected:
                received += await anext(tail)
    await tail.aclose()  # type: ignore[attr-defined]


async def test_tail_file_waits_for_a_file_and_ends_on_read_to_end_and_close(redbox: RedBox) -> None:
    """The original protocol: the client says ReadToEndAndClose; the server drains and ends."""
    channel = Channel(path=redbox.socket)
    try:
        requests: asyncio.Queue[api.TailFileRequest | None] = asyncio.Queue()

        async def messages() -> AsyncIterator[api.TailFileRequest]:
            while (item := await requests.get()) is not None:
                yield item

        await requests.put(api.TailFileRequest(path="later.log"))
        stub = api.WorkloadManagerStub(channel)
        chunks = stub.tail_file(messages())
        first = asyncio.ensure_future(anext(chunks))
        await asyncio.sleep(0.5)
        (redbox.work_dir / "later.log").write_text("appeared\n")
        async with asyncio.timeout(20):
            assert (await first).content == b"appeared\n"
            with (redbox.work_dir / "later.log").open("a") as out:
                out.write("last words\n")
            await requests.put(api.TailFileRequest(action=api.TailAction.ReadToEndAndClose))
            await requests.put(None)
            rest = b"".join([c.content async for c in chunks])
        assert rest == b"last words\n"
    finally:
        channel.close()


@pytest.mark.parametrize(
    "path",
    [
        "../outside.txt",
        "sub/../../outside.txt",
        "/etc/passwd",
        str(JOBS_ROOT.parent),  # the local Slurm's base: config, state, munge key
        "escape-link/passwd",
        "escape-file",
    ],
)
async def test_paths_out_of_the_roots_are_refused(
    redbox: RedBox, redbox_client: RedBoxClient, path: str
) -> None:
    (redbox.work_dir / "sub").mkdir(exist_ok=True)
    if not (redbox.work_dir / "escape-link").is_symlink():
        os.symlink("/etc", redbox.work_dir / "escape-link")
        os.symlink("/etc/hostname", redbox.work_dir / "escape-file")
    with pytest.raises(InvalidInput, match="outside the allowed roots"):
        _ = [c async for c in redbox_client.open_file(path)]
    with pytest.raises(InvalidInput, match="outside the allowed roots"):
        _ = [c async for c in redbox_client.stage_out(path)]
    with pytest.raises(InvalidInput, match="outside the allowed roots"):
        _ = [c async for c in redbox_client.tail_file(path)]
    with pytest.raises(InvalidInput, match="outside the allowed roots"):
        await redbox_client.stage_in(path, chunked(b""))


def hostile_tar(kind: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        if kind == "dotdot":
            info = tarfile.TarInfo("../evil.txt")
            info.size = 4
            archive.addfile(info, io.BytesIO(b"evil"))
        elif kind == "absolute-link":
            info = tarfile.TarInfo("link")
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            archive.addfile(info)
        elif kind == "link-out":
            info = tarfile.TarInfo("link")
            info.type = tarfile.SYMTYPE
            info.linkname = "../../.."
            archive.addfile(info)
        elif kind == "device":
            info = tarfile.TarInfo("null")
            info.type = tarfile.CHRTYPE
            info.devmajor, info.devminor = 1, 3
            archive.addfile(info)
        elif kind == "hardlink-out":
            info = tarfile.TarInfo("hard")
            info.type = tarfile.LNKTYPE
            info.linkname = "/etc/passwd"
            archive.addfile(info)
    return buffer.getvalue()


@pytest.mark.parametrize("kind", ["dotdot", "absolute-link", "link-out", "device", "hardlink-out"])
async def test_hostile_tar_entries_are_refused(
    redbox: RedBox, redbox_client: RedBoxClient, kind: str
) -> None:
    with pytest.raises(InvalidInput, match="refused tar entry"):
        await redbox_client.stage_in("target", chunked(hostile_tar(kind)))
    assert not (redbox.work_dir / "evil.txt").exists()
    assert not (redbox.work_dir.parent / "evil.txt").exists()


async def test_missing_files_are_not_found(redbox_client: RedBoxClient) -> None:
    with pytest.raises(NotFound):
        _ = [c async for c in redbox_client.open_file("no-such-file")]
    with pytest.raises(NotFound):
        _ = [c async for c in redbox_client.stage_out("no-such-dir")]


async def test_dptech_create_zip_unzip_stay_inside_the_roots(redbox: RedBox) -> None:
    channel = Channel(path=redbox.socket)
    stub = api.WorkloadManagerStub(channel)
    try:
        await stub.create_file(
            [api.CreateFileRequest(path="up/data/x.txt"), api.CreateFileRequest(content=b"x" * 300)]
        )
        assert (redbox.work_dir / "up" / "data" / "x.txt").read_bytes() == b"x" * 300
        await stub.zip(api.ZipRequest(path="up/data", target="up/data.zip"))
        with zipfile.ZipFile(redbox.work_dir / "up" / "data.zip") as archive:
            assert sorted(archive.namelist()) == ["data/", "data/x.txt"]
        await stub.unzip(api.UnzipRequest(source="up/data.zip", path="down"))
        assert (redbox.work_dir / "down" / "data" / "x.txt").read_bytes() == b"x" * 300

        slip = redbox.work_dir / "slip.zip"
        with zipfile.ZipFile(slip, "w") as archive:
            archive.writestr("../../slipped.txt", b"no")
        with pytest.raises(GRPCError) as refused:
            await stub.unzip(api.UnzipRequest(source="slip.zip", path="down"))
        assert refused.value.status is Status.INVALID_ARGUMENT
        for bad in (
            api.ZipRequest(path="/etc", target="etc.zip"),
            api.ZipRequest(path="up/data", target="/tmp/out.zip"),
        ):
            with pytest.raises(GRPCError) as outside:
                await stub.zip(bad)
            assert outside.value.status is Status.INVALID_ARGUMENT
        with pytest.raises(GRPCError) as outside:
            await stub.create_file([api.CreateFileRequest(path="../x")])
        assert outside.value.status is Status.INVALID_ARGUMENT
    finally:
        channel.close()


async def test_allow_root_extends_the_roots(redbox_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "shared.txt").write_text("shared\n")
    box = redbox_factory("--allow-root", str(extra))
    client = RedBoxClient(box.socket)
    try:
        assert b"".join([c async for c in client.open_file(str(extra / "shared.txt"))]) == b"shared\n"
    finally:
        await client.close()


async def test_a_refused_upload_says_why_even_mid_stream(redbox_client: RedBoxClient) -> None:
    """red-box refuses the target before reading the data: the client reports red-box's reason."""

    async def slow() -> AsyncIterator[bytes]:
        for _ in range(20):  # the refusal arrives while the client is still sending
            await asyncio.sleep(0.05)
            yield os.urandom(64 * 1024)

    with pytest.raises(InvalidInput, match="outside the allowed roots"):
        await redbox_client.stage_in("/etc/wlmvk-nope", slow())
