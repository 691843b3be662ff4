"""Node lifecycle decisions: heartbeat staleness, Unknown conditions, taints by condition, eviction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from wlmvk_dev.apiserver.controllers.nodehealth import (
    desired_taints,
    eviction_due,
    is_stale,
    last_heartbeat,
    unknown_conditions,
)

T0 = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)


def stamp(moment: datetime, micro: bool = False) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def node(ready: str | None = "True", heartbeat: datetime | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": "n1", "creationTimestamp": stamp(T0)},
        "spec": dict(spec),
        "status": {"conditions": []},
    }
    if ready is not None:
        cond: dict[str, Any] = {"type": "Ready", "status": ready, "reason": "KubeletReady"}
        if heartbeat is not None:
            cond["lastHeartbeatTime"] = stamp(heartbeat)
        body["status"]["conditions"].append(cond)
    body["status"]["conditions"].append({"type": "MemoryPressure", "status": "False"})
    body["status"]["conditions"].append({"type": "NetworkUnavailable", "status": "False"})
    return body


def lease(renewed: datetime) -> dict[str, Any]:
    return {"spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40, "renewTime": stamp(renewed, True)}}


def test_heartbeat_is_the_newest_sign_of_life() -> None:
    n = node(heartbeat=T0 + timedelta(seconds=5))
    assert last_heartbeat(n, None) == T0 + timedelta(seconds=5)
    assert last_heartbeat(n, lease(T0 + timedelta(seconds=30, microseconds=5))) == T0 + timedelta(
        seconds=30, microseconds=5
    )
    assert last_heartbeat(node(ready=None), None) == T0


def test_stale_only_after_the_grace_period() -> None:
    n, grace = node(), timedelta(seconds=40)
    renewed = lease(T0 + timedelta(seconds=100))
    assert not is_stale(n, renewed, T0 + timedelta(seconds=140), grace)
    assert is_stale(n, renewed, T0 + timedelta(seconds=141), grace)
    assert not is_stale(n, None, T0 + timedelta(seconds=39), grace)
    assert is_stale(n, None, T0 + timedelta(seconds=41), grace)


def test_silent_kubelet_makes_its_conditions_unknown() -> None:
    now = T0 + timedelta(minutes=5)
    conditions = unknown_conditions(node(heartbeat=T0), now)
    assert conditions is not None
    ready, memory, network = conditions
    assert ready["status"] == "Unknown"
    assert ready["reason"] == "NodeStatusUnknown"
    assert ready["message"] == "Kubelet stopped posting node status."
    assert ready["lastTransitionTime"] == stamp(now)
    assert ready["lastHeartbeatTime"] == stamp(T0)
    assert memory["status"] == "Unknown"
    assert network == {"type": "NetworkUnavailable", "status": "False"}


def test_already_unknown_is_left_as_is() -> None:
    unknown = {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    assert unknown_conditions(unknown, T0) is None


def test_never_reported_node_gets_never_updated() -> None:
    conditions = unknown_conditions(node(ready=None), T0)
    assert conditions is not None
    ready = next(c for c in conditions if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown",
        "NodeStatusNeverUpdated",
        "Kubelet never posted node status.",
    )


def test_unknown_node_gets_unreachable_taints() -> None:
    taints = desired_taints(node(ready="Unknown"), T0)
    assert taints == [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": stamp(T0)},
    ]


def test_not_ready_node_gets_not_ready_taints_instead() -> None:
    current = node(
        ready="False",
        taints=[
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
            {"key": "x", "effect": "NoSchedule"},
        ],
    )
    assert desired_taints(current, T0) == [
        {"key": "x", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": stamp(T0)},
    ]


def test_ready_again_removes_the_taints_and_keeps_the_others() -> None:
    provider = {"key": "virtual-kubelet.io/provider", "value": "wlm", "effect": "NoSchedule"}
    current = node(
        ready="True",
        taints=[
            provider,
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": stamp(T0)},
        ],
    )
    assert desired_taints(current, T0) == [provider]


def test_nothing_to_change_is_none() -> None:
    assert desired_taints(node(), T0) is None
    assert desired_taints(node(ready=None), T0) is None


def test_cordoned_node_gets_the_unschedulable_taint() -> None:
    assert desired_taints(node(unschedulable=True), T0) == [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    ]


DEFAULT_TOLERATIONS = [
    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
]


def unreachable_node(added: datetime) -> dict[str, Any]:
    return node(
        ready="Unknown",
        taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": stamp(added)}],
    )


def test_eviction_waits_for_the_toleration_seconds() -> None:
    pod = {"spec": {"tolerations": DEFAULT_TOLERATIONS}}
    n = unreachable_node(T0)
    assert not eviction_due(pod, n, T0 + timedelta(seconds=299))
    assert eviction_due(pod, n, T0 + timedelta(seconds=300))


def test_eviction_is_immediate_without_toleration_and_never_with_an_unbounded_one() -> None:
    n = unreachable_node(T0)
    assert eviction_due({"spec": {}}, n, T0)
    forever = {"spec": {"tolerations": [{"operator": "Exists"}]}}
    assert not eviction_due(forever, n, T0 + timedelta(days=1))


def test_no_noexecute_taint_no_eviction() -> None:
    assert not eviction_due({"spec": {}}, node(ready="Unknown"), T0)
