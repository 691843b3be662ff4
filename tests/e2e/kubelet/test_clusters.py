"""One ``wlmvk kubelet`` serving two clusters (``--cluster``): two red-boxes in front of the one
local Slurm, each its cluster's nodes; pods run, log and are cancelled through their cluster's."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp
import pytest

from tests.e2e.kubelet.conftest import slurm_partitions
from tests.e2e.kubelet.helpers import eventually, job_pod, slurm_state, unique
from tests.fixtures.apiserver import RealApiServer, RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.core import names
from wlmvk.kube.bodies import LEASES, NODES, PODS, Body
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet import standby
from wlmvk.kubelet.app import Kubelet
from wlmvk.kubelet.settings import ClusterSettings

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.kubectl,
    pytest.mark.kube_any(
        subject="scheduling by node labels and the pods/log proxy to a kubelet of two clusters"
    ),
]

CLUSTERS = ("east", "west")


def cluster_pod(name: str, script: str, cluster: str) -> Body:
    """A pod for the debug partition's node of ``cluster`` (scheduled by the API server)."""
    selector = {names.LABEL_PARTITION: "debug", names.LABEL_CLUSTER: cluster, "type": "virtual-kubelet"}
    return job_pod(name, script, nodeSelector=selector)


async def phase_of(kube: KubeClient, name: str, *phases: str) -> Body:
    async def reached() -> Body | None:
        pod = await kube.get(PODS, name, namespace="default")
        return pod if pod.get("status", {}).get("phase") in phases else None

    reached.__name__ = f"{name} in {phases}"
    found: Body = await eventually(reached, timeout=120)
    return found


async def metric_lines(kubelet: Kubelet, prefix: str) -> list[str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{kubelet.metrics_port}/metrics") as answer,
    ):
        return [line for line in (await answer.text()).splitlines() if line.startswith(prefix)]


async def test_one_kubelet_serves_two_clusters_through_their_red_boxes(
    slurm: str,
    apiserver: RunningApiServer | RealApiServer,
    redbox_factory: Callable[..., RedBox],
    kubelet_factory: StartKubelet,
    kube: KubeClient,
) -> None:
    boxes = {cluster: redbox_factory(user=JOB_OWNER) for cluster in CLUSTERS}
    kubelet = await kubelet_factory(
        kubeconfig=apiserver.kubeconfig_for("wlmvk-kubelet"),
        cluster_name="east",
        red_box_socket=boxes["east"].socket,
        clusters=tuple(ClusterSettings(cluster, boxes[cluster].socket) for cluster in CLUSTERS),
        leader_elect=True,
    )
    # One cluster Lease for the process: the first cluster's, held by this kubelet.
    assert kubelet.elector is not None
    assert kubelet.elector.scope == f"{names.NODE_LEASE_NAMESPACE}/{standby.lease_name('east')}"
    assert kubelet.elector.holds()
    lease = await kube.get(LEASES, standby.lease_name("east"), namespace=names.NODE_LEASE_NAMESPACE)
    assert lease["spec"]["holderIdentity"].startswith("agent-host_")
    partitions = slurm_partitions()
    wanted = {names.node_name(cluster, p) for cluster in CLUSTERS for p in partitions}

    async def all_ready() -> bool:
        ready = set()
        for node in (await kube.list(NODES))["items"]:
            conditions = {c["type"]: c["status"] for c in node["status"].get("conditions", [])}
            if conditions.get("Ready") == "True":
                ready.add(node["metadata"]["name"])
        return wanted <= ready

    await eventually(all_ready, timeout=60)

    jobs = {}
    for cluster in CLUSTERS:
        name = unique(f"hello-{cluster}")
        await kube.create(PODS, cluster_pod(name, f"echo hello from {cluster}", cluster), namespace="default")
        pod = await phase_of(kube, name, "Succeeded", "Failed")
        assert pod["status"]["phase"] == "Succeeded", pod["status"]
        assert pod["spec"]["nodeName"] == f"slurm-{cluster}-debug"
        logs = await apiserver.kubectl("logs", name)
        assert (logs.returncode, logs.stdout) == (0, f"hello from {cluster}\n"), logs.stderr
        jobs[cluster] = int(pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID])
    # Each job went through its own cluster's red-box.
    assert jobs["east"] in boxes["east"].journal_job_ids()
    assert jobs["west"] not in boxes["east"].journal_job_ids()
    assert jobs["west"] in boxes["west"].journal_job_ids()

    name = unique("long-west")
    await kube.create(PODS, cluster_pod(name, "sleep 300", "west"), namespace="default")
    pod = await phase_of(kube, name, "Running")
    job_id = pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID]
    assert int(job_id) in boxes["west"].journal_job_ids()
    await kube.delete(PODS, name, namespace="default")

    async def cancelled() -> bool:
        return slurm_state(job_id) == "CANCELLED"

    await eventually(cancelled, timeout=60)
    # The cancel went to west's red-box, none to east's: the kubelet's metrics, labelled by cluster.
    calls = await metric_lines(kubelet, "wlmvk_kubelet_wlm_call_seconds_count{")
    assert [line for line in calls if 'method="cancel"' in line] == [
        'wlmvk_kubelet_wlm_call_seconds_count{cluster="west",method="cancel"} 1'
    ]
    pods = await metric_lines(kubelet, "wlmvk_kubelet_pods{")
    assert 'wlmvk_kubelet_pods{cluster="east",phase="Succeeded"} 1' in pods
    assert 'wlmvk_kubelet_pods{cluster="west",phase="Succeeded"} 1' in pods
