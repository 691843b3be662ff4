"""The tenancy tests' rig and probes: the tenants written, a red-box per tenant user, the kubelet
(``tenancy``), the operator (``operator``), and what Slurm, accounting and the pods say.

Real Slurm enforcing associations (``tenant_slurm``), one red-box per tenant user (each run as
that user, with its site's allow-lists), the kubelet routing each namespace to its tenant's
red-box from its own ``--red-box USER=SOCKET``. The fixtures reach the tests through conftest.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.kubelet.helpers import eventually, job_pod, unique
from tests.e2e.operator.stack import operator_settings
from tests.e2e.operator.support import apply_crds
from tests.e2e.tenancy.tenants import TENANTS, A, B, Tenant, sacctmgr
from tests.faults import ownslurm
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.fixtures.redbox import RedBox
from wlmvk.core import names, tasks
from wlmvk.kube.bodies import EVENTS, PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.app import Kubelet
from wlmvk.operator.app import serve
from wlmvk.operator.controller import SLURMJOBS
from wlmvk_dev import tenants

ROOT = Path(__file__).resolve().parents[3]
Body = dict[str, Any]


def slurmtenant(tenant: Tenant, partitions: list[str]) -> Body:
    return tenants.slurmtenant(tenant, "test", partitions)


def pod_in(tenant_namespace: str, name: str, *, partition: str = "debug", batch: str = "") -> Body:
    pod = job_pod(name, "id -un", partition=partition)
    pod["metadata"]["namespace"] = tenant_namespace
    if batch:
        pod["metadata"]["annotations"] = {names.ANNOTATION_BATCH: batch}
    return pod


def sacct(*argv: str) -> list[list[str]]:
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", *argv], capture_output=True, text=True, check=True
    ).stdout
    return [line.split("|") for line in out.splitlines() if line.strip()]


def made(*job_names: str) -> set[str]:
    """Which of these job names Slurm has a job of: squeue (at once) and accounting (a moment later)."""
    queued = subprocess.run(
        ["squeue", "-h", "-t", "all", "-o", "%j"], capture_output=True, text=True, check=True
    )
    named = {row[0] for row in sacct("-a", "-S", "now-1hours", "-o", "JobName")}
    return (set(queued.stdout.split()) | named) & set(job_names)


def accounts_of(user: str, cluster: str) -> list[str]:
    """The accounts Slurm associates ``user`` with on ``cluster``, as the admin reads them."""
    argv = ["sacctmgr", "-n", "-P", "show", "assoc", f"user={user}", f"cluster={cluster}", "format=Account"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return sorted(set(out.split()))


async def accounted(name: str, fields: str) -> list[list[str]]:
    """Accounting's rows of the jobs named ``name``, once it has any (slurmdbd lags slurmctld)."""

    async def rows() -> list[list[str]]:
        return sacct("-a", "-S", "now-1hours", "--name", name, "-o", fields)

    found: list[list[str]] = await eventually(rows, timeout=60)
    return found


async def phase(kube: KubeClient, namespace: str, name: str, *phases: str) -> Body:
    async def reached() -> Body | None:
        pod = await kube.get(PODS, name, namespace=namespace)
        return pod if pod.get("status", {}).get("phase") in phases else None

    result: Body = await eventually(reached, timeout=120)
    return result


async def warnings(kube: KubeClient, namespace: str, name: str) -> list[tuple[str, str]]:
    listed = await kube.list(EVENTS, namespace=namespace)
    return [
        (str(event.get("reason")), str(event.get("message")))
        for event in listed.get("items") or []
        if event.get("involvedObject", {}).get("name") == name and event.get("type") == "Warning"
    ]


@dataclass
class Rig:
    boxes: dict[str, RedBox]
    """The red-box of each tenant user, run as that user."""
    kubelet: Kubelet
    start_kubelet: Callable[[], Awaitable[Kubelet]]
    """Another kubelet as the first was started (after a restart)."""


