"""Status through a REST red-box: the last reading is given again only while no job changed.

red-box asks slurmrestd ``GET /jobs?update_time=T`` (one RPC) for each reading
and gives the kept one when no job of the cluster changed since T, else reads
the dump that answer is. A change made outside red-box (``scancel``), even in
the same second as the kept reading, must show in the very next answer.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.redbox.helpers import slurm_cmd
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.core.jobs import JobSpec
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = [pytest.mark.slurm, pytest.mark.slurm_releases]

HELD = "#!/bin/sh\n#SBATCH --hold\necho hello\n"


async def test_a_change_shows_in_the_next_answer(redbox_factory: Callable[..., RedBox]) -> None:
    box = redbox_factory("--slurm-api", "rest", user=JOB_OWNER)
    client = RedBoxClient(box.socket)
    try:
        for _ in range(5):
            job_id = await client.submit(JobSpec(script=HELD, partition="debug", idempotency_key=""))
            assert (await client.states([job_id]))[job_id].status.name == "PENDING"
            slurm_cmd("scancel", str(job_id))  # no wait: the same second as the squeue above
            assert (await client.states([job_id]))[job_id].status.name == "CANCELLED"
    finally:
        await client.close()
    assert "submitting through sbatch" not in box.log()
