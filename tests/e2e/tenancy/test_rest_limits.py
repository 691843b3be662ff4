"""A QoS submit limit met through red-box's slurmrestd (``--slurm-api rest``) holds the pod
``Pending`` with Slurm's reason, as through sbatch, never Failed, and it runs once the limit frees.

slurmctld refuses the job (``ESLURM_ACCOUNTING_POLICY``, an error code of slurmctld's refusals):
red-box then asks sbatch, which refuses it in its own words, so both paths answer a limit alike
(``RESOURCE_EXHAUSTED``: nothing made, tried again by the kubelet).
"""

from __future__ import annotations

import pytest

from tests.e2e.tenancy.rig import Rig, submit_limit_holds_then_frees
from tests.e2e.tenancy.tenants import B
from wlmvk.kube.client import KubeClient

pytestmark = [pytest.mark.slurm, pytest.mark.slurm_releases]


@pytest.fixture
def tenant_redbox_args() -> tuple[str, ...]:
    return ("--slurm-api=rest",)


async def test_a_submit_limit_through_slurmrestd_holds_the_pod_pending_until_it_frees(
    tenancy: Rig, kube: KubeClient
) -> None:
    message = await submit_limit_holds_then_frees(kube)
    assert message == (
        "Slurm refused the job for now: SubmitJob: sbatch: sbatch: error: QOSMaxSubmitJobPerUserLimit\n"
        "sbatch: error: Batch job submission failed:"
        " Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
    )
    # The job went to slurmrestd first; its refusal sent it to sbatch, which named the limit.
    said = tenancy.boxes[B.user].log_path.read_text()
    assert "slurmrestd refused it" in said, said[-3000:]
