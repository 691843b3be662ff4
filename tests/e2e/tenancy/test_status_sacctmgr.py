"""What the SlurmTenants' status check costs slurmdbd, with 2 tenant users and with 6 (docs/tenancy.md).

Counted from slurmdbd's own counters (``sacctmgr show stats``, by user) on the tenancy Slurm: the
RPCs of the red-boxes' users (the job owner, A's and the default red-box's; ``slurmuser``, B's)
over one check of every tenant, by the kubelet's own status writer (its parts, with nothing
checked yet: every tenant due at once). One look through the default red-box answers every
tenant user: two sacctmgr (``show assoc where users=...``: 5 RPCs; ``show qos``: 4), 9 RPCs
whatever the number of tenants; before, each tenant user's red-box ran both (9 RPCs per user).

The 4 tenants added for the second count each have a Unix user of their own, made for the test
(``useradd --system``, removed after, as bench/tenants_scale.py makes its users) with its own
red-box, which the kubelet asks only whether it answers; three are Slurm users, the fourth one
Slurm does not know (a typo'd user), which shows on that tenant only.
"""

from __future__ import annotations

import dataclasses
import json
import pwd
import re
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.kubelet.helpers import eventually
from tests.e2e.tenancy.rig import slurmtenant
from tests.e2e.tenancy.tenants import TENANTS, A, B, Tenant
from tests.faults import ownslurm
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.fixtures.redbox import RedBox
from wlmvk.kube.client import KubeClient
from wlmvk.kube.tenants import SLURMTENANTS
from wlmvk.kubelet.app import Kubelet
from wlmvk_dev.tenants import associate

pytestmark = [pytest.mark.slurm]

ROOT = Path(__file__).resolve().parents[3]
EXTRA = [Tenant(f"team-s{i}", f"tenant-s{i}", f"wlmvk-st{i}", A.account, A.qos) for i in range(1, 4)]
"""Three more tenants, each its own user, in Slurm in A's account and QoS."""
UNKNOWN = Tenant("team-s9", "tenant-s9", "wlmvk-st9", A.account, A.qos)
"""A tenant whose user Slurm does not know (a typo)."""
_BY_USER = re.compile(r"^\s+\S+\s+\(\s*(\d+)\)\s+count:(\d+)", re.M)


def dbd_rpcs_by_uid() -> dict[int, int]:
    """slurmdbd's RPC counts so far, by uid (``sacctmgr show stats``, run as root: not counted here)."""
    text = subprocess.run(["sacctmgr", "show", "stats"], capture_output=True, text=True, check=True).stdout
    return {
        int(m.group(1)): int(m.group(2)) for m in _BY_USER.finditer(text.partition("statistics by user")[2])
    }


@pytest.fixture
def extra_users(tenant_slurm: ownslurm.Instance) -> Iterator[None]:
    """The extra tenants' Unix users, and the known ones' associations in Slurm; removed after."""
    made = []
    try:
        for tenant in (*EXTRA, UNKNOWN):
            argv = ["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin"]
            subprocess.run([*argv, tenant.user], check=True, capture_output=True)
            made.append(tenant.user)
        for tenant in EXTRA:
            associate(tenant, tenant_slurm.cluster)
        yield
    finally:
        for user in made:
            subprocess.run(["sacctmgr", "-i", "delete", "user", user], capture_output=True, check=False)
            subprocess.run(["userdel", user], capture_output=True, check=False)


@pytest.fixture
async def kubelet(
    extra_users: None,
    apiserver: RunningApiServer,
    redbox_factory: Callable[..., RedBox],
    kubelet_factory: StartKubelet,
) -> AsyncIterator[Kubelet]:
    """A red-box per tenant user (A's the default), the kubelet told of each."""
    crd = await apiserver.kubectl("apply", "-f", str(ROOT / "manifests" / "crds" / "slurmtenants.yaml"))
    assert crd.returncode == 0, crd.stderr
    users = [t.user for t in (*TENANTS, *EXTRA, UNKNOWN)]
    boxes = {user: redbox_factory("--slurm-api=cli", user=user).socket for user in users}
    started = await kubelet_factory(
        kubeconfig=apiserver.kubeconfig_for("wlmvk-kubelet"),
        red_box_socket=boxes[A.user],
        red_boxes=tuple(boxes.items()),
        status_interval=3600.0,
    )
    yield started
    await apiserver.kubectl("delete", "slurmtenants", "--all", "--wait=false")


async def apply(apiserver: RunningApiServer, tenants: list[Tenant]) -> None:
    docs = [slurmtenant(t, ["debug"]) for t in tenants]
    done = await apiserver.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    )
    assert done.returncode == 0, done.stderr


async def readiness(kube: KubeClient, tenants: list[Tenant]) -> dict[str, tuple[str, str]]:
    """Each tenant's Ready (status, reason) once the kubelet checked it (empty until then)."""
    found = {}
    for tenant in tenants:
        for entry in ((await kube.get(SLURMTENANTS, tenant.name)).get("status") or {}).get("clusters") or []:
            ready = next(c for c in entry["conditions"] if c["type"] == "Ready")
            found[tenant.name] = (ready["status"], ready["reason"])
    return found


async def one_check(kubelet: Kubelet, kube: KubeClient, tenants: list[Tenant]) -> dict[str, int]:
    """slurmdbd's RPCs by each tenant user over one check of every tenant, once the kubelet's own
    loop has checked them all (so it asks nothing meanwhile)."""

    async def checked() -> bool:
        return len(await readiness(kube, tenants)) == len(tenants)

    await eventually(checked, timeout=60, every=0.5)
    assert kubelet.tenant_status is not None
    fresh = dataclasses.replace(kubelet.tenant_status)  # the same parts, nothing checked yet
    uids = {t.user: pwd.getpwnam(t.user).pw_uid for t in (*TENANTS, *EXTRA, UNKNOWN)}
    before = dbd_rpcs_by_uid()
    await fresh.round()
    after = dbd_rpcs_by_uid()
    return {user: after.get(uid, 0) - before.get(uid, 0) for user, uid in uids.items()}


async def test_a_check_costs_slurmdbd_the_same_with_two_tenant_users_and_with_six(
    kubelet: Kubelet, apiserver: RunningApiServer, kube: KubeClient
) -> None:
    two = list(TENANTS)
    await apply(apiserver, two)
    with_two = await one_check(kubelet, kube, two)
    assert await readiness(kube, two) == {t.name: ("True", "Known") for t in two}

    six = [*two, *EXTRA, UNKNOWN]
    await apply(apiserver, [*EXTRA, UNKNOWN])
    with_six = await one_check(kubelet, kube, six)
    assert await readiness(kube, six) == {
        **{t.name: ("True", "Known") for t in [*two, *EXTRA]},
        UNKNOWN.name: ("False", "UserUnknown"),
    }
    print(f"slurmdbd RPCs per check, by user: 2 tenants {with_two}, 6 tenants {with_six}")
    # Two sacctmgr by the default red-box's user (A's), none by any other: 9 RPCs each time.
    nothing = {t.user: 0 for t in (B, *EXTRA, UNKNOWN)}
    assert with_two == with_six == {A.user: 9, **nothing}
