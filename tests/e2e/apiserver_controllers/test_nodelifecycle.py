"""Node lifecycle through kubectl: a node whose Lease stops is NotReady and tainted unreachable."""

from __future__ import annotations

import asyncio
import functools
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.fixtures.apiserver import RunningApiServer
from wlmvk_dev.apiserver.controllers import gc, nodelifecycle, scheduler
from wlmvk_dev.apiserver.objects.resources import LEASES, NODES

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.apiserver(
        controllers=[scheduler.run, gc.run, functools.partial(nodelifecycle.run, grace_period=1.0)]
    ),
]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ready_node(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now()}
            ],
            "allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"},
        },
    }


async def renew_for(apiserver: RunningApiServer, name: str, seconds: float) -> None:
    """Be the node's kubelet for a while: renew its Lease every 0.2 s."""
    store = apiserver.store
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        try:
            lease = store.get(LEASES, name, "kube-node-lease")
        except Exception:
            store.create(LEASES, {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": {}})
            lease = store.get(LEASES, name, "kube-node-lease")
        lease["spec"].update(holderIdentity=name, leaseDurationSeconds=1, renewTime=now())
        store.update(LEASES, lease)
        await asyncio.sleep(0.2)


async def test_node_whose_lease_stops_is_not_ready_and_unreachable(apiserver: RunningApiServer) -> None:
    apiserver.store.create(NODES, ready_node("edge"))
    await renew_for(apiserver, "edge", 2.0)
    listed = await apiserver.kubectl("get", "node", "edge")
    assert listed.stdout.splitlines()[1].split()[1] == "Ready", listed.stdout

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while True:
        taints = await apiserver.kubectl("get", "node", "edge", "-o", "jsonpath={.spec.taints}")
        if "unreachable" in taints.stdout:
            break
        assert loop.time() < deadline, taints.stdout
        await asyncio.sleep(0.2)
    keys = {(t["key"], t["effect"]) for t in json.loads(taints.stdout)}
    assert keys == {
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    }
    listed = await apiserver.kubectl("get", "node", "edge")
    assert listed.stdout.splitlines()[1].split()[1] == "NotReady", listed.stdout
    ready = await apiserver.kubectl(
        "get", "node", "edge", "-o", "jsonpath={.status.conditions[?(@.type=='Ready')]}"
    )
    condition = json.loads(ready.stdout)
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "Unknown",
        "NodeStatusUnknown",
        "Kubelet stopped posting node status.",
    )
    described = await apiserver.kubectl("describe", "node", "edge")
    assert "node.kubernetes.io/unreachable:NoSchedule" in described.stdout

    # The kubelet comes back: renews its Lease and reports Ready; the taints go.
    renewing = asyncio.ensure_future(renew_for(apiserver, "edge", 30))
    try:
        node = apiserver.store.get(NODES, "edge")
        node["status"]["conditions"] = ready_node("edge")["status"]["conditions"]
        apiserver.store.update(NODES, node, subresource="status")
        while True:
            taints = await apiserver.kubectl("get", "node", "edge", "-o", "jsonpath={.spec.taints}")
            if taints.stdout in ("", "[]"):
                break
            assert loop.time() < deadline + 30, taints.stdout
            await asyncio.sleep(0.2)
        listed = await apiserver.kubectl("get", "node", "edge")
        assert listed.stdout.splitlines()[1].split()[1] == "Ready", listed.stdout
    finally:
        renewing.cancel()
