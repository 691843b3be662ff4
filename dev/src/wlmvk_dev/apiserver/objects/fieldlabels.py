"""Which field selectors kube-apiserver accepts, per resource type.

A real API server filters lists and watches only on the field labels each kind declares
(``metadata.name`` and, when namespaced, ``metadata.namespace`` everywhere; a few more for
pods, nodes, events, namespaces, secrets, jobs and replica sets) and answers any other one
with ``400 BadRequest: field label not supported: <label>``. The HTTP layer checks client
selectors here; in-process callers of the store may filter on any path.
"""

from __future__ import annotations

from wlmvk_dev.apiserver.objects.errors import bad_request
from wlmvk_dev.apiserver.objects.resources import (
    EVENTS,
    JOBS,
    NAMESPACES,
    NODES,
    PODS,
    REPLICASETS,
    SECRETS,
    ResourceInfo,
)
from wlmvk_dev.apiserver.objects.selectors import FieldSelector

_EXTRA: dict[object, frozenset[str]] = {
    PODS: frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        }
    ),
    NODES: frozenset({"spec.unschedulable"}),
    NAMESPACES: frozenset({"status.phase"}),
    SECRETS: frozenset({"type"}),
    JOBS: frozenset({"status.successful"}),
    REPLICASETS: frozenset({"status.replicas"}),
    EVENTS: frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
}
_CHECKED_GROUPS = (
    "",
    "apps",
    "batch",
    "coordination.k8s.io",
    "rbac.authorization.k8s.io",
    "apiextensions.k8s.io",
)
"""Built-in groups whose field labels are known here; custom resources are always checked."""


def supported(info: ResourceInfo) -> frozenset[str] | None:
    """The field labels ``info`` may be selected on, or None when this module does not know."""
    builtin = info.group in _CHECKED_GROUPS
    if not builtin and "." in info.group and info.group.endswith(".k8s.io"):
        return None  # other built-in groups (events.k8s.io, ...): not checked
    base = {"metadata.name", "metadata.namespace"} if info.namespaced else {"metadata.name"}
    return frozenset(base) | _EXTRA.get(info.gvr, frozenset())


def check(info: ResourceInfo, selector: FieldSelector) -> None:
    """400 ``field label not supported`` for the first label ``info`` cannot be selected on."""
    allowed = supported(info)
    if allowed is None:
        return
    for requirement in selector.requirements:
        label = ".".join(requirement.path)
        if label not in allowed:
            raise bad_request(f"field label not supported: {label}")
