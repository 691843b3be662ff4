"""Jobs that have ended and left squeue still answer: from sacct, or from red-box's own record.

Slurm drops a finished job from squeue MinJobAge (10 s here) after its end,
10-19 s in practice. With accounting, sacct answers (a red-box that never
saw the job can tell); without it, red-box's on-disk record does, also
after a red-box restart. The time-limit test waits 60-90 s for Slurm's
sweep, so it runs concurrently with the leaving-squeue checks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from grpclib import GRPCError
from grpclib.client import Channel
from grpclib.const import Status

from tests.e2e.redbox.helpers import script, wait_for, wait_gone_from_squeue
from tests.fixtures.redbox import RedBox
from wlmvk._proto import api
from wlmvk.core.jobs import JobSpec, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = pytest.mark.slurm_releases

Factory = Callable[..., RedBox]


async def _time_limit(client: RedBoxClient) -> None:
    job_id = await client.submit(JobSpec(script=script("#SBATCH --time=1", "sleep 300"), partition="debug"))
    final = await wait_for(client, job_id, lambda s: s.status.terminal, timeout=180)
    assert final.status is JobStatus.TIMEOUT
    assert final.reason == "TimeLimit"


async def _left_squeue_with_accounting(box: RedBox, client: RedBoxClient, factory: Factory) -> None:
    job_id = await client.submit(JobSpec(script=script("exit 5"), idempotency_key=f"k-{box.work_dir.name}"))
    await wait_for(client, job_id, lambda s: s.status.terminal)
    await wait_gone_from_squeue(job_id)
    state = (await client.states([job_id]))[job_id]
    assert (state.status, state.exit_code) == (JobStatus.FAILED, 5)

    stranger = factory()  # a fresh red-box with no record of the job: only sacct knows it
    other = RedBoxClient(stranger.socket)
    try:
        state = (await other.states([job_id]))[job_id]
        assert (state.status, state.exit_code) == (JobStatus.FAILED, 5)
        assert state.end_time is not None
        found = await other.find(f"k-{box.work_dir.name}")
        assert found is not None
        assert found.job_id == job_id, "the idempotency key is found in accounting"
    finally:
        await other.close()


@pytest.mark.slurm
async def test_time_limit_and_jobs_that_left_squeue_with_accounting(
    slurm: str, redbox_factory: Factory
) -> None:
    if slurm != "accounting":
        pytest.skip("needs Slurm with accounting")
    box, timer = redbox_factory(), redbox_factory()
    client, timer_client = RedBoxClient(box.socket), RedBoxClient(timer.socket)
    try:
        await asyncio.gather(
            _time_limit(timer_client), _left_squeue_with_accounting(box, client, redbox_factory)
        )
    finally:
        await client.close()
        await timer_client.close()


@pytest.mark.slurm
@pytest.mark.noaccounting
async def test_jobs_that_left_squeue_without_accounting(slurm: str, redbox_factory: Factory) -> None:
    if slurm != "no-accounting":
        pytest.skip("needs Slurm without accounting")
    box = redbox_factory("--poll-interval", "1")
    client = RedBoxClient(box.socket)
    try:
        key = f"k-{box.work_dir.name}"
        failed = await client.submit(JobSpec(script=script("exit 7"), idempotency_key=key))
        fine = await client.submit(JobSpec(script=script("true")))
        # Nobody asks while the jobs run and end: red-box's recorder must notice by itself.
        await wait_gone_from_squeue(failed)
        await wait_gone_from_squeue(fine)
        states = await client.states([failed, fine])
        assert (states[failed].status, states[failed].exit_code) == (JobStatus.FAILED, 7)
        assert (states[fine].status, states[fine].exit_code) == (JobStatus.COMPLETED, 0)
        assert states[failed].std_out.endswith(f"slurm-{failed}.out")

        await asyncio.to_thread(box.restart)
        states = await client.states([failed, fine])
        assert (states[failed].status, states[failed].exit_code) == (JobStatus.FAILED, 7)
        assert states[fine].status is JobStatus.COMPLETED
        found = await client.find(key)
        assert found is not None
        assert found.job_id == failed
        unknown = await client.states([999_999_1])  # type: ignore[list-item]
        assert unknown[999_999_1].status is JobStatus.NOT_FOUND  # type: ignore[index]

        channel = Channel(path=box.socket)
        try:
            stub = api.WorkloadManagerStub(channel)
            info = (await stub.job_info(api.JobInfoRequest(job_id=failed))).info[0]
            assert (info.status, info.exit_code) == (api.JobStatus.FAILED, "7:0")
            with pytest.raises(GRPCError) as no_steps:
                await stub.job_steps(api.JobStepsRequest(job_id=failed))
            assert no_steps.value.status is Status.FAILED_PRECONDITION
        finally:
            channel.close()
    finally:
        await client.close()
