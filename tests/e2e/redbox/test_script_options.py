"""What sbatch receives: a script's own --job-name, --output and --comment are kept.

red-box passed --job-name, --output and --comment=wlmvk:<key> on sbatch's command
line, which sbatch prefers to the script: a SlurmJob's own ``#SBATCH --job-name``
was always overridden and its comment lost. Now they give way to the script, and
the key rides ahead of the script's comment, where a red-box without any record
still finds it in Slurm.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.redbox.helpers import script, slurm_cmd, wait_for
from tests.fixtures.redbox import RedBox
from wlmvk.core.jobs import JobSpec, JobStatus
from wlmvk.redboxclient.client import RedBoxClient

pytestmark = pytest.mark.slurm


async def test_the_scripts_name_output_and_comment_win_and_the_key_is_still_found(
    redbox: RedBox, redbox_client: RedBoxClient, redbox_factory: Callable[..., RedBox]
) -> None:
    key = f"uid-{redbox.work_dir.name}"
    spec = JobSpec(
        script=script(
            "#SBATCH --hold",
            "#SBATCH --job-name=users-own",
            "#SBATCH --output=mine-%j.out",
            "#SBATCH --comment='a note of mine'",
            "echo hello",
        ),
        partition="debug",
        name="pod-name",
        working_dir="named",
        idempotency_key=key,
    )
    job_id = await redbox_client.submit(spec)
    held = await wait_for(redbox_client, job_id, lambda s: s.status is JobStatus.PENDING)
    assert held.name == "users-own"
    assert held.std_out == str(redbox.work_dir / "named" / f"mine-{job_id}.out"), (
        "the script's --output, as Slurm names the file"
    )
    assert slurm_cmd("squeue", "-h", "-j", str(job_id), "-o", "%k").strip() == f"wlmvk:{key} a note of mine"
    assert held.idempotency_key == key

    stranger = redbox_factory()  # no record of the job: only Slurm's comment can tell
    other = RedBoxClient(stranger.socket)
    try:
        found = await other.find(key)
        assert found is not None
        assert found.job_id == job_id
    finally:
        await other.close()
    slurm_cmd("scontrol", "release", str(job_id))
    final = await wait_for(redbox_client, job_id, lambda s: s.status.terminal)
    assert final.status is JobStatus.COMPLETED
    assert (redbox.work_dir / "named" / f"mine-{job_id}.out").read_text() == "hello\n"


async def test_a_silent_script_gets_the_requested_name(redbox: RedBox, redbox_client: RedBoxClient) -> None:
    spec = JobSpec(
        script=script("#SBATCH --hold", "true"), name="pod-name", idempotency_key=f"k-{redbox.work_dir.name}"
    )
    job_id = await redbox_client.submit(spec)
    held = await wait_for(redbox_client, job_id, lambda s: s.status is JobStatus.PENDING)
    assert held.name == "pod-name"
    assert (
        slurm_cmd("squeue", "-h", "-j", str(job_id), "-o", "%k").strip() == f"wlmvk:k-{redbox.work_dir.name}"
    )
    slurm_cmd("scancel", str(job_id))
