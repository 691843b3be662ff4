"""Limits at red-box: oversized scripts and environments are clear errors; 10 MB of log lines
stream through OpenFile and TailFile with red-box's memory flat; shell metacharacters in a job's
name, environment and paths reach the job verbatim (a real job echoes them back)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from grpclib.client import Channel

from tests.e2e.redbox.helpers import script, terminal, wait_for
from tests.faults.support import rss_kib
from tests.fixtures.redbox import RedBox
from wlmvk._proto import api
from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobSpec, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm]

LOG_BYTES = 10 * 1024 * 1024
RSS_SLACK_KIB = 24 * 1024


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (JobSpec(script="#!/bin/sh\n" + "#" * (2 * 1024 * 1024)), "the limit is"),
        (JobSpec(script=script("true"), env={"BIG": "x" * (200 * 1024)}), "BIG has"),
        (
            JobSpec(script=script("true"), env={f"V{i}": "y" * 60_000 for i in range(40)}),
            "the environment has",
        ),
        (JobSpec(script=script("true"), env={"BAD NAME": "x"}), "not valid"),
        (JobSpec(script=script("true"), env={"NUL": "a\x00b"}), "NUL"),
        (JobSpec(script="   \n"), "empty"),
    ],
    ids=["2MB-script", "200KB-variable", "2.4MB-env", "bad-name", "nul-value", "empty-script"],
)
async def test_oversized_and_bad_submissions_are_clear_errors(
    redbox: RedBox, redbox_client: RedBoxClient, spec: JobSpec, words: str
) -> None:
    with pytest.raises(InvalidInput, match=words):
        await redbox_client.submit(spec)
    assert redbox.journal_job_ids() == set()


async def _drain(stream: object) -> int:
    total = 0
    async for chunk in stream:  # type: ignore[attr-defined]
        total += len(chunk.content)
    return total


async def test_ten_megabytes_of_log_lines_stream_with_flat_memory(redbox: RedBox) -> None:
    line = b"2026-12-02T16:00:00 step 000123: the quick brown fox jumps over the lazy dog\n"
    log = redbox.work_dir / "big.log"
    with log.open("wb") as out:
        out.write(line * (LOG_BYTES // len(line) + 1))
    size = log.stat().st_size
    assert redbox.proc is not None
    channel = Channel(path=redbox.socket)
    stub = api.WorkloadManagerStub(channel)
    try:
        await stub.partitions(api.PartitionsRequest())
        before = rss_kib(redbox.proc.pid)
        peaks = []
        for _ in range(3):
            read = await _drain(stub.open_file(api.OpenFileRequest(path="big.log")))
            tailed = await _drain(
                stub.tail_file([api.TailFileRequest(path="big.log", action=api.TailAction.ReadToEndAndClose)])
            )
            assert (read, tailed) == (size, size)
            peaks.append(rss_kib(redbox.proc.pid))
        # Several readers at once: each is a bounded stream, not a copy of the file.
        together = await asyncio.gather(
            *(_drain(stub.open_file(api.OpenFileRequest(path="big.log"))) for _ in range(4))
        )
        assert together == [size] * 4
        peaks.append(rss_kib(redbox.proc.pid))
    finally:
        channel.close()
    assert max(peaks) - before < RSS_SLACK_KIB, f"red-box RSS {before} KiB -> {peaks} KiB for a {size} B file"


async def test_a_tail_of_a_missing_file_is_bounded_by_the_client(redbox: RedBox) -> None:
    """TailFile waits for a file to appear (a job's output); the client's deadline ends it."""
    channel = Channel(path=redbox.socket)
    try:
        with pytest.raises(TimeoutError):
            await _drain(
                api.WorkloadManagerStub(channel).tail_file(
                    [api.TailFileRequest(path="not-yet.log", action=api.TailAction.Start)], timeout=1.0
                )
            )
        await api.WorkloadManagerStub(channel).partitions(api.PartitionsRequest())
        assert redbox.proc is not None
        assert redbox.proc.poll() is None
    finally:
        channel.close()


async def test_shell_metacharacters_reach_the_job_verbatim(
    redbox: RedBox, redbox_client: RedBoxClient
) -> None:
    canary = Path(f"/tmp/wlmvk-canary-{uuid.uuid4().hex[:8]}")
    nasty = f"$(touch {canary}) `touch {canary}` ; | & < > ' \" \\ * ? [a] {{b}} ~ # !"
    name = f"n $(touch {canary});|&'\""
    spec = JobSpec(
        script=script('printf "%s\\n" "$SLURM_JOB_NAME" "$NASTY" "$(pwd)"'),
        name=name,
        env={"NASTY": nasty + "\nsecond line"},
        working_dir="w $(touch pwned) ;& 'q' `touch pwned`",
        std_out="out $(touch pwned) ;|.txt",
    )
    job_id = await redbox_client.submit(spec)
    final = await wait_for(redbox_client, job_id, terminal)
    assert final.status is JobStatus.COMPLETED, final
    output = (await asyncio.to_thread(Path(final.std_out).read_text)).splitlines()
    work = redbox.work_dir / spec.working_dir
    assert output == [name, nasty, "second line", str(work)]
    assert Path(final.std_out) == work / spec.std_out
    assert not await asyncio.to_thread(canary.exists)
    assert not await asyncio.to_thread(lambda: list(redbox.work_dir.rglob("pwned"))), "a path reached a shell"
