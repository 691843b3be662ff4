"""The ``scale`` subresource of Deployments, ReplicaSets and StatefulSets (``kubectl scale``).

The subresource shows an ``autoscaling/v1`` Scale (``spec.replicas``, ``status.replicas``,
``status.selector``) and writes only ``spec.replicas`` of the object. Nothing runs the
workloads, so the replicas are stored, never started.
"""

from __future__ import annotations

from typing import Any

from wlmvk_dev.apiserver.objects.errors import bad_request
from wlmvk_dev.apiserver.objects.resources import GVR, Obj
from wlmvk_dev.apiserver.rules import patching
from wlmvk_dev.apiserver.storage.store import Store


def view(obj: Obj) -> Obj:
    """The Scale of a workload object."""
    meta = obj["metadata"]
    match = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": int((obj.get("spec") or {}).get("replicas", 1))},
        "status": {
            "replicas": int((obj.get("status") or {}).get("replicas", 0)),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(match.items())),
        },
    }


def get(store: Store, gvr: GVR, name: str, namespace: str | None) -> Obj:
    return view(store.get(gvr, name, namespace))


def write(
    store: Store, gvr: GVR, name: str, namespace: str | None, scale: Any, *, dry_run: bool = False
) -> Obj:
    """Store ``scale.spec.replicas`` (409 when ``scale`` carries a stale resourceVersion)."""
    replicas = ((scale or {}).get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise bad_request("spec.replicas must be a non-negative integer")
    obj = store.get(gvr, name, namespace)
    rv = ((scale.get("metadata") or {}).get("resourceVersion")) or obj["metadata"]["resourceVersion"]
    obj["metadata"]["resourceVersion"] = rv
    obj.setdefault("spec", {})["replicas"] = replicas
    return view(store.update(gvr, obj, namespace, client=True, dry_run=dry_run))


def patch(
    store: Store,
    gvr: GVR,
    name: str,
    namespace: str | None,
    body: Any,
    patch_type: str,
    *,
    dry_run: bool = False,
) -> Obj:
    current = get(store, gvr, name, namespace)
    if patch_type == "json":
        changed = patching.json_patch(current, body)
    elif patch_type in ("merge", "strategic", "apply"):
        changed = patching.merge_patch(current, body)
    else:
        raise bad_request(f"patch type {patch_type!r} is not supported on scale")
    return write(store, gvr, name, namespace, changed, dry_run=dry_run)