@pytest.fixture
async def tenancy(
    tenant_slurm: ownslurm.Instance,
    apiserver: RunningApiServer,
    redbox_factory: Callable[..., RedBox],
    kubelet_factory: StartKubelet,
    kube: KubeClient,
    tenant_redbox_args: tuple[str, ...],
) -> AsyncIterator[Rig]:
    """The tenants written, one red-box per tenant user with its allow-lists (and
    ``tenant_redbox_args``), the kubelet started."""
    applied = await apiserver.kubectl("apply", "-f", str(ROOT / "manifests" / "crds" / "slurmtenants.yaml"))
    assert applied.returncode == 0, applied.stderr
    docs = [slurmtenant(A, ["debug", "cpu"]), slurmtenant(B, ["debug"])]
    docs += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": t.namespace}} for t in TENANTS]
    docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-none"}})
    created = await apiserver.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    )
    assert created.returncode == 0, created.stderr
    boxes = {
        t.user: redbox_factory(
            f"--allowed-accounts={t.account}",
            f"--allowed-qos={t.qos}",
            "--slurm-api=cli",
            *tenant_redbox_args,
            user=t.user,
        )
        for t in TENANTS
    }

    def start_kubelet() -> Awaitable[Kubelet]:
        return kubelet_factory(
            kubeconfig=apiserver.kubeconfig_for("wlmvk-kubelet"),
            red_box_socket=boxes[A.user].socket,
            red_boxes=tuple((user, box.socket) for user, box in boxes.items()),
        )

    yield Rig(boxes, await start_kubelet(), start_kubelet)
    for tenant in (*TENANTS, Tenant("", "tenant-none", "", "", "")):
        await apiserver.kubectl("delete", "pods", "--all", "-n", tenant.namespace, "--wait=false")
    await apiserver.kubectl("delete", "slurmtenants", "--all", "--wait=false")


@pytest.fixture
async def operator(tenancy: Rig, apiserver: RunningApiServer) -> AsyncIterator[None]:
    """The operator, in the test's event loop, over the tenants' API server."""
    await apply_crds(apiserver)
    stop = asyncio.Event()
    kubeconfig = str(apiserver.kubeconfig_for("wlmvk-operator"))
    running = tasks.guarded(serve(operator_settings(), kubeconfig=kubeconfig, stop=stop), name="operator")
    yield
    stop.set()
    await asyncio.wait_for(running, 20)


async def slurmjob_status(kube: KubeClient, namespace: str, name: str, *wanted: str) -> Body:
    async def reached() -> Body | None:
        status: Body = (await kube.get(SLURMJOBS, name, namespace=namespace)).get("status") or {}
        return status if status.get("status") in wanted else None

    result: Body = await eventually(reached, timeout=120)
    return result


async def start_three(kube: KubeClient, pods: tuple[tuple[str, str, int], ...]) -> None:
    """(namespace, name, seconds) pods that sleep, the first Running before the others are made."""
    for index, (namespace, name, seconds) in enumerate(pods):
        pod = pod_in(namespace, name)
        pod["spec"]["containers"][0]["command"] = ["sleep", str(seconds)]
        await kube.create(PODS, pod, namespace=namespace)
        if index == 0:
            await phase(kube, namespace, name, "Running")


def waiting_for(kube: KubeClient, namespace: str, name: str, reason: str) -> Callable[[], Any]:
    """A probe: the pod while its container waits with ``reason``, else None."""

    async def held() -> Body | None:
        pod = await kube.get(PODS, name, namespace=namespace)
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        waiting = statuses[0].get("state", {}).get("waiting", {})
        return pod if waiting.get("reason") == reason else None

    return held


async def submit_limit_holds_then_frees(kube: KubeClient) -> str:
    """B's QoS at ``MaxSubmitJobsPerUser=1``: B's second pod waits ``Pending`` with Slurm's reason
    (one Warning Event), no job made, while A's runs; it runs once B's first ends, one job. The
    held pod's message."""
    sacctmgr("modify", "qos", B.qos, "set", "MaxSubmitJobsPerUser=1")
    try:
        first, second, other = unique("sub1"), unique("sub2"), unique("free")
        await start_three(kube, ((B.namespace, first, 8), (B.namespace, second, 1), (A.namespace, other, 1)))
        held = waiting_for(kube, B.namespace, second, "QOSMaxSubmitJobPerUserLimit")
        pending = await eventually(held, timeout=60)
        assert pending["status"]["phase"] == "Pending"
        assert names.ANNOTATION_JOB_ID not in (pending["metadata"].get("annotations") or {})
        message: str = pending["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        assert message.startswith("Slurm refused the job for now: "), message
        assert ("QOSMaxSubmitJobPerUserLimit", message) in await warnings(kube, B.namespace, second)
        assert (await phase(kube, A.namespace, other, "Succeeded", "Failed"))["status"][
            "phase"
        ] == "Succeeded"
        # Once the first job ends, the held pod is submitted and runs: never Failed meanwhile.
        for name in (first, second):
            assert (await phase(kube, B.namespace, name, "Succeeded", "Failed"))["status"][
                "phase"
            ] == "Succeeded"
        assert len(await accounted(second, "JobID")) == 1
        return message
    finally:
        sacctmgr("modify", "qos", B.qos, "set", "MaxSubmitJobsPerUser=-1")
