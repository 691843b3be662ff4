"""What each status reading of a REST red-box costs slurmctld: one request to slurmrestd, or squeue.

slurmrestd here is a small server on a Unix socket answering captured 22.05 bodies (the
dump of ``test_restjobs``, 304 for no change, an error), and squeue a runner answering the
squeue output captured with that dump. Every request to the server is one RPC to slurmctld,
every squeue two.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import AsyncIterator, Mapping, Sequence

import pytest

from tests.unit.redbox.test_restclient import Answer, Server, Start, http, serve  # noqa: F401
from tests.unit.redbox.test_restjobs import CAPTURED, USER
from wlmvk.core.jobs import JobId
from wlmvk.redbox.slurm import restapi
from wlmvk.redbox.slurm.restapi import RestSlurm
from wlmvk.redbox.slurm.restd import Restd
from wlmvk.redbox.slurm.resthttp import Client
from wlmvk.redbox.slurm.runner import Completed

DUMP = (CAPTURED / "restd_jobs_v0.0.38.json").read_text()
LISTING = (CAPTURED / "squeue_restd_v0.0.38.txt").read_text()
NOT_MODIFIED = b"HTTP/1.1 304 Not Modified\r\nContent-Length: 0\r\n\r\n"


class SqueueRunner:
    def __init__(self) -> None:
        self.squeues = 0

    async def run(
        self, argv: Sequence[str], *, stdin: bytes = b"", env: Mapping[str, str] | None = None
    ) -> Completed:
        if argv[0] == "sinfo":
            return Completed(tuple(argv), 0, "slurm 22.05.8\n", "")
        assert argv[0] == "squeue"
        self.squeues += 1
        return Completed(tuple(argv), 0, LISTING, "")


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
    own = pwd.getpwuid(os.geteuid()).pw_name
    dump = DUMP.replace(f'"user_name": "{USER}"', f'"user_name": "{own}"')
    _, path = await serve(lambda _: http(200, dump))
    restd = Restd(version="v0.0.38")
    restd.client = Client(path)
    slurm = RestSlurm(SqueueRunner(), restd=restd)  # type: ignore[arg-type]
    assert sorted(s.job_id for s in await slurm.queue(IDS)) == sorted(IDS)
    restd.client.close()
