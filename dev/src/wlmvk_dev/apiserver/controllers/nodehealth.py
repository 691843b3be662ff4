"""Node health decisions of the node lifecycle controller, as functions of values.

A node's last heartbeat is the newest of its Lease's ``spec.renewTime`` (in
``kube-node-lease``), its Ready condition's ``lastHeartbeatTime`` and, for a
node that never reported, its ``creationTimestamp``. When that heartbeat is
older than the grace period (kube-controller-manager's
``--node-monitor-grace-period``, 40 s by default), every kubelet-owned
condition becomes ``Unknown`` with reason ``NodeStatusUnknown`` ("Kubelet
stopped posting node status."), or ``NodeStatusNeverUpdated`` when there was
no Ready condition at all.

The taints follow the Ready condition (TaintNodesByCondition and taint-based
eviction): Unknown -> ``node.kubernetes.io/unreachable`` NoSchedule and
NoExecute, False -> ``node.kubernetes.io/not-ready`` NoSchedule and NoExecute,
True -> neither; ``spec.unschedulable`` -> ``node.kubernetes.io/unschedulable``
NoSchedule. The controller never sets Ready back to True: the kubelet does
that, and the taints then go.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from wlmvk.core import scheduling
from wlmvk_dev.apiserver.controllers import taints
from wlmvk_dev.apiserver.objects import timestamps

DEFAULT_GRACE = timedelta(seconds=40)
LEASE_NAMESPACE = "kube-node-lease"
KUBELET_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
STOPPED = ("NodeStatusUnknown", "Kubelet stopped posting node status.")
NEVER = ("NodeStatusNeverUpdated", "Kubelet never posted node status.")


def last_heartbeat(node: Mapping[str, Any], lease: Mapping[str, Any] | None) -> datetime | None:
    """The newest sign of life of the node's kubelet."""
    moments = []
    if lease is not None:
        moments.append(timestamps.parse((lease.get("spec") or {}).get("renewTime")))
    ready = _condition(node, "Ready")
    if ready is not None:
        moments.append(timestamps.parse(ready.get("lastHeartbeatTime")))
    moments.append(timestamps.parse((node.get("metadata") or {}).get("creationTimestamp")))
    known = [m for m in moments if m is not None]
    return max(known) if known else None


def is_stale(
    node: Mapping[str, Any], lease: Mapping[str, Any] | None, now: datetime, grace: timedelta = DEFAULT_GRACE
) -> bool:
    heartbeat = last_heartbeat(node, lease)
    return heartbeat is not None and now - heartbeat > grace


def unknown_conditions(node: Mapping[str, Any], now: datetime) -> list[dict[str, Any]] | None:
    """The conditions of a node whose kubelet went silent, or None when they already say so."""
    stamp = timestamps.format_time(now)
    conditions = [dict(c) for c in (node.get("status") or {}).get("conditions") or []]
    changed = False
    if not any(c.get("type") == "Ready" for c in conditions):
        reason, message = NEVER
        conditions.append(
            {
                "type": "Ready",
                "status": "Unknown",
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": (node.get("metadata") or {}).get("creationTimestamp"),
                "lastTransitionTime": stamp,
            }
        )
        changed = True
    for condition in conditions:
        if condition.get("type") not in KUBELET_CONDITIONS or condition.get("status") == "Unknown":
            continue
        reason, message = STOPPED
        condition.update(status="Unknown", reason=reason, message=message, lastTransitionTime=stamp)
        changed = True
    return conditions if changed else None


def desired_taints(node: Mapping[str, Any], now: datetime) -> list[dict[str, Any]] | None:
    """The node's taints as the controller wants them, or None when they already are."""
    current = [dict(t) for t in taints.node_taints(node)]
    ready = _condition(node, "Ready")
    status = ready.get("status") if ready is not None else None
    wanted: dict[str, bool] = {
        scheduling.TAINT_UNREACHABLE: status == "Unknown",
        scheduling.TAINT_NOT_READY: status == "False",
    }
    result = current
    for key, present in wanted.items():
        for effect in ("NoSchedule", "NoExecute"):
            result = _ensure(result, key, effect, present, now)
    unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
    result = _ensure(result, scheduling.TAINT_UNSCHEDULABLE, "NoSchedule", unschedulable, now)
    return result if result != current else None


def _ensure(
    current: list[dict[str, Any]], key: str, effect: str, present: bool, now: datetime
) -> list[dict[str, Any]]:
    has = any(t.get("key") == key and t.get("effect") == effect for t in current)
    if present and not has:
        taint: dict[str, Any] = {"key": key, "effect": effect}
        if effect == "NoExecute":
            taint["timeAdded"] = timestamps.format_time(now)
        return [*current, taint]
    if has and not present:
        return taints.without_taint(current, key, effect)
    return current


def _condition(node: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            found: Mapping[str, Any] = condition
            return found
    return None


def eviction_due(pod: Mapping[str, Any], node: Mapping[str, Any], now: datetime) -> bool:
    """Taint-based eviction: a NoExecute taint the pod does not tolerate, or tolerates only for a while."""
    tolerations = taints.pod_tolerations(pod)
    for taint in taints.node_taints(node):
        if taint.get("effect") != "NoExecute":
            continue
        matching = [t for t in tolerations if scheduling.tolerates(t, taint)]
        if not matching:
            return True
        # As the taint manager: tolerations without tolerationSeconds only count when all lack it.
        seconds = [int(t["tolerationSeconds"]) for t in matching if t.get("tolerationSeconds") is not None]
        if not seconds:
            continue
        added = timestamps.parse(taint.get("timeAdded")) or now
        if now >= added + timedelta(seconds=max(0, min(seconds))):
            return True
    return False
