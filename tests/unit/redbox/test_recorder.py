"""red-box's end-of-job recorder survives an unexpected failure of one look at Slurm (issue 14)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from tests.unit.redbox.test_jobs import ScriptedSlurm, done
from wlmvk.core.jobs import JobId, JobSpec, JobState, JobStatus
from wlmvk.redbox.app import recorder
from wlmvk.redbox.files import Confinement
from wlmvk.redbox.jobs import Jobs
from wlmvk.redbox.store import Store


class BreaksOnce(ScriptedSlurm):
    """squeue fails once with an error nobody planned for, then answers."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    async def queue(self, job_ids: Sequence[JobId] | None = None) -> list[JobState]:
        if self.broken:
            self.broken = False
            raise RuntimeError("something new")
        return await super().queue(job_ids)


async def test_the_recorder_keeps_recording_after_an_unexpected_exception(tmp_path: Path) -> None:
    slurm = BreaksOnce()
    store = Store(tmp_path / "state")
    store.open()
    confinement = Confinement(tmp_path, [tmp_path])
    jobs = Jobs(slurm=slurm, store=store, confinement=confinement, max_script_bytes=1000, base_env={})  # type: ignore[arg-type]
    store.track(JobId(7))
    slurm.queued = {JobId(7): done(7, JobStatus.FAILED, 3)}
    task = asyncio.ensure_future(recorder(jobs, 0.01))
    try:
        for _ in range(500):
            recorded = store.get(JobId(7))
            if task.done() or (recorded is not None and recorded.status.terminal):
                break
            await asyncio.sleep(0.01)
        assert not task.done(), f"the recorder ended: {task.exception()!r}"
        assert not slurm.broken
        recorded = store.get(JobId(7))
        assert recorded is not None
        assert (recorded.status, recorded.exit_code) == (JobStatus.FAILED, 3)
    finally:
        task.cancel()
        store.close()


def following(tmp_path: Path, *job_ids: int) -> tuple[ScriptedSlurm, Store, Jobs]:
    """Jobs following ``job_ids``, each PENDING in a scripted Slurm."""
    slurm = ScriptedSlurm()
    store = Store(tmp_path / "state")
    store.open()
    confinement = Confinement(tmp_path, [tmp_path])
    jobs = Jobs(slurm=slurm, store=store, confinement=confinement, max_script_bytes=1000, base_env={})  # type: ignore[arg-type]
    for job in job_ids:
        store.track(JobId(job))
        slurm.queued[JobId(job)] = JobState(job_id=JobId(job), status=JobStatus.PENDING)
    return slurm, store, jobs


async def test_jobs_a_client_just_looked_at_are_not_asked_about_again(tmp_path: Path) -> None:
    """The kubelet's tick asks for every job it follows; the recorder must not ask Slurm again."""
    slurm, store, jobs = following(tmp_path, 7, 8)
    await jobs.states([JobId(7), JobId(8)])  # a client's JobStates
    slurm.calls.clear()
    assert await jobs.poll_unfinished(max_age=8.0) == 0
    assert slurm.calls == []
    assert await jobs.poll_unfinished(max_age=0.0) == 2, "unlooked-at for max_age: looked at"
    assert slurm.calls == ["squeue"]
    store.close()


async def test_a_job_nobody_looked_at_is_looked_at_with_the_others_in_one_squeue(tmp_path: Path) -> None:
    slurm, store, jobs = following(tmp_path, 7, 8)
    await jobs.states([JobId(7)])
    store.track(JobId(9))  # submitted since: never looked at
    slurm.queued[JobId(9)] = done(9, JobStatus.COMPLETED, 0)
    slurm.calls.clear()
    assert await jobs.poll_unfinished(max_age=8.0) == 2, "the unlooked-at ones: 8 and 9, not 7"
    assert slurm.calls == ["squeue"]
    recorded = store.get(JobId(9))
    assert recorded is not None
    assert recorded.status is JobStatus.COMPLETED
    store.close()


async def test_a_job_just_submitted_counts_as_looked_at(tmp_path: Path) -> None:
    """Slurm's acceptance is the job's first look: a burst of submissions is not polled at once."""
    slurm, store, jobs = following(tmp_path)
    keyed = await jobs.submit(JobSpec(script="#!/bin/sh\ntrue\n", idempotency_key="uid-1"))
    await jobs.submit(JobSpec(script="#!/bin/sh\ntrue\n"))  # without a key
    slurm.calls.clear()
    assert await jobs.poll_unfinished(max_age=8.0) == 0
    assert slurm.calls == []
    slurm.queued[keyed] = done(int(keyed), JobStatus.COMPLETED, 0)
    assert await jobs.poll_unfinished(max_age=0.0) == 2, "once max_age passed, both are looked at"
    assert slurm.calls == ["squeue"]
    recorded = store.get(keyed)
    assert recorded is not None
    assert recorded.status is JobStatus.COMPLETED
    store.close()
