"""The scheduler against a real in-memory Store: binding, conditions, events, retries."""

from __future__ import annotations

import functools
from typing import Any

from tests.unit.dev.apiserver.controllers.conftest import eventually
from wlmvk_dev.apiserver.controllers import scheduler
from wlmvk_dev.apiserver.objects.resources import EVENTS, NODES, PODS
from wlmvk_dev.apiserver.storage.store import Store

PROVIDER = {"key": "virtual-kubelet.io/provider", "value": "wlm", "effect": "NoSchedule"}


def node(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x"}], **spec}}


def bound_to(store: Store, name: str) -> str | None:
    node_name: str | None = store.get(PODS, name, "default")["spec"].get("nodeName")
    return node_name


def scheduled_condition(store: Store, name: str) -> dict[str, Any] | None:
    for condition in store.get(PODS, name, "default").get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled":
            found: dict[str, Any] = condition
            return found
    return None


def events_of(store: Store, name: str) -> list[dict[str, Any]]:
    return [e for e in store.list(EVENTS, "default").items if e["involvedObject"]["name"] == name]


async def test_binds_by_node_selector_and_records_scheduled(store: Store, running: Any) -> None:
    store.create(NODES, node("a", {"zone": "1"}))
    store.create(NODES, node("b", {"zone": "2"}))
    running(scheduler.run)
    store.create(PODS, pod("p", nodeSelector={"zone": "2"}))
    assert await eventually(lambda: bound_to(store, "p")) == "b"
    condition = scheduled_condition(store, "p")
    assert condition is not None
    assert condition["status"] == "True"
    scheduled = await eventually(lambda: [e for e in events_of(store, "p") if e["reason"] == "Scheduled"])
    assert scheduled[0]["message"] == "Successfully assigned default/p to b"
    assert scheduled[0]["source"]["component"] == "default-scheduler"


async def test_unschedulable_pod_waits_and_binds_when_a_node_fits(store: Store, running: Any) -> None:
    store.create(NODES, node("vk", taints=[PROVIDER]))
    running(scheduler.run)
    store.create(PODS, pod("p"))
    condition = await eventually(lambda: scheduled_condition(store, "p"))
    assert condition["status"] == "False"
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {virtual-kubelet.io/provider: wlm}. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    failed = await eventually(lambda: [e for e in events_of(store, "p") if e["reason"] == "FailedScheduling"])
    assert failed[0]["type"] == "Warning"
    assert failed[0]["message"] == condition["message"]
    store.create(NODES, node("plain"))
    assert await eventually(lambda: bound_to(store, "p")) == "plain"
    condition = scheduled_condition(store, "p")
    assert condition is not None
    assert (condition["status"], condition.get("reason")) == ("True", None)


async def test_repeated_failures_count_up_one_event(store: Store, running: Any) -> None:
    store.create(NODES, node("a", {"zone": "1"}))
    running(functools.partial(scheduler.run, retry_interval=0.05))
    store.create(PODS, pod("p", nodeSelector={"zone": "9"}))
    event = await eventually(
        lambda: [e for e in events_of(store, "p") if e["reason"] == "FailedScheduling" and e["count"] >= 3]
    )
    assert len(event) == 1
    assert len([e for e in events_of(store, "p") if e["reason"] == "FailedScheduling"]) == 1


async def test_node_label_change_retries_the_unschedulable(store: Store, running: Any) -> None:
    store.create(NODES, node("a", {"zone": "1"}))
    running(scheduler.run)
    store.create(PODS, pod("p", nodeSelector={"zone": "2"}))
    await eventually(lambda: scheduled_condition(store, "p"))
    store.patch(NODES, "a", {"metadata": {"labels": {"zone": "2"}}})
    assert await eventually(lambda: bound_to(store, "p")) == "a"


async def test_resources_fill_up_and_free_again(store: Store, running: Any) -> None:
    store.create(NODES, node("a"))
    running(scheduler.run)
    big = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1500m"}}}
    store.create(PODS, {"metadata": {"name": "first"}, "spec": {"containers": [big]}})
    await eventually(lambda: bound_to(store, "first"))
    store.create(PODS, {"metadata": {"name": "second"}, "spec": {"containers": [big]}})
    condition = await eventually(lambda: scheduled_condition(store, "second"))
    assert condition["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    store.patch(PODS, "first", {"status": {"phase": "Succeeded"}}, "default", subresource="status")
    assert await eventually(lambda: bound_to(store, "second")) == "a"


async def test_other_schedulers_pods_are_left_alone(store: Store, running: Any) -> None:
    store.create(NODES, node("a"))
    running(scheduler.run)
    store.create(PODS, pod("mine"))
    store.create(PODS, pod("theirs", schedulerName="other-scheduler"))
    await eventually(lambda: bound_to(store, "mine"))
    assert bound_to(store, "theirs") is None
    assert scheduled_condition(store, "theirs") is None


async def test_no_nodes_message(store: Store, running: Any) -> None:
    running(scheduler.run)
    store.create(PODS, pod("p"))
    condition = await eventually(lambda: scheduled_condition(store, "p"))
    assert condition["message"] == "no nodes available to schedule pods"
