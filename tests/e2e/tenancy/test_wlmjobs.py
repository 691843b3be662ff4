"""WlmJobs of each tenant's namespace run as its tenant's user, account and QoS (as ``sacct``
reports them), not under the user's default account: red-box writes a container job's script,
and the kubelet asks it for the tenant's account and QoS.

Each tenant user's default account is another than its tenant's, so a job charged by default
would show there: on the host's Slurm the fixture makes it so (``<account>-home``, with the
cluster's default QoS); a release's box has it so already (the job owners' account). The image is
a SIF built here and run by Apptainer (``tests.fixtures.apptainer``), as each tenant's own user.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from tests.e2e.kubelet.helpers import eventually, unique
from tests.e2e.tenancy.rig import Body, Rig, sacct
from tests.e2e.tenancy.tenants import TENANTS, Tenant, sacctmgr
from tests.faults import ownslurm
from tests.fixtures import apptainer
from tests.fixtures.shared_dirs import SharedDir
from wlmvk.core import names
from wlmvk.kube.client import KubeClient
from wlmvk.operator.controller import WLMJOBS
from wlmvk_dev.images import busybox_rootfs, sif

pytestmark = [pytest.mark.slurm, pytest.mark.slurm_releases, apptainer.NEEDED]

ENTRYPOINT = 'id -un\necho written > "owned-by-$(id -un)"\n'


@pytest.fixture
def tenant_redbox_args() -> tuple[str, ...]:
    return ("--container-runtime", "apptainer", "--runtime-path", str(apptainer.BIN))


def default_account(user: str, cluster: str) -> str:
    """The account Slurm charges ``user``'s jobs on ``cluster`` to when they name none."""
    argv = ["sacctmgr", "-n", "-P", "show", "user", user, "withassoc", f"cluster={cluster}"]
    out = subprocess.run([*argv, "format=DefaultAccount"], capture_output=True, text=True, check=True)
    (account,) = set(out.stdout.split())
    return account


@pytest.fixture
def home_accounts(tenant_slurm: ownslurm.Instance) -> Iterator[None]:
    """Each tenant user's default account another than its tenant's, for this test (made so where it
    is the tenant's, and back after)."""
    cluster = f"cluster={tenant_slurm.cluster}"
    made = [t for t in TENANTS if default_account(t.user, tenant_slurm.cluster) == t.account]
    for tenant in made:
        sacctmgr("add", "account", f"{tenant.account}-home", cluster)
        sacctmgr("add", "user", tenant.user, f"account={tenant.account}-home", cluster)
        sacctmgr(
            "modify", "user", tenant.user, "where", cluster, "set", f"defaultaccount={tenant.account}-home"
        )
    for tenant in TENANTS:
        assert default_account(tenant.user, tenant_slurm.cluster) != tenant.account
    yield
    for tenant in made:
        sacctmgr("modify", "user", tenant.user, "where", cluster, "set", f"defaultaccount={tenant.account}")


def wlmjob(tenant: Tenant, name: str, image: str) -> Body:
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "WlmJob",
        "metadata": {"name": name, "namespace": tenant.namespace},
        "spec": {
            "image": f"local.file:{image}",
            "options": {"allowUnsigned": True},
            "resources": {"nodes": 1, "cpuPerNode": 1, "wallTime": 120},
            "nodeSelector": {names.LABEL_PARTITION: "debug"},
        },
    }


async def test_wlmjobs_run_as_their_tenants_user_account_and_qos(
    tenancy: Rig, operator: None, home_accounts: None, kube: KubeClient, shared_dir: SharedDir
) -> None:
    where = shared_dir("wlmvk-sif-")
    image = sif(busybox_rootfs(where / "rootfs", ENTRYPOINT), where / "id.sif", apptainer=apptainer.APPTAINER)
    jobs = {tenant: unique(f"wj-{tenant.name}") for tenant in TENANTS}
    for tenant, name in jobs.items():
        await kube.create(WLMJOBS, wlmjob(tenant, name, str(image)), namespace=tenant.namespace)

    async def ended(tenant: Tenant) -> Body | None:
        status: Body = (await kube.get(WLMJOBS, jobs[tenant], namespace=tenant.namespace)).get("status") or {}
        return status if status.get("status") in ("Succeeded", "Failed") else None

    for tenant in TENANTS:
        status = await eventually(lambda t=tenant: ended(t), timeout=180)  # type: ignore[misc]
        assert status["status"] == "Succeeded", json.dumps(status)
        job_id = str(status["jobId"])
        # The file the job wrote is its user's (red-box may report the directory relative).
        written = tenancy.boxes[tenant.user].work_dir / status["workingDir"] / f"owned-by-{tenant.user}"
        assert (written.read_text(), written.owner()) == ("written\n", tenant.user)
        wanted = [[job_id, tenant.user, tenant.account, tenant.qos, "debug"]]

        async def accounted(job_id: str = job_id, wanted: list[list[str]] = wanted) -> list[list[str]] | None:
            rows = sacct("-j", job_id, "-o", "JobID,User,Account,QOS,Partition")
            return rows if rows == wanted else None

        try:
            await eventually(accounted, timeout=60)
        except AssertionError:
            rows = sacct("-j", job_id, "-o", "JobID,User,Account,QOS,Partition")
            pytest.fail(f"sacct -o JobID,User,Account,QOS,Partition: {rows}, not {wanted}")
