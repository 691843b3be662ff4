"""Jobs through a real red-box and the real Slurm: their states as a client sees them."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.redbox.helpers import read_text, script, slurm_cmd, wait_for
from tests.fixtures.redbox import RedBox
from wlmvk.core.jobs import JobSpec, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm, pytest.mark.slurm_releases]


async def test_job_goes_pending_running_completed(redbox: RedBox, redbox_client: RedBoxClient) -> None:
    spec = JobSpec(
        script=script("#SBATCH --hold", "echo started", "sleep 3", "echo done"),
        partition="debug",
        name="lifecycle",
        working_dir="lifecycle",
        std_out="out.txt",
    )
    job_id = await redbox_client.submit(spec)
    seen: list[JobStatus] = []
    held = await wait_for(redbox_client, job_id, lambda s: s.status is JobStatus.PENDING, seen=seen)
    assert held.reason == "JobHeldUser"
    assert held.name == "lifecycle"
    assert held.working_dir == str(redbox.work_dir / "lifecycle")
    assert held.std_out == str(redbox.work_dir / "lifecycle" / "out.txt")
    slurm_cmd("scontrol", "release", str(job_id))
    await wait_for(redbox_client, job_id, lambda s: s.status is JobStatus.RUNNING, seen=seen)
    final = await wait_for(redbox_client, job_id, lambda s: s.status.terminal, seen=seen)
    assert seen[0] is JobStatus.PENDING
    assert JobStatus.RUNNING in seen
    assert final.status is JobStatus.COMPLETED
    assert final.exit_code == 0
    assert final.start_time is not None
    assert final.end_time is not None
    assert final.end_time >= final.start_time
    assert (redbox.work_dir / "lifecycle" / "out.txt").read_text() == "started\ndone\n"


async def test_failing_job_reports_its_exit_code(redbox_client: RedBoxClient) -> None:
    job_id = await redbox_client.submit(JobSpec(script=script("echo oops >&2", "exit 3")))
    final = await wait_for(redbox_client, job_id, lambda s: s.status.terminal)
    assert final.status is JobStatus.FAILED
    assert final.exit_code == 3
    assert final.reason == "NonZeroExitCode"


async def test_cancelled_job(redbox_client: RedBoxClient) -> None:
    job_id = await redbox_client.submit(JobSpec(script=script("sleep 120")))
    await wait_for(redbox_client, job_id, lambda s: s.status in {JobStatus.PENDING, JobStatus.RUNNING})
    await redbox_client.cancel(job_id)
    final = await wait_for(redbox_client, job_id, lambda s: s.status.terminal)
    assert final.status is JobStatus.CANCELLED
    await redbox_client.cancel(job_id)  # cancelling a finished job is harmless


async def test_environment_and_job_name_reach_the_job(redbox: RedBox, redbox_client: RedBoxClient) -> None:
    spec = JobSpec(
        script=script('echo "$GREETING|$SLURM_JOB_NAME"'),
        name="env-check",
        env={"GREETING": "hello, world; with commas"},
        std_out="env.out",
    )
    job_id = await redbox_client.submit(spec)
    final = await wait_for(redbox_client, job_id, lambda s: s.status.terminal)
    assert final.status is JobStatus.COMPLETED
    assert read_text(final.std_out) == "hello, world; with commas|env-check\n"


async def test_same_idempotency_key_twice_makes_one_job(redbox: RedBox, redbox_client: RedBoxClient) -> None:
    key = f"pod-uid-{redbox.work_dir.name}"
    spec = JobSpec(script=script("#SBATCH --hold", "true"), idempotency_key=key)
    first, second = await asyncio.gather(redbox_client.submit(spec), redbox_client.submit(spec))
    assert first == second
    again = await redbox_client.submit(spec)
    assert again == first
    comments = slurm_cmd("squeue", "-h", "-t", "all", "-o", "%i %k").splitlines()
    assert [line.split()[0] for line in comments if line.endswith(f"wlmvk:{key}")] == [str(first)]
    found = await redbox_client.find(key)
    assert found is not None
    assert found.job_id == first
    assert found.idempotency_key == key
    assert await redbox_client.find("never-used-key") is None
    await redbox_client.cancel(first)


async def test_unknown_job_is_not_found(redbox_client: RedBoxClient) -> None:
    states = await redbox_client.states([999_999_1])
    assert states[999_999_1].status is JobStatus.NOT_FOUND
