"""A tenant's SlurmJob stages its data through its own user's red-box: the prepare pod uploads into
the job's working directory as the tenant's user (the files are that user's), the job runs as
its tenant, and the collect pod brings the results back.

The staging pods run on the agent host (the in-memory API server's host kubelet) as UID 1000,
mounting the directory of the tenant user's red-box socket, which the kubelet publishes on its
nodes; each tenant user's red-box has a directory of its own (the rig's), which the site makes
reachable by the staging pods' UID (here: ``reachable``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.kubelet.helpers import eventually, unique
from tests.e2e.operator.stack import WITH_AGENT_HOST
from tests.e2e.tenancy.rig import Body, Rig, sacct, slurmjob_status
from tests.e2e.tenancy.tenants import TENANTS, Tenant
from tests.fixtures.shared_dirs import SharedDir
from wlmvk.core import names
from wlmvk.kube.bodies import NODES
from wlmvk.kube.client import KubeClient
from wlmvk.operator.controller import SLURMJOBS

pytestmark = [pytest.mark.slurm, pytest.mark.slurm_releases, WITH_AGENT_HOST]

BATCH = "#!/bin/sh\nmkdir bar\ncp inputs/foo.txt bar/output.txt\nid -un >> bar/output.txt\n"


@pytest.fixture
def reachable(tenancy: Rig) -> None:
    """Each tenant user's red-box socket reachable by the staging pods' UID (1000), as a site sets it."""
    for box in tenancy.boxes.values():
        Path(box.socket).parent.chmod(0o711)
        Path(box.socket).chmod(0o666)


def slurmjob(tenant: Tenant, name: str, inputs: Path, outputs: Path) -> Body:
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": {"name": name, "namespace": tenant.namespace},
        "spec": {
            "batch": BATCH,
            "nodeSelector": {names.LABEL_PARTITION: "debug"},
            "prepare": {"to": ".", "mount": {"name": "inputs", "hostPath": {"path": str(inputs)}}},
            "results": {"from": "bar", "mount": {"name": "outputs", "hostPath": {"path": str(outputs)}}},
        },
    }


async def test_each_tenants_slurmjob_stages_in_and_out_through_its_users_red_box(
    tenancy: Rig, operator: None, reachable: None, kube: KubeClient, shared_dir: SharedDir
) -> None:
    node = await kube.get(NODES, "slurm-test-debug")
    published = json.loads(node["metadata"]["annotations"][names.ANNOTATION_RED_BOX_SOCKETS])
    assert published == {user: box.socket for user, box in tenancy.boxes.items()}
    inputs = shared_dir("wlmvk-tenant-in-")
    (inputs / "foo.txt").write_text("foo\n")
    jobs: dict[Tenant, tuple[str, Path]] = {}
    for tenant in TENANTS:
        outputs = shared_dir("wlmvk-tenant-out-", 0o777)
        jobs[tenant] = (unique(f"stage-{tenant.name}"), outputs)
        await kube.create(
            SLURMJOBS, slurmjob(tenant, jobs[tenant][0], inputs, outputs), namespace=tenant.namespace
        )

    for tenant, (name, outputs) in jobs.items():
        status = await slurmjob_status(kube, tenant.namespace, name, "Succeeded", "Failed")
        assert status["status"] == "Succeeded", status
        # Uploaded as the tenant's user, into its red-box's working directory; run as its user.
        staged = tenancy.boxes[tenant.user].work_dir / status["workingDir"] / "inputs" / "foo.txt"
        assert (staged.read_text(), staged.owner()) == ("foo\n", tenant.user)
        assert (outputs / "bar" / "output.txt").read_text() == f"foo\n{tenant.user}\n"
        wanted = [[str(status["jobId"]), tenant.user, tenant.account, tenant.qos]]

        async def accounted(job_id: str = str(status["jobId"]), wanted: list[list[str]] = wanted) -> bool:
            return sacct("-j", job_id, "-o", "JobID,User,Account,QOS") == wanted

        await eventually(accounted, timeout=60)
