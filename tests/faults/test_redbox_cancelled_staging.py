"""Cancelled staging calls give their threads back (issue 14 #6), through a real red-box as uid 1000.

red-box packs StageOut, unpacks StageIn and runs Zip/Unzip in a pool of
cpus+4 threads. A StageOut cancelled while its packer waited used to keep
one of them blocked for good; after cpus+4 such cancellations every file
rpc that needs the pool hung until restart. Here twice that many StageOuts
of a directory of many small files are cancelled after one chunk, then
Zip, Unzip, StageIn and StageOut must all still answer.
"""

from __future__ import annotations

import asyncio
import io
import os
import tarfile
from collections.abc import AsyncIterator, Callable

import pytest

from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk._proto import api
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm]

CANCELLATIONS = 2 * ((os.cpu_count() or 1) + 4)
FILES = 6000
ANSWER_WITHIN = 60.0
"""A hang, not a speed: each call below answers in well under a second when red-box is healthy."""


@pytest.fixture
def owner(redbox_factory: Callable[..., RedBox]) -> RedBox:
    box = redbox_factory(user=JOB_OWNER)
    # Many small files: packing them is slower than sending, so a cancelled call finds
    # red-box waiting for the packer (the wait that used to keep its thread).
    big = box.work_dir / "big"
    big.mkdir()
    for index in range(FILES):
        (big / f"f-{index:05d}").write_bytes(b"x" * 600)
    (box.work_dir / "small").mkdir()
    (box.work_dir / "small" / "note.txt").write_text("kept\n")
    return box


@pytest.fixture
async def client(owner: RedBox) -> AsyncIterator[RedBoxClient]:
    client = RedBoxClient(owner.socket, timeout=ANSWER_WITHIN)
    yield client
    await client.close()


async def _one_chunk_then_cancel(client: RedBoxClient, path: str) -> None:
    stream = client.stage_out(path)
    first = await anext(stream)
    assert first
    await stream.aclose()  # type: ignore[attr-defined]


def _tar_of(name: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def test_file_rpcs_still_answer_after_many_cancelled_stage_outs(
    owner: RedBox, client: RedBoxClient
) -> None:
    for _ in range(CANCELLATIONS):
        await asyncio.wait_for(_one_chunk_then_cancel(client, "big"), ANSWER_WITHIN)
    stub = client._stub()  # the dptech fork's Zip/Unzip have no client method of their own
    await asyncio.wait_for(stub.zip(api.ZipRequest(path="small", target="small.zip")), ANSWER_WITHIN)
    await asyncio.wait_for(stub.unzip(api.UnzipRequest(source="small.zip", path="unzipped")), ANSWER_WITHIN)
    assert (owner.work_dir / "unzipped" / "small" / "note.txt").read_text() == "kept\n"
    staged = await asyncio.wait_for(
        client.stage_in("staged", _chunks(_tar_of("in.txt", b"in\n"))), ANSWER_WITHIN
    )
    assert staged == (1, 3)
    assert (owner.work_dir / "staged" / "in.txt").read_text() == "in\n"
    out = b"".join(await asyncio.wait_for(_collect(client.stage_out("small")), ANSWER_WITHIN))
    with tarfile.open(fileobj=io.BytesIO(out)) as archive:
        assert archive.getnames() == ["small", "small/note.txt"]


async def _collect(stream: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in stream]
