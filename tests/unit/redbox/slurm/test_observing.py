"""ObserveStates reads every user's jobs and records none; FollowJobs quiets the recorder for
red-box's own unfinished jobs only (docs/tenancy.md, Status at scale).

squeue's rows and slurmrestd's dump are the captured 22.05 ones (``test_dump``), one job given
to another user (uid 1001, ``slurmuser``) the way Slurm prints it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests.unit.redbox.slurm.rest.test_backend import DUMP, LISTING, NOT_MODIFIED
from tests.unit.redbox.slurm.rest.test_connection import Server, Start, http, serve  # noqa: F401
from tests.unit.redbox.slurm.rest.test_dump import USER
from tests.unit.redbox.test_recorder import following
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redbox import observing
from wlmvk.redbox.slurm.cli import arrays, squeue
from wlmvk.redbox.slurm.cli.commands import Slurm
from wlmvk.redbox.slurm.cli.releases import detected
from wlmvk.redbox.slurm.processes.runner import Completed
from wlmvk.redbox.slurm.rest.backend import RestSlurm
from wlmvk.redbox.slurm.rest.connection import Client
from wlmvk.redbox.slurm.rest.daemon import Restd

OTHER = JobId(161612)
NAMES = {"1000": USER, "1001": "slurmuser"}


def other_users_listing() -> str:
    """The captured squeue rows, job 161612's owner 1001."""
    rows = LISTING.splitlines(keepends=True)
    return "".join(
        r.replace("\x1f1000\x1f", "\x1f1001\x1f") if r.startswith("161612\x1f") else r for r in rows
    )


def other_users_dump() -> str:
    document = json.loads(DUMP)
    for job in document["jobs"]:
        if job["job_id"] == OTHER:
            job["user_id"], job["user_name"] = 1001, "slurmuser"
    return json.dumps(document)


def test_squeue_rows_of_every_user_name_each_jobs_owner() -> None:
    release = detected("slurm 22.05.8\n")
    read, owners = squeue.owned_rows(other_users_listing(), release=release, name_of=NAMES.__getitem__)
    assert owners[OTHER] == "slurmuser"
    assert {owner for job, owner in owners.items() if job != OTHER} == {USER}
    assert set(owners) == {s.job_id for s in read.states}
    mine = squeue.squeue_rows(LISTING, release=release, user=USER)
    assert read.states == mine.states


class Listing:
    """squeue answering the captured rows; what it was asked is kept."""

    def __init__(self) -> None:
        self.argvs: list[Sequence[str]] = []
        self.timeout = 30.0

    async def run(
        self, argv: Sequence[str], *, stdin: bytes = b"", env: Mapping[str, str] | None = None
    ) -> Completed:
        if argv[0] == "sinfo":
            return Completed(tuple(argv), 0, "slurm 22.05.8\n", "")
        self.argvs.append(argv)
        return Completed(tuple(argv), 0, other_users_listing(), "")


async def test_the_cli_looks_once_without_a_user_filter_and_names_each_owner(tmp_path: Path) -> None:
    runner = Listing()
    slurm = Slurm(runner, user="1000")  # type: ignore[arg-type]
    seen = dict((state.job_id, user) for user, state in await slurm.observe([OTHER, JobId(161613)]))
    assert len(runner.argvs) == 1
    assert "-u" not in runner.argvs[0]
    assert runner.argvs[0][-2:] == ["-j", "161612,161613"]
    assert (seen[OTHER], seen[JobId(161613)]) == ("slurmuser", USER)


async def test_a_look_records_nothing_and_leaves_out_an_arrays_unsure_end(tmp_path: Path) -> None:
    box, store, jobs = following(tmp_path, 7)
    ended_array = JobState(
        job_id=JobId(9), status=JobStatus.COMPLETED, reason=f"{arrays.REASON_PREFIX} 2 tasks"
    )

    async def observe(job_ids: Sequence[JobId]) -> list[tuple[str, JobState]]:
        return [
            ("slurmuser", JobState(job_id=JobId(8), status=JobStatus.COMPLETED)),
            ("slurmuser", ended_array),
        ]

    box.observe = observe  # type: ignore[attr-defined]
    box.user = "cloudsdk"  # type: ignore[attr-defined]
    seen = await observing.observe(jobs, [JobId(8), JobId(9)])
    assert [(user, state.job_id) for user, state in seen] == [("slurmuser", JobId(8))]
    assert store.get(JobId(8)) is None, "another user's job never enters red-box's record"
    store.close()


async def test_followed_jobs_are_not_looked_at_by_the_recorder_and_only_its_own_count(tmp_path: Path) -> None:
    box, store, jobs = following(tmp_path, 7, 8)
    store.record(JobState(job_id=JobId(8), status=JobStatus.COMPLETED))
    assert jobs.follow([JobId(7), JobId(8), JobId(99)]) == 1  # 8 ended, 99 is not red-box's
    box.calls.clear()
    assert await jobs.poll_unfinished(max_age=8.0) == 0
    assert box.calls == []
    assert await jobs.poll_unfinished(max_age=0.0) == 1, "once nobody follows it, the recorder looks"
    store.close()


@pytest.fixture
async def rest(serve: Start) -> AsyncIterator[tuple[RestSlurm, Listing, Server, list[str]]]:  # noqa: F811
    answers = ["dump"]

    def answer(request: bytes) -> bytes:
        if answers[0] == "unchanged" and b"update_time=" in request:
            return NOT_MODIFIED
        return http(200, other_users_dump())

    server, path = await serve(answer)
    restd = Restd(version="v0.0.38")
    restd.client = Client(path)
    runner = Listing()
    yield RestSlurm(runner, restd=restd, user="1000"), runner, server, answers  # type: ignore[arg-type]
    restd.client.close()


async def test_through_slurmrestd_a_look_is_one_request_kept_while_nothing_changed(
    rest: tuple[RestSlurm, Listing, Server, list[str]],
) -> None:
    slurm, runner, server, answers = rest
    first = dict((s.job_id, (u, s.status)) for u, s in await slurm.observe([OTHER, JobId(161613)]))
    assert first == {OTHER: ("slurmuser", JobStatus.PENDING), JobId(161613): (USER, JobStatus.RUNNING)}
    answers[0] = "unchanged"
    again = dict((s.job_id, (u, s.status)) for u, s in await slurm.observe([OTHER, JobId(161613)]))
    assert again == first
    assert b"/jobs?update_time=" in server.requests[1]
    assert (len(server.requests), runner.argvs) == (2, [])
    own = await slurm.queue([OTHER, JobId(161613)])
    assert [s.job_id for s in own] == [JobId(161613)], "red-box's own reading still shows only its user's"
