"""A REST red-box reads its jobs from slurmrestd's dump exactly as a CLI red-box reads them from squeue.

Two red-boxes of the job owner side by side, one ``--slurm-api cli`` (squeue)
and one ``--slurm-api rest`` (``GET /jobs``, read by ``restjobs``), are asked
for the same jobs of every kind: held, pending until a begin time, running,
completed, failed, killed by a signal, cancelled, timed out, an array partly
running and partly pending, output patterns.
The CLI red-box is asked before and after the REST one: when its two answers
agree nothing changed in between, and the REST answer must equal them field by
field. Each kind is compared while Slurm still lists it (MinJobAge after its end).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Callable, Mapping, Sequence

import pytest

from tests.e2e.redbox.helpers import slurm_cmd, wait_for
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.core.jobs import JobId, JobSpec, JobState, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm, pytest.mark.slurm_releases]

COMPARE_TIMEOUT = 60.0


def job(*lines: str) -> str:
    return "\n".join(["#!/bin/sh", *lines]) + "\n"


LIVE = {
    "held": job("#SBATCH --hold", "true"),
    "later": job("#SBATCH --begin=now+3600", "#SBATCH --error=err-%j.txt", "true"),
    "running": job("#SBATCH --output=run-%x-%N-%u.out", "sleep 600"),
    "array": job("#SBATCH --array=0-5%2", "#SBATCH --output=arr-%A_%a.out", "sleep 600"),
}
ENDING = {
    "completed": job("true"),
    "failed": job("exit 3"),
    "signalled": job("kill -9 $$"),
    "cancelled": job("sleep 600"),
}
# An ended array is not among them: red-box answers it from accounting (squeue forgets each task
# MinJobAge after it ends) and keeps the first answer, so two red-boxes asked a moment apart may
# rightly differ; the dump's reading of one is compared with squeue's in test_dump.py.
TIMEOUT = job("#SBATCH --time=1", "#SBATCH --output=to-%x-%j.log", "sleep 600")


async def _submit(client: RedBoxClient, scripts: Mapping[str, str]) -> dict[str, JobId]:
    return {
        name: await client.submit(
            JobSpec(
                script=text, partition="debug", idempotency_key=f"{name}-{uuid.uuid4().hex[:12]}", name=name
            )
        )
        for name, text in scripts.items()
    }


def _rows(job_ids: Sequence[JobId]) -> list[tuple[int, str]]:
    """squeue's own rows of these jobs: (the job's id, its state), one per row (array tasks too)."""
    out = slurm_cmd("squeue", "-h", "-t", "all", "-j", ",".join(map(str, job_ids)), "-o", "%A %T")
    return [(int(job), state) for job, state in (line.split() for line in out.splitlines() if line.strip())]


async def _ended(job_ids: Sequence[JobId]) -> None:
    """Until squeue itself shows every row of these jobs ended: neither red-box has seen them end
    before the comparison (each keeps the first ending it reads of an array from accounting)."""
    deadline = time.monotonic() + COMPARE_TIMEOUT
    while True:
        rows = _rows(job_ids)
        ended = {job for job, state in rows if state in JobStatus.__members__ and JobStatus[state].terminal}
        if ended >= set(job_ids) and all(job in ended for job, _ in rows):
            return
        assert time.monotonic() < deadline, f"still {rows} after {COMPARE_TIMEOUT} s"
        await asyncio.sleep(0.2)


def _differences(by_cli: Mapping[JobId, JobState], by_rest: Mapping[JobId, JobState]) -> list[str]:
    """Each field in which the two answers differ: job, field, CLI's value, REST's value."""
    found = [f"job {job_id}: only one answered" for job_id in set(by_cli) ^ set(by_rest)]
    for job_id in set(by_cli) & set(by_rest):
        for field in dataclasses.fields(JobState):
            cli_value, rest_value = getattr(by_cli[job_id], field.name), getattr(by_rest[job_id], field.name)
            if cli_value != rest_value:
                name = by_cli[job_id].name
                found.append(f"job {job_id} ({name}) {field.name}: cli {cli_value!r}, rest {rest_value!r}")
    return found


async def _same_reading(cli: RedBoxClient, rest: RedBoxClient, ids: Sequence[JobId]) -> dict[JobId, JobState]:
    """The REST red-box's answer, checked against the CLI red-box's when nothing changed around it."""
    deadline = time.monotonic() + COMPARE_TIMEOUT
    while True:
        before = dict(await cli.states(ids))
        through_rest = dict(await rest.states(ids))
        after = dict(await cli.states(ids))
        if before == after:
            assert _differences(before, through_rest) == []
            return through_rest
        assert time.monotonic() < deadline, f"the jobs kept changing for {COMPARE_TIMEOUT} s"


def _count(seen: dict[JobStatus, int], states: Mapping[JobId, JobState], ids: Sequence[JobId]) -> None:
    """Count the statuses compared of jobs squeue still lists after the comparison: theirs were
    read from squeue and the dump, not from accounting."""
    listed = {job for job, _ in _rows(ids)}
    for job_id, state in states.items():
        if job_id in listed:
            seen[state.status] = seen.get(state.status, 0) + 1


async def test_the_dump_reads_as_squeue(redbox_factory: Callable[..., RedBox]) -> None:
    # The jobs are submitted through a third red-box: one that submitted a job remembers its
    # paths, which accounting (asked about an ended array) does not give.
    submitter = RedBoxClient(redbox_factory("--slurm-api", "cli", user=JOB_OWNER).socket)
    by_cli = redbox_factory("--slurm-api", "cli", user=JOB_OWNER)
    by_rest = redbox_factory("--slurm-api", "rest", user=JOB_OWNER)
    cli, rest = RedBoxClient(by_cli.socket), RedBoxClient(by_rest.socket)
    seen: dict[JobStatus, int] = {}
    try:
        timing_out = (await _submit(submitter, {"timeout": TIMEOUT}))["timeout"]
        live = await _submit(submitter, LIVE)
        await wait_for(cli, live["running"], lambda s: s.status is JobStatus.RUNNING)
        await wait_for(cli, live["array"], lambda s: s.status is JobStatus.RUNNING)
        ending = await _submit(submitter, ENDING)
        await wait_for(cli, ending["cancelled"], lambda s: s.status is JobStatus.RUNNING)
        slurm_cmd("scancel", str(ending["cancelled"]))
        await _ended(list(ending.values()))
        ids = [*live.values(), *ending.values(), timing_out]
        _count(seen, await _same_reading(cli, rest, ids), ids)

        await wait_for(cli, timing_out, lambda s: s.status is JobStatus.TIMEOUT, timeout=180)
        _count(
            seen, await _same_reading(cli, rest, [*live.values(), timing_out]), [*live.values(), timing_out]
        )
        for job_id in [*live.values(), timing_out]:
            await cli.cancel(job_id)
    finally:
        await submitter.close()
        await cli.close()
        await rest.close()
    assert set(seen) == {
        JobStatus.PENDING,
        JobStatus.RUNNING,
        JobStatus.COMPLETED,
        JobStatus.FAILED,
        JobStatus.CANCELLED,
        JobStatus.TIMEOUT,
    }
    log = by_rest.log()
    assert "states read from the dump" in log
    # squeue only where the shared cluster held more jobs than a dump is read for (DUMP_MAX_JOBS):
    # never for a dump that did not read, nor for an error of slurmrestd.
    fallbacks = [line for line in log.splitlines() if "status through squeue" in line]
    assert [line for line in fallbacks if "the dump held" not in line] == []
