"""Jobs' bookkeeping against a scripted Slurm: call counts, merging of sources, per-key submits.

The fake stands in for ``slurm.commands.Slurm`` only here, where the point
is how many commands red-box runs and how it combines their answers; the
real commands are exercised end to end in tests/e2e/redbox.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from wlmvk.core.errors import InvalidInput, NotFound, Unavailable
from wlmvk.core.jobs import JobId, JobSpec, JobState, JobStatus
from wlmvk.redbox.files import Confinement
from wlmvk.redbox.jobs import (
    KEY_INDEX_FULL,
    KEY_INDEX_OVERLAP,
    KEY_INDEX_STALE,
    KEY_INDEX_TTL,
    LOST_REASON,
    Jobs,
)
from wlmvk.redbox.store import Store


class ScriptedSlurm:
    def __init__(self) -> None:
        self.queued: dict[JobId, JobState] = {}
        self.accounted: dict[JobId, JobState] | None = {}
        self.calls: list[str] = []
        self.next_id = 100
        self.submitted: list[Sequence[str]] = []
        self.since: list[float | None] = []  # each accounting_keys' start
        self.queue_gate: asyncio.Event | None = None  # when set up, squeue answers once it is set

    async def submit(
        self, script: bytes, options: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> JobId:
        self.calls.append("sbatch")
        await asyncio.sleep(0.01)
        self.next_id += 1
        job = JobId(self.next_id)
        key = next((o.split(":", 1)[1] for o in options if o.startswith("--comment=wlmvk:")), "")
        self.queued[job] = JobState(job_id=job, status=JobStatus.PENDING, idempotency_key=key)
        self.submitted.append(options)
        return job

    async def queue(self, job_ids: Sequence[JobId] | None = None) -> list[JobState]:
        self.calls.append("squeue")
        if self.queue_gate is not None:
            await self.queue_gate.wait()
        return [s for j, s in self.queued.items() if job_ids is None or j in job_ids]

    async def own_keys(self) -> dict[str, JobId]:
        return _newest(await self.queue())

    async def accounting(self, job_ids: Sequence[JobId]) -> list[JobState] | None:
        self.calls.append("sacct")
        if self.accounted is None:
            return None
        return [s for j, s in self.accounted.items() if j in job_ids]

    async def accounting_keys(self, since: float | None = None) -> dict[str, JobId] | None:
        self.calls.append("sacct")
        self.since.append(since)
        return None if self.accounted is None else _newest(list(self.accounted.values()))

    async def message_timeout(self) -> float:
        return 0.0


def _newest(states: list[JobState]) -> dict[str, JobId]:
    """Each key's newest job among ``states``, as Slurm's keys reading answers (``cli.keys``)."""
    newest: dict[str, JobId] = {}
    for state in sorted(states, key=lambda s: s.job_id):
        if state.idempotency_key:
            newest[state.idempotency_key] = state.job_id
    return newest


@pytest.fixture
def slurm() -> ScriptedSlurm:
    return ScriptedSlurm()


@pytest.fixture
def jobs(slurm: ScriptedSlurm, tmp_path: Path) -> Jobs:
    store = Store(tmp_path / "state")
    store.open()
    (tmp_path / "work").mkdir()
    return Jobs(
        slurm=slurm,  # type: ignore[arg-type]
        store=store,
        confinement=Confinement(tmp_path / "work", [tmp_path / "work"]),
        max_script_bytes=1000,
        base_env={},
    )


def done(job: int, status: JobStatus = JobStatus.COMPLETED, code: int = 0) -> JobState:
    return JobState(job_id=JobId(job), status=status, exit_code=code)


async def test_many_ids_one_squeue_and_at_most_one_sacct(jobs: Jobs, slurm: ScriptedSlurm) -> None:
    slurm.queued = {JobId(i): JobState(job_id=JobId(i), status=JobStatus.RUNNING) for i in range(1, 501)}
    slurm.accounted = {JobId(i): done(i) for i in range(501, 1001)}
    states = await jobs.states([JobId(i) for i in range(1, 1101)])
    assert slurm.calls == ["squeue", "sacct"]
    assert states[JobId(1)].status is JobStatus.RUNNING
    assert states[JobId(700)].status is JobStatus.COMPLETED
    assert states[JobId(1100)].status is JobStatus.NOT_FOUND
    slurm.calls.clear()
    await jobs.states([JobId(i) for i in range(1, 501)])
    assert slurm.calls == ["squeue"], "no sacct when squeue knows every job"


async def test_recorded_ends_answer_without_sacct(jobs: Jobs, slurm: ScriptedSlurm) -> None:
    slurm.queued = {JobId(5): done(5, JobStatus.FAILED, 3)}
    await jobs.states([JobId(5)])
    slurm.queued.clear()
    slurm.calls.clear()
    state = (await jobs.states([JobId(5)]))[JobId(5)]
    assert (state.status, state.exit_code) == (JobStatus.FAILED, 3)
    assert slurm.calls == ["squeue"]


async def test_without_accounting_sacct_is_not_asked_again_soon(jobs: Jobs, slurm: ScriptedSlurm) -> None:
    slurm.accounted = None
    await jobs.states([JobId(1)])
    await jobs.states([JobId(2)])
    assert slurm.calls == ["squeue", "sacct", "squeue"]


async def test_a_followed_job_that_vanished_unseen_is_not_found_with_its_reason(
    jobs: Jobs, slurm: ScriptedSlurm
) -> None:
    slurm.accounted = None
    job = await jobs.submit(JobSpec(script="#!/bin/sh\n", idempotency_key="uid-lost"))
    slurm.queued.clear()
    state = await jobs.state(job)
    assert (state.status, state.reason) == (JobStatus.NOT_FOUND, LOST_REASON)
    assert await jobs.poll_unfinished() == 0, "the recorder stops asking about it"
    await jobs.cancel(job)  # nothing left to cancel: it completes
    assert "scancel" not in slurm.calls
    with pytest.raises(NotFound, match="unknown to Slurm and red-box"):
        await jobs.cancel(JobId(77))


async def test_racing_submissions_with_one_key_make_one_job(jobs: Jobs, slurm: ScriptedSlurm) -> None:
    spec = JobSpec(script="#!/bin/sh\n", idempotency_key="uid-1")
    ids = await asyncio.gather(*(jobs.submit(spec) for _ in range(5)))
    assert len(set(ids)) == 1
    assert slurm.calls.count("sbatch") == 1
    other = await jobs.submit(replace(spec, idempotency_key="uid-2"))
    assert other != ids[0]


async def test_concurrent_lookups_share_one_scan(jobs: Jobs, slurm: ScriptedSlurm) -> None:
    specs = [JobSpec(script="#!/bin/sh\n", idempotency_key=f"k{i}") for i in range(8)]
    await asyncio.gather(*(jobs.submit(s) for s in specs))
    assert slurm.calls.count("squeue") == 1
    assert slurm.calls.count("sacct") == 1
    assert slurm.calls.count("sbatch") == 8


async def test_submissions_answer_from_an_expired_key_index_while_a_new_one_is_built(
    jobs: Jobs, slurm: ScriptedSlurm
) -> None:
    script = "#!/bin/sh\n"
    await jobs.submit(JobSpec(script=script, idempotency_key="k0"))  # the first index: waited for
    slurm.queued[JobId(42)] = JobState(job_id=JobId(42), status=JobStatus.PENDING, idempotency_key="k42")
    slurm.queue_gate = asyncio.Event()  # the next scan takes its time
    jobs._index_at -= KEY_INDEX_TTL + 1
    await asyncio.wait_for(jobs.submit(JobSpec(script=script, idempotency_key="k1")), 5)
    assert slurm.calls.count("squeue") == 2  # the rebuild started, and was not waited for
    slurm.queue_gate.set()
    await asyncio.sleep(0.01)
    assert await jobs.submit(JobSpec(script=script, idempotency_key="k42")) == 42  # from the new index
    # Past the grace too, a submission waits for the new index.
    slurm.queue_gate = asyncio.Event()
    jobs._index_at -= KEY_INDEX_TTL + KEY_INDEX_STALE + 1
    waiting = asyncio.ensure_future(jobs.submit(JobSpec(script=script, idempotency_key="k2")))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    slurm.queue_gate.set()
    await asyncio.wait_for(waiting, 5)
    assert slurm.calls.count("sbatch") == 3


async def test_a_rebuilt_key_index_reads_the_accounting_since_its_last_read_and_all_of_it_hourly(
    jobs: Jobs, slurm: ScriptedSlurm
) -> None:
    assert slurm.accounted is not None
    slurm.accounted[JobId(7)] = replace(done(7), idempotency_key="k7")
    before = time.time()
    assert await jobs.find("k7") is not None  # the first build reads all of the window
    assert slurm.since == [None]
    del slurm.accounted[JobId(7)]  # read already: a later read from a later start lacks it
    slurm.accounted[JobId(8)] = replace(done(8), idempotency_key="k8")
    jobs._index_at -= KEY_INDEX_TTL + KEY_INDEX_STALE + 1
    assert [await jobs.job_for_key(k, max_age=KEY_INDEX_TTL) for k in ("k7", "k8")] == [7, 8]
    last = slurm.since[-1]
    assert last is not None
    assert before - KEY_INDEX_OVERLAP <= last <= time.time() - KEY_INDEX_OVERLAP
    assert set(jobs._index) == {"k7", "k8"}
    # An hour on, the index is built afresh: a key no longer in Slurm is gone from it (red-box's
    # own record keeps the keys it found).
    jobs._index_full_at -= KEY_INDEX_FULL + 1
    jobs._index_at -= KEY_INDEX_TTL + KEY_INDEX_STALE + 1
    assert await jobs.job_for_key("k9", max_age=KEY_INDEX_TTL) is None
    assert slurm.since[-1] is None
    assert set(jobs._index) == {"k8"}


async def test_a_key_from_a_lost_record_is_found_in_slurm(jobs: Jobs, slurm: ScriptedSlurm) -> None:
    slurm.accounted = {JobId(42): replace(done(42), idempotency_key="old-uid")}
    assert await jobs.submit(JobSpec(script="#!/bin/sh\n", idempotency_key="old-uid")) == 42
    found = await jobs.find("old-uid")
    assert found is not None
    assert found.job_id == 42
    assert "sbatch" not in slurm.calls


async def test_submit_options_and_working_dir(jobs: Jobs, slurm: ScriptedSlurm, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="outside"):
        await jobs.submit(JobSpec(script="#!/bin/sh\n", std_err="/etc/cron.d/evil"))
    await jobs.submit(
        JobSpec(script="#!/bin/sh\n", partition="p", name="n", working_dir="w/x", std_out="o.txt")
    )
    options = slurm.submitted[-1]
    work = tmp_path / "work" / "w" / "x"
    assert work.is_dir()
    assert list(options) == ["--partition=p", "--job-name=n", f"--chdir={work}", f"--output={work / 'o.txt'}"]


async def test_ids_that_cannot_exist_are_not_found_without_asking(jobs: Jobs, slurm: ScriptedSlurm) -> None:
    states = await jobs.states([JobId(0), JobId(-4)])
    assert {s.status for s in states.values()} == {JobStatus.NOT_FOUND}
    assert "sacct" not in slurm.calls


async def test_a_sick_accounting_database_does_not_hide_squeue_answers(
    jobs: Jobs, slurm: ScriptedSlurm
) -> None:
    async def broken(job_ids: Sequence[JobId]) -> list[JobState] | None:
        raise Unavailable("sacct: error: Problem talking to the database: Connection refused")

    slurm.accounting = broken  # type: ignore[method-assign]
    slurm.queued = {JobId(1): JobState(job_id=JobId(1), status=JobStatus.RUNNING)}
    followed = await jobs.submit(JobSpec(script="#!/bin/sh\n"))
    slurm.queued.pop(followed)
    states = await jobs.states([JobId(1), JobId(2), followed])
    assert states[JobId(1)].status is JobStatus.RUNNING
    assert states[JobId(2)].status is JobStatus.UNKNOWN
    assert "database" in states[JobId(2)].reason
    assert states[followed].status is JobStatus.UNKNOWN
    assert await jobs.poll_unfinished() == 1, "a job is not written off while accounting is down"


async def test_a_caller_cancelled_mid_submit_does_not_lose_the_job(jobs: Jobs, slurm: ScriptedSlurm) -> None:
    """A client that dies while sbatch runs: the job is still recorded under its key."""
    spec = JobSpec(script="#!/bin/sh\ntrue\n", idempotency_key="uid-cancelled")
    first = asyncio.ensure_future(jobs.submit(spec))
    await asyncio.sleep(0.001)  # sbatch is under way
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    # The restarted caller looks the key up, then submits again: one job all along.
    found = await jobs.find("uid-cancelled")
    again = await jobs.submit(spec)
    assert found is not None
    assert again == found.job_id
    assert slurm.calls.count("sbatch") == 1


async def test_a_lookup_during_a_submit_waits_for_its_answer(jobs: Jobs, slurm: ScriptedSlurm) -> None:
    spec = JobSpec(script="#!/bin/sh\ntrue\n", idempotency_key="uid-racing")
    submitting = asyncio.ensure_future(jobs.submit(spec))
    await asyncio.sleep(0.001)
    found = await jobs.find("uid-racing")
    assert found is not None
    assert found.job_id == await submitting
    assert slurm.calls.count("sbatch") == 1


async def test_a_submit_cut_short_by_a_crash_is_looked_up_fresh(slurm: ScriptedSlurm, tmp_path: Path) -> None:
    """red-box died between sbatch and recording the job id: the next red-box asks Slurm afresh."""
    (tmp_path / "work").mkdir()

    def make() -> Jobs:
        store = Store(tmp_path / "state")
        store.open()
        return Jobs(
            slurm=slurm,  # type: ignore[arg-type]
            store=store,
            confinement=Confinement(tmp_path / "work", [tmp_path / "work"]),
            max_script_bytes=1000,
            base_env={},
        )

    before = make()
    before.store.intend("uid-crashed")  # written ahead of sbatch, then red-box was killed
    before.store.close()
    after = make()
    await after.find("uid-other")  # a recent index, built before the orphaned sbatch finished
    made = await slurm.submit(b"#!/bin/sh\n", ["--comment=wlmvk:uid-crashed"])
    spec = JobSpec(script="#!/bin/sh\ntrue\n", idempotency_key="uid-crashed")
    assert await after.submit(spec) == made
    assert slurm.calls.count("sbatch") == 1


async def test_an_array_that_squeue_says_completed_is_asked_of_accounting(
    jobs: Jobs, slurm: ScriptedSlurm
) -> None:
    """squeue forgets each task MinJobAge after its end: a failed task may be gone from it."""
    lone = JobState(
        job_id=JobId(9), status=JobStatus.COMPLETED, exit_code=0, reason="array of 1 tasks: 1 completed"
    )
    failed = JobState(
        job_id=JobId(9),
        status=JobStatus.FAILED,
        exit_code=3,
        reason="array of 6 tasks: 5 completed, 1 failed",
    )
    slurm.queued = {JobId(9): lone}
    slurm.accounted = {JobId(9): failed}
    assert (await jobs.state(JobId(9))).status is JobStatus.FAILED
    slurm.queued, slurm.accounted = {JobId(10): replace(lone, job_id=JobId(10))}, None
    assert (await jobs.state(JobId(10))).status is JobStatus.COMPLETED, (
        "without accounting squeue's word stands"
    )


async def test_keys_not_read_at_start_are_read_by_the_first_keyed_submission(
    jobs: Jobs, slurm: ScriptedSlurm
) -> None:
    async def unanswered() -> dict[str, JobId]:
        slurm.calls.append("squeue")
        raise Unavailable("squeue: slurmctld does not answer")

    slurm.own_keys = unanswered  # type: ignore[method-assign]
    await jobs.warm_index()  # red-box starts anyway
    assert slurm.calls == ["squeue"]
    del slurm.own_keys  # Slurm answers again
    slurm.calls.clear()
    job = await jobs.submit(JobSpec(script="#!/bin/sh\ntrue\n", partition="p", idempotency_key="k1"))
    assert slurm.calls == ["squeue", "sacct", "sbatch"]  # the read the start could not make, then sbatch
    assert job == JobId(101)


async def test_a_scan_that_ended_before_its_callback_ran_is_not_awaited_again(
    jobs: Jobs, slurm: ScriptedSlurm
) -> None:
    """The window between a key index scan's end and its done-callback: a lookup that needs a newer
    scan starts one (it used to await the ended scan over and over, never yielding to the loop)."""
    ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    ended.set_result(None)
    jobs._index_scan = ended  # ended, its callback not run yet
    index = await asyncio.wait_for(jobs._index_since(time.monotonic()), 5)
    assert index == {}
    assert slurm.calls == ["squeue", "sacct"]  # a scan of its own
    assert jobs._index_scan is None  # its callback ran; the ended one left nothing behind
