"""What a pod requests and whether a node still has room for it (NodeResourcesFit).

A pod's request is kube-scheduler's: the sum over its containers, at least the
largest ordinary init container (plus the restartable "sidecar" init containers
started before it), sidecars added to the sum, plus ``spec.overhead``. A
container with a limit but no request requests its limit (the API server's
defaulting). CPU is counted in millicores, the rest in whole units.

A node fits when, for every resource the pod asks for, allocatable is at least
what the node's non-terminated pods already request plus the pod's request, and
one more pod does not exceed allocatable ``pods``. Each shortfall is a reason
("Insufficient cpu", "Insufficient nvidia.com/gpu", "Too many pods").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from wlmvk.core.errors import InvalidInput
from wlmvk.core.quantities import scaled
from wlmvk.kube.bodies import Body

Resources = Counter[str]

TERMINAL_PHASES = ("Succeeded", "Failed")


def container_requests(container: Mapping[str, Any]) -> Resources:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return _scaled(merged)


def pod_requests(pod: Body) -> Resources:
    """The pod's effective request per resource (cpu in millicores)."""
    spec = pod.get("spec", {})
    total: Resources = Counter()
    for container in spec.get("containers") or []:
        total.update(container_requests(container))
    sidecars: Resources = Counter()
    init_peak: Resources = Counter()
    for container in spec.get("initContainers") or []:
        request = container_requests(container)
        if container.get("restartPolicy") == "Always":
            sidecars.update(request)
            total.update(request)
        else:
            _maximise(init_peak, request + sidecars)
    _maximise(total, init_peak)
    total.update(_scaled(spec.get("overhead") or {}))
    return +total


@dataclass
class Usage:
    """What the non-terminated pods bound to one node request together, and how many they are."""

    requested: Resources = field(default_factory=Counter)
    pods: int = 0

    def add(self, pod: Body) -> None:
        if is_terminated(pod):
            return
        self.pods += 1
        try:
            self.requested.update(pod_requests(pod))
        except InvalidInput:
            return


def requested_on(pods: Iterable[Body]) -> Usage:
    usage = Usage()
    for pod in pods:
        usage.add(pod)
    return usage


def usage_by_node(pods: Iterable[Body]) -> dict[str, Usage]:
    """:class:`Usage` of every node that has pods bound (unbound pods are left out)."""
    usage: dict[str, Usage] = {}
    for pod in pods:
        name = (pod.get("spec") or {}).get("nodeName")
        if name:
            usage.setdefault(name, Usage()).add(pod)
    return usage


def allocatable(node: Body) -> Resources:
    """The node's allocatable resources (capacity when allocatable is absent, as the API defaults it)."""
    status = node.get("status") or {}
    return _scaled(status.get("allocatable") or status.get("capacity") or {})


def insufficient(
    pod_request: Resources, free_for: Resources, used: Resources, pods_on_node: int
) -> list[str]:
    """The reasons a node with ``free_for`` allocatable and ``used`` requests cannot take the pod."""
    reasons = []
    if pods_on_node + 1 > free_for.get("pods", 0):
        reasons.append("Too many pods")
    for resource in sorted(pod_request, key=_resource_order):
        if resource == "pods" or pod_request[resource] <= 0:
            continue
        if free_for.get(resource, 0) < used.get(resource, 0) + pod_request[resource]:
            reasons.append(f"Insufficient {resource}")
    return reasons


def is_terminated(pod: Body) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def _scaled(quantities: Mapping[str, Any]) -> Resources:
    return Counter({name: scaled(name, quantity) for name, quantity in quantities.items()})


def _maximise(into: Resources, other: Resources) -> None:
    for name, amount in other.items():
        into[name] = max(into.get(name, 0), amount)


def _resource_order(name: str) -> tuple[int, str]:
    """cpu, memory, ephemeral-storage first, then the others by name (the scheduler's order)."""
    fixed = {"cpu": 0, "memory": 1, "ephemeral-storage": 2}
    return fixed.get(name, 3), name
