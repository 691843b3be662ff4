"""The node lifecycle controller against a real in-memory Store (short grace period)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from tests.unit.dev.apiserver.controllers.conftest import eventually
from wlmvk_dev.apiserver.controllers import nodelifecycle
from wlmvk_dev.apiserver.objects.resources import EVENTS, LEASES, NODES, PODS
from wlmvk_dev.apiserver.storage.store import Store

GRACE = 0.6


def micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ready_node(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": micro_now(),
                }
            ]
        },
    }


def renew(store: Store, name: str) -> None:
    lease = {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": {"renewTime": micro_now()}}
    try:
        current = store.get(LEASES, name, "kube-node-lease")
    except Exception:
        store.create(LEASES, lease)
        return
    current["spec"]["renewTime"] = micro_now()
    store.update(LEASES, current)


@contextlib.asynccontextmanager
async def renewing(store: Store, name: str) -> AsyncIterator[None]:
    async def loop() -> None:
        while True:
            renew(store, name)
            await asyncio.sleep(GRACE / 5)

    task = asyncio.ensure_future(loop())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def ready(store: Store, name: str) -> dict[str, Any]:
    node = store.get(NODES, name)
    found: dict[str, Any] = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    return found


def taint_keys(store: Store, name: str) -> list[tuple[str, str]]:
    return [(t["key"], t["effect"]) for t in store.get(NODES, name)["spec"].get("taints", [])]


UNREACHABLE = [
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
]


async def test_lease_stops_node_goes_unknown_and_comes_back(store: Store, running: Any) -> None:
    store.create(NODES, ready_node("n1"))
    running(functools.partial(nodelifecycle.run, grace_period=GRACE))
    async with renewing(store, "n1"):
        await asyncio.sleep(GRACE * 2)
        assert ready(store, "n1")["status"] == "True", "a renewed lease keeps the node Ready"
        assert taint_keys(store, "n1") == []
    condition = await eventually(lambda: ready(store, "n1")["status"] == "Unknown" and ready(store, "n1"))
    assert condition["reason"] == "NodeStatusUnknown"
    assert condition["message"] == "Kubelet stopped posting node status."
    assert await eventually(lambda: taint_keys(store, "n1")) == UNREACHABLE
    events = [e for e in store.list(EVENTS, "default").items if e["reason"] == "NodeNotReady"]
    assert events[0]["message"] == "Node n1 status is now: NodeNotReady"

    async with renewing(store, "n1"):
        await asyncio.sleep(GRACE * 2)
        assert taint_keys(store, "n1") == UNREACHABLE, "a lease alone does not make the node Ready"
        node = store.get(NODES, "n1")
        node["status"]["conditions"] = [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": micro_now()}
        ]
        store.update(NODES, node, subresource="status")
        await eventually(lambda: taint_keys(store, "n1") == [])
        assert ready(store, "n1")["status"] == "True"


async def test_kubelet_reporting_not_ready_gets_not_ready_taints(store: Store, running: Any) -> None:
    store.create(NODES, ready_node("n1"))
    running(functools.partial(nodelifecycle.run, grace_period=60))
    node = store.get(NODES, "n1")
    node["status"]["conditions"][0]["status"] = "False"
    store.update(NODES, node, subresource="status")
    assert await eventually(lambda: taint_keys(store, "n1")) == [
        ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute"),
    ]


async def test_pods_without_toleration_are_evicted(store: Store, running: Any) -> None:
    store.create(NODES, ready_node("n1"))
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]}}
    store.create(PODS, pod)
    intolerant = store.get(PODS, "p", "default")
    intolerant["spec"]["tolerations"] = []
    store.update(PODS, intolerant)
    running(functools.partial(nodelifecycle.run, grace_period=GRACE))
    deleted = await eventually(
        lambda: (p := store.get(PODS, "p", "default"))["metadata"].get("deletionTimestamp") and p
    )
    assert deleted["spec"]["nodeName"] == "n1"


async def test_default_tolerations_delay_eviction(store: Store, running: Any) -> None:
    store.create(NODES, ready_node("n1"))
    store.create(
        PODS,
        {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]}},
    )
    running(functools.partial(nodelifecycle.run, grace_period=GRACE))
    await eventually(lambda: taint_keys(store, "n1") == UNREACHABLE)
    await asyncio.sleep(GRACE)
    assert "deletionTimestamp" not in store.get(PODS, "p", "default")["metadata"]
