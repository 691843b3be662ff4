"""The node lifecycle controller: silent kubelets make their nodes Unknown and unreachable.

Every ``monitor_period`` seconds (and at once when a node or its Lease
changes) each node is checked against :mod:`nodehealth`:

- no heartbeat (Lease ``spec.renewTime`` in ``kube-node-lease``, Ready
  ``lastHeartbeatTime``) for longer than ``grace_period`` (default 40 s, as
  ``--node-monitor-grace-period``) -> the kubelet's conditions become Unknown
  ("Kubelet stopped posting node status.") and a ``NodeNotReady`` Event is
  recorded;
- the taints follow the Ready condition: ``node.kubernetes.io/unreachable``
  (Unknown) or ``node.kubernetes.io/not-ready`` (False), NoSchedule and
  NoExecute, removed once the kubelet reports Ready again;
  ``node.kubernetes.io/unschedulable`` for cordoned nodes;
- with ``evict`` (default), pods that do not tolerate a NoExecute taint (or
  only for ``tolerationSeconds``, 300 s by the API server's default
  tolerations) are deleted, gracefully, as taint-based eviction does.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import structlog

from wlmvk.core.names import EventType
from wlmvk_dev.apiserver.controllers import nodehealth
from wlmvk_dev.apiserver.controllers.eventrecorder import EventRecorder
from wlmvk_dev.apiserver.controllers.workqueue import WorkQueue
from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.resources import LEASES, NODES, PODS, Obj
from wlmvk_dev.apiserver.storage.store import Store

_log = structlog.get_logger(__name__)

DEFAULT_GRACE_PERIOD = 40.0
DEFAULT_MONITOR_PERIOD = 5.0


async def run(
    store: Store,
    *,
    grace_period: float = DEFAULT_GRACE_PERIOD,
    monitor_period: float | None = None,
    evict: bool = True,
) -> None:
    """Watch over node health until cancelled."""
    period = monitor_period if monitor_period is not None else min(DEFAULT_MONITOR_PERIOD, grace_period / 4)
    controller = _NodeLifecycle(store, timedelta(seconds=grace_period), evict=evict)
    queue: WorkQueue[str] = WorkQueue()

    def node_changed(kind: str, node: Obj, previous: Obj | None) -> None:
        if kind != "DELETED":
            queue.add(node["metadata"]["name"])

    def lease_changed(kind: str, lease: Obj, previous: Obj | None) -> None:
        if lease["metadata"].get("namespace") == nodehealth.LEASE_NAMESPACE and kind != "DELETED":
            queue.add(lease["metadata"]["name"])

    store.on_change(NODES, node_changed)
    store.on_change(LEASES, lease_changed)
    loop = asyncio.get_running_loop()
    next_scan = loop.time()
    try:
        while True:
            names = set(await queue.take(timeout=max(0.0, next_scan - loop.time())))
            if loop.time() >= next_scan:
                next_scan = loop.time() + period
                names |= {n["metadata"]["name"] for n in store.list(NODES, copy=False).items}
            for name in sorted(names):
                controller.check(name)
            await asyncio.sleep(0)
    finally:
        queue.close()


class _NodeLifecycle:
    def __init__(self, store: Store, grace: timedelta, *, evict: bool) -> None:
        self.store = store
        self.grace = grace
        self.evict = evict
        self.events = EventRecorder(store, component="node-controller")

    def check(self, name: str) -> None:
        try:
            self._check(name)
        except ApiError as exc:
            # Raced the kubelet; the node is checked again on its change or the next period.
            _log.debug("node check failed", node=name, error=exc.message)

    def _check(self, name: str) -> None:
        try:
            node = self.store.get(NODES, name)
        except ApiError:
            return
        now = self.store.now()
        if nodehealth.is_stale(node, self._lease(name), now, self.grace):
            conditions = nodehealth.unknown_conditions(node, now)
            if conditions is not None:
                node.setdefault("status", {})["conditions"] = conditions
                node = self.store.update(NODES, node, subresource="status")
                _log.info("node stopped reporting", node=name)
                self.events.record(
                    node, EventType.NORMAL, "NodeNotReady", f"Node {name} status is now: NodeNotReady"
                )
        taints = nodehealth.desired_taints(node, now)
        if taints is not None:
            spec = node.setdefault("spec", {})
            if taints:
                spec["taints"] = taints
            else:
                spec.pop("taints", None)
            node = self.store.update(NODES, node)
        if self.evict:
            self._evict(node)

    def _lease(self, name: str) -> Obj | None:
        try:
            return self.store.get(LEASES, name, nodehealth.LEASE_NAMESPACE)
        except ApiError:
            return None

    def _evict(self, node: Obj) -> None:
        if not any(t.get("effect") == "NoExecute" for t in (node.get("spec") or {}).get("taints") or []):
            return
        now = self.store.now()
        name = node["metadata"]["name"]
        for pod in self.store.list(PODS, field_selector=f"spec.nodeName={name}").items:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") or not nodehealth.eviction_due(pod, node, now):
                continue
            _log.info("evicting pod", node=name, pod=f"{meta['namespace']}/{meta['name']}")
            message = f"Marking for deletion Pod {meta['namespace']}/{meta['name']}"
            self.events.record(pod, EventType.NORMAL, "TaintManagerEviction", message)
            self.store.delete(PODS, meta["name"], meta["namespace"], preconditions={"uid": meta["uid"]})
