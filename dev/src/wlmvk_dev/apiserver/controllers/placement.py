"""Where does a pending pod go? One scheduling decision, as a function of values.

The filters run in kube-scheduler's default order and a node is rejected by the
first that fails: NodeUnschedulable, TaintToleration, NodeAffinity, node
readiness, NodeResourcesFit. (Modern kube-scheduler has no readiness filter: the
node lifecycle controller taints not-ready nodes and TaintToleration rejects
them. The readiness check here only covers the moment before the taint lands,
and is skipped when the pod tolerates that taint.)

Among the nodes left, the best score wins: preferred node-affinity weight, then
fewest intolerable PreferNoSchedule taints, then the most free cpu and memory,
then the name (deterministic, where kube-scheduler picks at random).

When none is left, the message is kube-scheduler's ``FitError``, e.g.
``0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector,
2 node(s) had untolerated taint {virtual-kubelet.io/provider: wlm}. preemption:
0/3 nodes are available: 3 Preemption is not helpful for scheduling.``
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from wlmvk.core import scheduling
from wlmvk.core.errors import InvalidInput
from wlmvk.kube.bodies import Body
from wlmvk_dev.apiserver.controllers import podresources, taints

NO_NODES = "no nodes available to schedule pods"
NOT_MATCHING = "node(s) didn't match Pod's node affinity/selector"
UNSCHEDULABLE = "node(s) were unschedulable"
NOT_READY = "node(s) were not ready"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


@dataclass(frozen=True)
class Bind:
    node: str


@dataclass(frozen=True)
class Unschedulable:
    message: str


Decision = Bind | Unschedulable

_NOTHING = podresources.Usage()


def decide(pod: Body, nodes: Iterable[Body], usage: Mapping[str, podresources.Usage]) -> Decision:
    """Bind ``pod`` to the best feasible node, or explain why there is none.

    ``usage`` maps node names to what their pods request
    (:func:`podresources.usage_by_node`).
    """
    nodes = list(nodes)
    if not nodes:
        return Unschedulable(NO_NODES)
    try:
        request = podresources.pod_requests(pod)
    except InvalidInput as exc:
        return Unschedulable(f"0/{len(nodes)} nodes are available: {exc.message}.")
    failures: dict[str, list[str]] = {}
    feasible: list[Body] = []
    for node in nodes:
        name = node.get("metadata", {}).get("name", "")
        reasons = node_failures(pod, request, node, usage.get(name, _NOTHING))
        if reasons:
            failures[name] = reasons
        else:
            feasible.append(node)
    if feasible:
        # max() keeps the first of equal scores: the alphabetically first node wins ties.
        feasible.sort(key=_name)
        best = max(feasible, key=lambda n: _score(pod, request, n, usage.get(_name(n), _NOTHING)))
        return Bind(_name(best))
    return Unschedulable(fit_error(failures))


def node_failures(
    pod: Body, request: podresources.Resources, node: Body, usage: podresources.Usage
) -> list[str]:
    """Why ``node`` cannot take ``pod`` (empty when it can); the first failing filter decides."""
    tolerations = taints.pod_tolerations(pod)
    if node.get("spec", {}).get("unschedulable") and not scheduling.unschedulable_tolerated(tolerations):
        return [UNSCHEDULABLE]
    taint = scheduling.first_untolerated(taints.node_taints(node), tolerations)
    if taint is not None:
        return [f"node(s) had untolerated taint {taints.describe(taint)}"]
    if not scheduling.affinity_matches(pod.get("spec") or {}, _labels(node), _name(node)):
        return [NOT_MATCHING]
    readiness = node_readiness_taint(node)
    if readiness is not None and not scheduling.tolerated(tolerations, readiness):
        return [NOT_READY]
    return podresources.insufficient(request, podresources.allocatable(node), usage.requested, usage.pods)


def node_readiness_taint(node: Body) -> dict[str, str] | None:
    """The taint the node lifecycle controller puts on a node that is not Ready (None if Ready)."""
    ready = ready_condition(node)
    if ready is None or ready.get("status") == "True":
        return None
    key = scheduling.TAINT_UNREACHABLE if ready.get("status") == "Unknown" else scheduling.TAINT_NOT_READY
    return {"key": key, "effect": "NoSchedule"}


def ready_condition(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            found: Mapping[str, Any] = condition
            return found
    return None


def fit_error(failures: Mapping[str, list[str]]) -> str:
    """kube-scheduler's message for a pod no node fits (``failures``: node name -> reasons)."""
    total = len(failures)
    histogram: Counter[str] = Counter(reason for reasons in failures.values() for reason in reasons)
    message = f"0/{total} nodes are available: {_histogram(histogram)}."
    preemption: Counter[str] = Counter(
        NO_VICTIMS if all(_resolvable(r) for r in reasons) else NOT_HELPFUL for reasons in failures.values()
    )
    return f"{message} preemption: 0/{total} nodes are available: {_histogram(preemption)}."


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))


def _resolvable(reason: str) -> bool:
    """Reasons that evicting lower-priority pods could cure (resource shortfalls)."""
    return reason.startswith("Insufficient ") or reason == "Too many pods"


def _score(
    pod: Body, request: podresources.Resources, node: Body, usage: podresources.Usage
) -> tuple[int, int, float]:
    prefer_no = [t for t in taints.node_taints(node) if t.get("effect") == "PreferNoSchedule"]
    intolerable = sum(1 for t in prefer_no if not scheduling.tolerated(taints.pod_tolerations(pod), t))
    used = usage.requested
    free = podresources.allocatable(node)
    shares = [
        (free[r] - used.get(r, 0) - request.get(r, 0)) / free[r]
        for r in ("cpu", "memory")
        if free.get(r, 0) > 0
    ]
    least_allocated = sum(shares) / len(shares) if shares else 0.0
    weight = preferred_weight(pod.get("spec") or {}, _labels(node), _name(node))
    return (weight, -intolerable, least_allocated)


def preferred_weight(pod_spec: Body, labels: Mapping[str, str], node_name: str) -> int:
    """The sum of the weights of the preferred node-affinity terms the node matches."""
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(
        int(item.get("weight", 0))
        for item in preferred
        if scheduling.term_matches(item.get("preference") or {}, labels, node_name)
    )


def _name(node: Body) -> str:
    name: str = node.get("metadata", {}).get("name", "")
    return name


def _labels(node: Body) -> dict[str, str]:
    labels: dict[str, str] = node.get("metadata", {}).get("labels") or {}
    return labels
