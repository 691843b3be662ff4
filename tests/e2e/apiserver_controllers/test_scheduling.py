"""The scheduler seen through the real kubectl: placement, and why a pod stays Pending."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
import yaml

from tests.fixtures.apiserver import RunningApiServer
from wlmvk_dev.apiserver.objects.resources import PODS

pytestmark = pytest.mark.kubectl


def node(name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["true"]}], **spec},
    }


def manifest(*objects: dict[str, Any]) -> str:
    return yaml.safe_dump_all(objects)


PROVIDER = {"key": "virtual-kubelet.io/provider", "value": "wlm", "effect": "NoSchedule"}


async def wait_for(apiserver: RunningApiServer, *args: str, expect: str, timeout: float = 30) -> str:
    """Repeat a kubectl command until its output contains ``expect``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = await apiserver.kubectl(*args)
        if expect in result.stdout:
            return result.stdout
        if loop.time() > deadline:
            raise AssertionError(
                f"kubectl {' '.join(args)} never showed {expect!r}:\n{result.stdout}{result.stderr}"
            )
        await asyncio.sleep(0.2)


async def test_pod_with_node_selector_lands_on_the_matching_node(apiserver: RunningApiServer) -> None:
    nodes = [node("alpha", {"zone": "a"}), node("beta", {"zone": "b"}), node("gamma", {"zone": "c"})]
    applied = await apiserver.kubectl("apply", "-f", "-", input=manifest(*nodes))
    assert applied.returncode == 0, applied.stderr
    created = await apiserver.kubectl(
        "apply", "-f", "-", input=manifest(pod("web", nodeSelector={"zone": "b"}))
    )
    assert created.returncode == 0, created.stderr
    await wait_for(apiserver, "get", "pod", "web", "-o", "jsonpath={.spec.nodeName}", expect="beta")
    wide = await apiserver.kubectl("get", "pods", "-o", "wide")
    header, row = wide.stdout.splitlines()[:2]
    assert row.split()[header.split().index("NODE")] == "beta", wide.stdout
    described = await apiserver.kubectl("describe", "pod", "web")
    assert "Successfully assigned default/web to beta" in described.stdout


async def test_unschedulable_pod_says_why_in_describe(apiserver: RunningApiServer) -> None:
    nodes = [
        node("alpha", {"zone": "a"}),
        node("slurm-vm-debug", {"type": "virtual-kubelet"}, [PROVIDER]),
        node("slurm-vm-gpu", {"type": "virtual-kubelet"}, [PROVIDER]),
    ]
    await apiserver.kubectl("apply", "-f", "-", input=manifest(*nodes))
    await apiserver.kubectl("apply", "-f", "-", input=manifest(pod("stuck", nodeSelector={"zone": "z"})))
    message = (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) had untolerated taint {virtual-kubelet.io/provider: wlm}. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    described = await wait_for(apiserver, "describe", "pod", "stuck", expect="FailedScheduling")
    assert re.search(r"PodScheduled\s+False", described), described
    assert re.search(
        r"Warning\s+FailedScheduling\s+\S+\s+default-scheduler\s+" + re.escape(message), described
    )
    condition = await apiserver.kubectl(
        "get", "pod", "stuck", "-o", "jsonpath={.status.conditions[?(@.type=='PodScheduled')]}"
    )
    scheduled = json.loads(condition.stdout)
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "False",
        "Unschedulable",
        message,
    )
    events = await apiserver.kubectl(
        "get", "events", "--field-selector", "involvedObject.name=stuck,reason=FailedScheduling", "-o", "json"
    )
    items = json.loads(events.stdout)["items"]
    assert len(items) == 1
    assert items[0]["type"] == "Warning"
    assert items[0]["source"]["component"] == "default-scheduler"

    # The cluster changes: a matching node appears, and the pod is bound at once.
    await apiserver.kubectl("apply", "-f", "-", input=manifest(node("zulu", {"zone": "z"})))
    await wait_for(apiserver, "get", "pod", "stuck", "-o", "jsonpath={.spec.nodeName}", expect="zulu")


async def test_tolerations_and_node_affinity_operators(apiserver: RunningApiServer) -> None:
    nodes = [
        node("small", {"cpus": "2"}),
        node("big", {"cpus": "64"}),
        node("slurm-vm-gpu", {"type": "virtual-kubelet", "cpus": "128"}, [PROVIDER]),
    ]
    await apiserver.kubectl("apply", "-f", "-", input=manifest(*nodes))
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["100"]}]}
                ]
            }
        }
    }
    tolerant = pod(
        "job", affinity=affinity, tolerations=[{"key": "virtual-kubelet.io/provider", "operator": "Exists"}]
    )
    await apiserver.kubectl("apply", "-f", "-", input=manifest(tolerant, pod("other", affinity=affinity)))
    await wait_for(apiserver, "get", "pod", "job", "-o", "jsonpath={.spec.nodeName}", expect="slurm-vm-gpu")
    described = await wait_for(apiserver, "describe", "pod", "other", expect="FailedScheduling")
    assert "1 node(s) had untolerated taint {virtual-kubelet.io/provider: wlm}" in described
    assert "2 node(s) didn't match Pod's node affinity/selector" in described


async def test_requests_against_allocatable_including_gpus(apiserver: RunningApiServer) -> None:
    gpu_node = node("gpu", {"zone": "g"})
    gpu_node["status"]["allocatable"]["nvidia.com/gpu"] = "2"
    await apiserver.kubectl("apply", "-f", "-", input=manifest(node("cpu", {"zone": "c"}), gpu_node))

    def wants(name: str, **requests: str) -> dict[str, Any]:
        body = pod(name)
        body["spec"]["containers"][0]["resources"] = {"requests": requests, "limits": requests}
        return body

    await apiserver.kubectl(
        "apply", "-f", "-", input=manifest(wants("train", **{"nvidia.com/gpu": "2", "cpu": "500m"}))
    )
    await wait_for(apiserver, "get", "pod", "train", "-o", "jsonpath={.spec.nodeName}", expect="gpu")
    await apiserver.kubectl(
        "apply",
        "-f",
        "-",
        input=manifest(wants("more", **{"nvidia.com/gpu": "1"}), wants("huge", memory="5Gi")),
    )
    more = await wait_for(apiserver, "describe", "pod", "more", expect="FailedScheduling")
    assert "0/2 nodes are available: 2 Insufficient nvidia.com/gpu." in more
    huge = await wait_for(apiserver, "describe", "pod", "huge", expect="FailedScheduling")
    assert "0/2 nodes are available: 2 Insufficient memory." in huge
    assert "2 No preemption victims found for incoming pod." in huge

    # The GPU pod finishes: its GPUs are free again and the waiting pod is bound.
    finished = apiserver.store.get(PODS, "train", "default")
    finished["status"]["phase"] = "Succeeded"
    apiserver.store.update(PODS, finished, subresource="status")
    await wait_for(apiserver, "get", "pod", "more", "-o", "jsonpath={.spec.nodeName}", expect="gpu")
