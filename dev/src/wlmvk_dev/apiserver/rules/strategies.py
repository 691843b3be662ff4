"""Kind-specific rules the real API server applies on create and delete.

Defaults on create (pods get ``phase: Pending`` and their ``qosClass``, restart policy, grace period and the
default not-ready/unreachable tolerations; namespaces get ``phase: Active``), and the
pod graceful-deletion rule: a pod bound to a node and not yet terminal is only marked
(``deletionTimestamp``) until its kubelet deletes it with grace 0.
"""

from __future__ import annotations

from typing import Any

from wlmvk_dev.apiserver.objects.resources import GVR, NAMESPACES, PODS, Obj, ResourceInfo
from wlmvk_dev.apiserver.rules.qos import qos_class

DEFAULT_GRACE = 30

_DEFAULT_TOLERATIONS = (
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
)


def prepare_create(info: ResourceInfo, obj: Obj) -> None:
    """Apply create-time defaults in place."""
    if info.gvr == PODS:
        _default_pod(obj)
    elif info.gvr == NAMESPACES:
        name = obj["metadata"]["name"]
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
    elif (
        info.has_status
        and info.gvr.group not in ("", "apps", "batch")
        and info.gvr != GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    ):
        # Custom resources with a status subresource ignore status on create.
        obj.pop("status", None)


def _default_pod(pod: Obj) -> None:
    spec: dict[str, Any] = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("priority", 0)
    tolerations: list[dict[str, Any]] = spec.setdefault("tolerations", [])
    for default in _DEFAULT_TOLERATIONS:
        if not any(t.get("key") == default["key"] and t.get("effect") == "NoExecute" for t in tolerations):
            tolerations.append(dict(default))
    for container in spec.get("containers") or []:
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("imagePullPolicy", _pull_policy(str(container.get("image") or "")))
    pod["status"] = {"phase": "Pending", "qosClass": qos_class(pod)}


def _pull_policy(image: str) -> str:
    """kube-apiserver's default: Always for an untagged or ``:latest`` image, else IfNotPresent."""
    if "@" in image:
        return "IfNotPresent"
    tag = image.rpartition(":")[2] if ":" in image.rpartition("/")[2] else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def pod_grace_seconds(pod: Obj, requested: int | None) -> int:
    """The grace period a delete of ``pod`` gets; 0 means "remove now"."""
    spec = pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return max(0, requested)
    grace = spec.get("terminationGracePeriodSeconds")
    return DEFAULT_GRACE if grace is None else int(grace)
