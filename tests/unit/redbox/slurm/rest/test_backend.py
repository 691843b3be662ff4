"""What each status reading of a REST red-box costs slurmctld: one request to slurmrestd, or squeue.

slurmrestd here is a small server on a Unix socket answering captured 22.05 bodies (the
dump of ``test_dump``, 304 for no change, an error), and squeue a runner answering the
squeue output captured with that dump. Every request to the server is one RPC to slurmctld,
every squeue two.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests.unit.redbox.slurm.rest.test_connection import Answer, Server, Start, http, serve  # noqa: F401
from tests.unit.redbox.slurm.rest.test_dump import CAPTURED, UID, USER
from wlmvk.core.jobs import JobId, JobStatus
from wlmvk.redbox.files import Confinement
from wlmvk.redbox.jobs import Jobs
from wlmvk.redbox.slurm.cli import keys
from wlmvk.redbox.slurm.processes.runner import Completed
from wlmvk.redbox.slurm.rest import backend as restapi
from wlmvk.redbox.slurm.rest.backend import RestSlurm
from wlmvk.redbox.slurm.rest.connection import Client
from wlmvk.redbox.slurm.rest.daemon import Restd
from wlmvk.redbox.store import Store

DUMP = (CAPTURED / "restd_jobs_v0.0.38.json").read_text()
LISTING = (CAPTURED / "squeue_restd_v0.0.38.txt").read_text()
KEYS_LISTING = (CAPTURED / "squeue_keys.txt").read_text()
NOT_MODIFIED = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 0\r\n\r\n"


class SqueueRunner:
    def __init__(self) -> None:
        self.squeues = 0
        self.argvs: list[tuple[str, ...]] = []

    async def run(
        self, argv: Sequence[str], *, stdin: bytes = b"", env: Mapping[str, str] | None = None
    ) -> Completed:
        self.argvs.append(tuple(argv))
        if argv[0] == "sinfo":
            return Completed(tuple(argv), 0, "slurm 22.05.8\n", "")
        if argv[0] == "sacct":
            return Completed(tuple(argv), 0, "", "")  # nothing in accounting
        assert argv[0] == "squeue"
        self.squeues += 1
        keyed = keys.SQUEUE_FORMAT in argv  # the lookup by key's reading
        return Completed(tuple(argv), 0, KEYS_LISTING if keyed else LISTING, "")


class Answers:
    """What the server answers next: a dump, 304, or an error."""

    def __init__(self) -> None:
        self.next = "dump"

    def __call__(self, request: bytes) -> bytes:
        if self.next == "unchanged" and b"update_time=" in request:
            return NOT_MODIFIED
        if self.next == "error":
            return http(500, '{"errors": [{"error_code": 1007, "error": "Protocol authentication error"}]}')
        return http(200, DUMP)


@pytest.fixture
async def box(serve: Start) -> AsyncIterator[tuple[RestSlurm, SqueueRunner, Server, Answers]]:  # noqa: F811
    answers = Answers()
    server, path = await serve(answers)
    restd = Restd(version="v0.0.38")
    restd.client = Client(path)
    runner = SqueueRunner()
    yield RestSlurm(runner, restd=restd, user=USER), runner, server, answers  # type: ignore[arg-type]
    restd.client.close()


IDS = [JobId(161612), JobId(161619), JobId(161617)]


async def test_every_reading_is_one_request_and_no_squeue(
    box: tuple[RestSlurm, SqueueRunner, Server, Answers],
) -> None:
    slurm, runner, server, answers = box
    first = await slurm.queue(IDS)
    assert sorted(s.job_id for s in first) == sorted(IDS)
    assert server.requests[0].startswith(b"GET /slurm/v0.0.38/jobs HTTP/1.1")
    changed = await slurm.queue(IDS)
    assert b"/jobs?update_time=" in server.requests[1]
    answers.next = "unchanged"
    kept = await slurm.queue(IDS)
    everything = await slurm.queue()  # another list: the dump answers it too
    assert (changed, kept) == (first, first)
    assert len(everything) == 10
    assert (len(server.requests), runner.squeues) == (4, 0)


async def test_a_lookup_by_key_reads_the_users_own_jobs_not_the_clusters_dump(
    box: tuple[RestSlurm, SqueueRunner, Server, Answers], tmp_path: Path
) -> None:
    """Before: the key index read ``GET /jobs``, every job of the cluster, so each of 50 tenants'
    red-boxes paid slurmrestd and itself for all 50 tenants' jobs at its first keyed submission.
    Now ``squeue -u`` its own user (slurmctld sends that user's jobs alone) and sacct."""
    slurm, runner, server, _ = box
    store = Store(tmp_path / "state")
    store.open()
    jobs = Jobs(
        slurm=slurm, store=store, confinement=Confinement(tmp_path, [tmp_path]), max_script_bytes=1000
    )
    assert await jobs.job_for_key("key-held") == JobId(939728)
    assert await jobs.job_for_key("key-never-used") is None
    assert server.requests == []
    squeues = [argv for argv in runner.argvs if argv[0] == "squeue"]
    assert len(squeues) == 2  # one index read per lookup (max_age 0), no job list
    for argv in squeues:
        assert argv[argv.index("-u") + 1] == USER
        assert "-j" not in argv


async def test_squeue_reads_when_the_answer_is_no_dump_and_looks_wait(
    box: tuple[RestSlurm, SqueueRunner, Server, Answers],
) -> None:
    slurm, runner, server, answers = box
    answers.next = "error"
    by_squeue = await slurm.queue(IDS)
    assert (len(server.requests), runner.squeues) == (1, 1)
    await slurm.queue(IDS)  # within the pause: squeue alone
    assert (len(server.requests), runner.squeues) == (1, 2)
    answers.next = "dump"
    slurm._look_after = 0.0  # the pause is over
    # The runner answers every job of the listing, asked for some or not.
    asked = {s.job_id: s for s in by_squeue if s.job_id in IDS}
    assert {s.job_id: s for s in await slurm.queue(IDS)} == asked
    assert (len(server.requests), runner.squeues) == (2, 2)


async def test_a_dump_too_large_is_read_once_then_squeue_for_a_while(
    box: tuple[RestSlurm, SqueueRunner, Server, Answers], monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm, runner, server, _ = box
    monkeypatch.setattr(restapi, "DUMP_MAX_JOBS", 13)
    await slurm.queue(IDS)
    await slurm.queue(IDS)
    assert (len(server.requests), runner.squeues) == (1, 1)
    assert slurm._pause == restapi.CHECK_PAUSE_MIN


async def test_without_a_user_the_jobs_read_are_red_boxs_own(serve: Start) -> None:  # noqa: F811
    dump = DUMP.replace('"user_id": 1000', f'"user_id": {os.geteuid()}')
    _, path = await serve(lambda _: http(200, dump))
    restd = Restd(version="v0.0.38")
    restd.client = Client(path)
    slurm = RestSlurm(SqueueRunner(), restd=restd)  # type: ignore[arg-type]
    assert sorted(s.job_id for s in await slurm.queue(IDS)) == sorted(IDS)
    restd.client.close()


HOST_CLOCK = time.time
"""slurmctld's clock, kept from before a test moves red-box's (``time.time``, patched)."""


class Slurmctld:
    """slurmrestd answering ``GET /jobs?update_time=T`` as slurmctld decides, by its own clock:
    304 while ``T - 1 >= last job change`` (``_slurm_rpc_dump_jobs``), else the dump."""

    def __init__(self, dump: str) -> None:
        self.dump = dump
        self.changed = int(HOST_CLOCK()) - 100
        self.asked: list[int] = []

    def __call__(self, request: bytes) -> bytes:
        head = request.split(b"\r\n", 1)[0].decode()
        if "update_time=" in head:
            since = int(head.split("update_time=", 1)[1].split()[0])
            self.asked.append(since)
            if since - 1 >= self.changed:
                return NOT_MODIFIED
        return http(200, self.dump)

    def change(self, dump: str) -> None:
        self.dump = dump
        self.changed = int(HOST_CLOCK())


@pytest.mark.parametrize("skew", [-30, 0, 2, 30, 59])
async def test_a_change_is_seen_whatever_red_boxs_clock_says(
    serve: Start,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    skew: int,
) -> None:
    """Before: update_time was red-box's own second, and a red-box 2 s or more ahead of slurmctld
    was told 'no change' for a job that had ended (a 304 stub that ignores update_time cannot
    tell). CLOCK_MARGIN (60 s) is the skew ahead a v0.0.38 dump, without slurmctld's second, bears."""
    ctld = Slurmctld(DUMP)
    _, path = await serve(ctld)
    restd = Restd(version="v0.0.38")
    restd.client = Client(path)
    slurm = RestSlurm(SqueueRunner(), restd=restd, user=str(UID))  # type: ignore[arg-type]
    monkeypatch.setattr(restapi.time, "time", lambda: HOST_CLOCK() + skew)
    try:
        [running] = await slurm.queue([JobId(161613)])
        assert running.status is JobStatus.RUNNING
        ctld.change(DUMP.replace('"job_state": "RUNNING"', '"job_state": "COMPLETED"', 1))
        [ended] = await slurm.queue([JobId(161613)])
        assert ended.status is JobStatus.COMPLETED
        [kept] = await slurm.queue([JobId(161613)])  # nothing changed since
        assert kept.status is JobStatus.COMPLETED
    finally:
        restd.client.close()


async def test_a_dump_with_slurmctlds_second_is_asked_again_by_that_second(
    serve: Start,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """v0.0.42 dumps carry ``last_update``, slurmctld's second: the next look sends it, whatever
    red-box's clock says (here 1000 s ahead)."""
    dump = json.loads(DUMP)
    dump["last_update"] = {"set": True, "infinite": False, "number": 1796500000}
    ctld = Slurmctld(json.dumps(dump))
    _, path = await serve(ctld)
    restd = Restd(version="v0.0.38")
    restd.client = Client(path)
    slurm = RestSlurm(SqueueRunner(), restd=restd, user=str(UID))  # type: ignore[arg-type]
    monkeypatch.setattr(restapi.time, "time", lambda: HOST_CLOCK() + 1000)
    try:
        await slurm.queue(IDS)
        await slurm.queue(IDS)
        assert ctld.asked == [1796500000]
    finally:
        restd.client.close()
