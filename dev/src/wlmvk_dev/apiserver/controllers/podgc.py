"""Pod garbage collection: pods bound to a node that no longer exists are force-deleted.

As kube-controller-manager's PodGC, a pod whose ``spec.nodeName`` names a
node that has been gone for the quarantine period (40 s by default) is
deleted with grace 0: no kubelet is left to finish it. A node that comes
back within the quarantine keeps its pods. It runs as part of the garbage
collector controller (``gc.run``).
"""

from __future__ import annotations

import structlog

from wlmvk_dev.apiserver.controllers.workqueue import WorkQueue
from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.resources import NODES, PODS, Obj
from wlmvk_dev.apiserver.storage.store import Store

_log = structlog.get_logger(__name__)

DEFAULT_QUARANTINE = 40.0


async def run(store: Store, *, quarantine: float = DEFAULT_QUARANTINE) -> None:
    """Force-delete orphaned pods until cancelled."""
    queue: WorkQueue[str] = WorkQueue()

    def node_changed(kind: str, node: Obj, previous: Obj | None) -> None:
        if kind == "DELETED":
            queue.add_after(node["metadata"]["name"], quarantine)

    def pod_changed(kind: str, pod: Obj, previous: Obj | None) -> None:
        name = (pod.get("spec") or {}).get("nodeName")
        if kind == "ADDED" and name and not _exists(store, name):
            queue.add_after(name, quarantine)

    store.on_change(NODES, node_changed)
    store.on_change(PODS, pod_changed)
    for pod in store.list(PODS, copy=False).items:
        pod_changed("ADDED", pod, None)
    try:
        while True:
            for name in await queue.take():
                collect(store, name)
    finally:
        queue.close()


def collect(store: Store, node_name: str) -> None:
    """Delete, with grace 0, the pods bound to ``node_name`` if that node does not exist."""
    if _exists(store, node_name):
        return
    for pod in store.list(PODS, field_selector=f"spec.nodeName={node_name}").items:
        meta = pod["metadata"]
        _log.info("deleting orphaned pod", pod=f"{meta['namespace']}/{meta['name']}", node=node_name)
        try:
            store.delete(
                PODS,
                meta["name"],
                meta["namespace"],
                grace_period_seconds=0,
                preconditions={"uid": meta["uid"]},
            )
        except ApiError as exc:
            _log.debug("orphaned pod not deleted", pod=meta["name"], error=exc.message)


def _exists(store: Store, node_name: str) -> bool:
    try:
        store.get(NODES, node_name)
    except ApiError:
        return False
    return True
