"""An array job is reported as a whole, through real Slurm and red-box as the job owner (issue 14).

Task 1 of ``--array=0-3`` sleeps, task 2 exits 3: while task 1 runs the job is RUNNING with
its task counts; once all ended it is FAILED with exit code 3 (it was COMPLETED or RUNNING from
whichever task row came first, and squeue forgets each task MinJobAge after its end).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.redbox.helpers import script, terminal, wait_for
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.core.jobs import JobSpec, JobState, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm, pytest.mark.slurm_releases]

ARRAY = script(
    "#SBATCH --array=0-3",
    'case "$SLURM_ARRAY_TASK_ID" in 1) sleep 15 ;; 2) exit 3 ;; esac',
)


async def test_an_array_runs_while_a_task_runs_and_fails_when_one_failed(
    slurm: str, redbox_factory: Callable[..., RedBox]
) -> None:
    if slurm != "accounting":
        pytest.skip("needs Slurm with accounting (without it, squeue forgets the failed task)")
    box = redbox_factory(user=JOB_OWNER)
    client = RedBoxClient(box.socket, timeout=30.0)
    try:
        job = await client.submit(
            JobSpec(script=ARRAY, partition="debug", idempotency_key=f"arr-{box.work_dir.name}")
        )

        def failed_while_one_runs(state: JobState) -> bool:
            return "1 failed" in state.reason and "1 running" in state.reason

        # How many tasks wait for a CPU depends on what else runs on the shared Slurm.
        running = await wait_for(client, job, failed_while_one_runs)
        assert running.status is JobStatus.RUNNING
        assert running.reason.startswith("array of 4 tasks: ")
        ended = await wait_for(client, job, terminal)
        assert (ended.status, ended.exit_code) == (JobStatus.FAILED, 3)
        assert ended.reason == "array of 4 tasks: 3 completed, 1 failed"
    finally:
        await client.close()
