"""What the kubelet's status tick costs Slurm with one and with two tenant users (docs/tenancy.md).

Counted from slurmctld's own counters (``sdiag``, by message type) on the tenancy Slurm, which
only these tests use: the job reads (REQUEST_JOB_INFO, _USER_INFO, _INFO_SINGLE) over a window of
ticks driven by the test (the kubelet's own interval is an hour, so no tick is its own), long
enough that a red-box's recorder (8 s) would look too if it were not told its jobs are followed.
One squeue answers each tick (two RPCs: the partition table and the jobs), whatever the number of
tenant users; before ``observing``, each tenant user's red-box ran its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import structlog

from tests.e2e.kubelet.helpers import eventually, job_pod, unique
from tests.e2e.tenancy.rig import slurmtenant
from tests.e2e.tenancy.tenants import TENANTS, A, B, Tenant
from tests.faults import ownslurm
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.fixtures.redbox import RedBox
from wlmvk.core import names
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.app import Kubelet

pytestmark = [pytest.mark.slurm]

ROOT = Path(__file__).resolve().parents[3]
JOB_READS = ("REQUEST_JOB_INFO", "REQUEST_JOB_USER_INFO", "REQUEST_JOB_INFO_SINGLE")
TICKS = 12
TICK_EVERY = 1.0
"""12 ticks a second apart: longer than red-box's recorder interval (8 s)."""
_ROW = re.compile(r"^\s+(REQUEST_\w+)\s+\(\s*\d+\)\s+count:(\d+)", re.M)


def job_reads() -> int:
    """slurmctld's count of job reads so far (every user's)."""
    text = subprocess.run(["sdiag"], capture_output=True, text=True, check=True).stdout
    by_type = text.split("statistics by message type", 1)[1].split("statistics by user", 1)[0]
    return sum(int(m.group(2)) for m in _ROW.finditer(by_type) if m.group(1) in JOB_READS)


@pytest.fixture
async def slow_kubelet(
    tenant_slurm: ownslurm.Instance,
    apiserver: RunningApiServer,
    redbox_factory: Callable[..., RedBox],
    kubelet_factory: StartKubelet,
) -> AsyncIterator[tuple[Kubelet, dict[str, RedBox]]]:
    """Both tenants, a red-box per tenant user (A's is the default), a kubelet ticking hourly."""
    applied = await apiserver.kubectl("apply", "-f", str(ROOT / "manifests" / "crds" / "slurmtenants.yaml"))
    assert applied.returncode == 0, applied.stderr
    docs: list[object] = [slurmtenant(t, ["debug"]) for t in TENANTS]
    docs += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": t.namespace}} for t in TENANTS]
    created = await apiserver.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    )
    assert created.returncode == 0, created.stderr
    boxes = {t.user: redbox_factory("--slurm-api=cli", "--poll-interval=8", user=t.user) for t in TENANTS}
    kubelet = await kubelet_factory(
        kubeconfig=apiserver.kubeconfig_for("wlmvk-kubelet"),
        red_box_socket=boxes[A.user].socket,
        red_boxes=tuple((user, box.socket) for user, box in boxes.items()),
        status_interval=3600.0,
    )
    yield kubelet, boxes
    for tenant in TENANTS:
        await apiserver.kubectl("delete", "pods", "--all", "-n", tenant.namespace, "--wait=false")
    await apiserver.kubectl("delete", "slurmtenants", "--all", "--wait=false")


async def tick(kubelet: Kubelet) -> None:
    assert kubelet.pods is not None
    await kubelet.pods.poller.tick()


async def running(kubelet: Kubelet, kube: KubeClient, pods: dict[str, Tenant]) -> None:
    """Each pod Running, the kubelet's ticks driven by hand meanwhile."""

    async def all_running() -> bool:
        await tick(kubelet)
        for name, tenant in pods.items():
            pod = await kube.get(PODS, name, namespace=tenant.namespace)
            if pod.get("status", {}).get("phase") != "Running":
                return False
        return True

    await eventually(all_running, timeout=120, every=1.0)


async def reads_per_tick(kubelet: Kubelet) -> float:
    """Job reads slurmctld served per tick over TICKS ticks (nothing else reads jobs meanwhile)."""
    before = job_reads()
    for _ in range(TICKS):
        await tick(kubelet)
        await asyncio.sleep(TICK_EVERY)
    return (job_reads() - before) / TICKS


def pods_of(*tenants: Tenant) -> dict[str, Tenant]:
    return {unique(f"rpc-{t.name}-{i}"): t for t in tenants for i in range(2)}


async def start(kube: KubeClient, pods: dict[str, Tenant]) -> None:
    for name, tenant in pods.items():
        pod = job_pod(name, "sleep 300")
        pod["metadata"]["namespace"] = tenant.namespace
        await kube.create(PODS, pod, namespace=tenant.namespace)


async def test_a_tick_reads_jobs_once_with_one_tenant_user_and_with_two(
    slow_kubelet: tuple[Kubelet, dict[str, RedBox]], kube: KubeClient
) -> None:
    kubelet, _ = slow_kubelet
    only_b = pods_of(B)
    await start(kube, only_b)
    await running(kubelet, kube, only_b)
    assert await reads_per_tick(kubelet) == 1.0  # B's jobs, read through the default red-box

    both = pods_of(A)
    await start(kube, both)
    await running(kubelet, kube, {**only_b, **both})
    assert await reads_per_tick(kubelet) == 1.0  # A's and B's jobs: still one read


@contextlib.contextmanager
def private_jobs(instance: ownslurm.Instance) -> Iterator[None]:
    """``PrivateData=jobs`` on the tenancy Slurm (``scontrol reconfigure``), taken off after."""
    conf = instance.conf
    saved = conf.read_text()
    conf.write_text(saved + "PrivateData=jobs\n")
    subprocess.run(["scontrol", "reconfigure"], check=True)
    try:
        yield
    finally:
        conf.write_text(saved)
        subprocess.run(["scontrol", "reconfigure"], check=True)


async def test_with_private_jobs_each_tenant_users_red_box_is_asked_and_it_is_logged_once(
    slow_kubelet: tuple[Kubelet, dict[str, RedBox]], tenant_slurm: ownslurm.Instance, kube: KubeClient
) -> None:
    kubelet, _ = slow_kubelet
    only_b, of_a = pods_of(B), pods_of(A)
    with private_jobs(tenant_slurm), structlog.testing.capture_logs() as logs:
        shown = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True)  # noqa: ASYNC221
        assert re.search(r"^PrivateData\s*=\s*jobs", shown.stdout, re.M), "PrivateData did not take"
        await start(kube, only_b)
        await running(kubelet, kube, only_b)
        # B's jobs hidden from the default red-box's look: B's own red-box alone is asked.
        alone = await reads_per_tick(kubelet)
        await start(kube, of_a)
        await running(kubelet, kube, {**only_b, **of_a})
        both = await reads_per_tick(kubelet)  # A's own red-box (the default's user), then B's
        for name, tenant in {**only_b, **of_a}.items():
            pod = await kube.get(PODS, name, namespace=tenant.namespace)
            assert pod["status"]["phase"] == "Running"
            assert pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID]
    said = [entry for entry in logs if "hides other users' jobs" in str(entry.get("event"))]
    assert len(said) == 1, said
    assert (alone, both) == (1.0, 2.0)
