"""The scheduler: binds pending pods to nodes, as kube-scheduler would.

Event-driven like kube-scheduler's queues: a pod enters the *active* queue when
it is created or changed while pending; a pod no node fits is recorded as
unschedulable (condition ``PodScheduled=False``, reason ``Unschedulable``, and
a ``FailedScheduling`` Warning Event counted up rather than repeated) and
waits until the cluster changes in a way that may help: a node added or
changed in what scheduling looks at (labels, taints, unschedulable,
allocatable, readiness), or a bound pod gone or finished. Every
``retry_interval`` seconds all unschedulable pods are retried anyway
(kube-scheduler's flush of its unschedulable queue).

A pod is this scheduler's when its ``schedulerName`` is ``default-scheduler``
(or empty), it has no ``nodeName`` and it is not being deleted. Decisions are
:func:`placement.decide`; binding goes through :meth:`Store.bind` (the
``pods/binding`` subresource), followed by a ``Scheduled`` Normal Event.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from wlmvk.core.names import EventType
from wlmvk_dev.apiserver.controllers import placement, podresources
from wlmvk_dev.apiserver.controllers.eventrecorder import EventRecorder
from wlmvk_dev.apiserver.controllers.workqueue import WorkQueue
from wlmvk_dev.apiserver.objects import timestamps
from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.resources import NODES, PODS, Obj
from wlmvk_dev.apiserver.storage.store import Store

_log = structlog.get_logger(__name__)

SCHEDULER_NAME = "default-scheduler"
DEFAULT_RETRY_INTERVAL = 300.0

PodKey = tuple[str, str]


async def run(store: Store, *, retry_interval: float = DEFAULT_RETRY_INTERVAL) -> None:
    """Schedule pods until cancelled."""
    scheduler = _Scheduler(store)
    store.on_change(PODS, scheduler.pod_changed)
    store.on_change(NODES, scheduler.node_changed)
    for pod in store.list(PODS, copy=False).items:
        scheduler.pod_changed("ADDED", pod, None)
    try:
        await scheduler.work(retry_interval)
    finally:
        scheduler.queue.close()


class _Scheduler:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.queue: WorkQueue[PodKey] = WorkQueue()
        self.unschedulable: set[PodKey] = set()
        self.events = EventRecorder(store, component=SCHEDULER_NAME)

    # -- change callbacks (synchronous, inside store writes) --------------------------------

    def pod_changed(self, kind: str, pod: Obj, previous: Obj | None) -> None:
        key = _key(pod)
        if kind == "DELETED":
            self.unschedulable.discard(key)
            if _node_of(pod) and not podresources.is_terminated(pod):
                self._retry_unschedulable()
            return
        if is_pending_for_us(pod):
            if previous is None or _spec_or_meta_changed(pod, previous) or key not in self.unschedulable:
                self.unschedulable.discard(key)
                self.queue.add(key)
        elif (
            previous is not None
            and _node_of(pod)
            and podresources.is_terminated(pod)
            and not podresources.is_terminated(previous)
        ):
            self._retry_unschedulable()

    def node_changed(self, kind: str, node: Obj, previous: Obj | None) -> None:
        if kind == "DELETED":
            return
        if previous is None or _scheduling_view(node) != _scheduling_view(previous):
            self._retry_unschedulable()

    def _retry_unschedulable(self) -> None:
        for key in self.unschedulable:
            self.queue.add(key)
        self.unschedulable.clear()

    # -- the worker --------------------------------------------------------------------------

    async def work(self, retry_interval: float) -> None:
        loop = asyncio.get_running_loop()
        next_flush = loop.time() + retry_interval
        while True:
            keys = await self.queue.take(timeout=max(0.0, next_flush - loop.time()))
            if loop.time() >= next_flush:
                next_flush = loop.time() + retry_interval
                self._retry_unschedulable()
                keys += await self.queue.take(timeout=0)
            if keys:
                self.schedule(keys)
            # Let writers and watchers run between batches.
            await asyncio.sleep(0)

    def schedule(self, keys: list[PodKey]) -> None:
        nodes = self.store.list(NODES, copy=False).items
        usage = podresources.usage_by_node(self.store.list(PODS, copy=False).items)
        for key in keys:
            try:
                pod = self.store.get(PODS, key[1], key[0])
            except ApiError:
                continue
            if not is_pending_for_us(pod):
                continue
            decision = placement.decide(pod, nodes, usage)
            if isinstance(decision, placement.Bind):
                self._bind(pod, decision.node, usage)
            else:
                self._mark_unschedulable(pod, decision.message)

    def _bind(self, pod: Obj, node: str, usage: dict[str, podresources.Usage]) -> None:
        meta = pod["metadata"]
        try:
            bound = self.store.bind(meta["namespace"], meta["name"], node)
        except ApiError as exc:
            _log.info("binding failed", pod=meta["name"], node=node, error=exc.message)
            return
        usage.setdefault(node, podresources.Usage()).add(bound)
        self.events.record(
            bound,
            EventType.NORMAL,
            "Scheduled",
            f"Successfully assigned {meta['namespace']}/{meta['name']} to {node}",
        )

    def _mark_unschedulable(self, pod: Obj, message: str) -> None:
        key = _key(pod)
        self.unschedulable.add(key)
        conditions = [dict(c) for c in (pod.get("status") or {}).get("conditions") or []]
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        wanted = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        if current is None or any(current.get(k) != v for k, v in wanted.items()):
            condition: dict[str, Any] = {**wanted, "lastProbeTime": None}
            condition["lastTransitionTime"] = (
                current.get("lastTransitionTime")
                if current is not None and current.get("status") == "False"
                else timestamps.format_time(self.store.now())
            )
            others = [c for c in conditions if c.get("type") != "PodScheduled"]
            pod.setdefault("status", {})["conditions"] = [*others, condition]
            try:
                pod = self.store.update(PODS, pod, subresource="status")
            except ApiError as exc:
                # Changed meanwhile: the change callback has queued it again.
                _log.debug("status update failed", pod=key, error=exc.message)
                return
        self.events.record(pod, EventType.WARNING, "FailedScheduling", message)


def is_pending_for_us(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    return (
        not spec.get("nodeName")
        and spec.get("schedulerName", SCHEDULER_NAME) in (SCHEDULER_NAME, "", None)
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
        and not podresources.is_terminated(pod)
    )


def _key(pod: Obj) -> PodKey:
    meta = pod.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


def _node_of(pod: Obj) -> str:
    node: str = (pod.get("spec") or {}).get("nodeName") or ""
    return node


def _spec_or_meta_changed(pod: Obj, previous: Obj) -> bool:
    """A change the scheduling decision may depend on (not our own status writes)."""
    return pod.get("spec") != previous.get("spec") or (pod.get("metadata") or {}).get("labels") != (
        previous.get("metadata") or {}
    ).get("labels")


def _scheduling_view(node: Obj) -> tuple[Any, ...]:
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    ready = placement.ready_condition(node)
    return (
        meta.get("labels"),
        spec.get("taints"),
        spec.get("unschedulable"),
        status.get("allocatable"),
        status.get("capacity"),
        ready.get("status") if ready is not None else None,
    )
