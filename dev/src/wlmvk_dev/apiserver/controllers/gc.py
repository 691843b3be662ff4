"""The garbage collector: deletes objects whose owners are gone, across every served kind.

As kube-controller-manager's collector, it keeps a graph of ownerReferences
(owner uid -> dependents) up to date from store changes, including custom
resources whose CRD appears later, and acts on what :mod:`ownership` decides:

- background cascade: once every owner of an object is gone, the object is
  deleted (and its own dependents follow the same way);
- an owner deleted in the foreground (``propagationPolicy: Foreground``, which
  the store turns into the ``foregroundDeletion`` finalizer) has its dependents
  deleted first, and loses the finalizer (so the store removes it) once no
  dependent with ``blockOwnerDeletion: true`` remains;
- references to owners that are gone while another owner remains are removed;
- an owner carrying the ``orphan`` finalizer has its references removed from
  its dependents, then the finalizer. (``propagationPolicy: Orphan`` on delete
  is done by the store itself.)

It also runs the pod garbage collector (:mod:`podgc`): pods bound to a node
that has been gone for ``orphaned_pod_quarantine`` seconds are force-deleted.
"""

from __future__ import annotations

from typing import Any

import structlog

from wlmvk.core.tasks import guarded, stop
from wlmvk_dev.apiserver.controllers import ownership, podgc
from wlmvk_dev.apiserver.controllers.workqueue import WorkQueue
from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.resources import GVR, Obj
from wlmvk_dev.apiserver.storage.store import ChangeCallback, Store

_log = structlog.get_logger(__name__)

Where = tuple[GVR, str, str]
"""resource type, namespace ("" when cluster-scoped), name"""


async def run(store: Store, *, orphaned_pod_quarantine: float = podgc.DEFAULT_QUARANTINE) -> None:
    """Collect garbage until cancelled (orphaned pods too: see :mod:`podgc`)."""
    collector = _Collector(store)
    collector.attach()
    store.on_registry_change(collector.attach)
    pods = guarded(podgc.run(store, quarantine=orphaned_pod_quarantine), name="apiserver-podgc")
    try:
        while True:
            for uid in await collector.queue.take():
                collector.process(uid)
    finally:
        collector.queue.close()
        await stop(pods)


class _Collector:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.queue: WorkQueue[str] = WorkQueue()
        self.where: dict[str, Where] = {}
        self.dependents: dict[str, set[str]] = {}
        self.attached: set[GVR] = set()

    def attach(self) -> None:
        """Follow every served resource type not followed yet (store callbacks cannot be removed)."""
        served = {info.gvr for info in self.store.resources()}
        for gvr in served - self.attached:
            self.attached.add(gvr)
            self.store.on_change(gvr, self._callback(gvr))
            for obj in self.store.list(gvr, copy=False).items:
                self.changed(gvr, "ADDED", obj, None)
        # A type served again later gets a fresh bucket, which needs a fresh callback.
        self.attached &= served

    def _callback(self, gvr: GVR) -> ChangeCallback:
        def callback(kind: str, obj: Obj, previous: Obj | None) -> None:
            self.changed(gvr, kind, obj, previous)

        return callback

    # -- the graph (synchronous, inside store writes) ------------------------------------------

    def changed(self, gvr: GVR, kind: str, obj: Obj, previous: Obj | None) -> None:
        if self.queue.closed:
            return
        uid = ownership.uid(obj)
        old_owners = {str(r.get("uid")) for r in ownership.owner_refs(previous or {})}
        new_owners = {str(r.get("uid")) for r in ownership.owner_refs(obj)} if kind != "DELETED" else set()
        for owner in old_owners - new_owners:
            self._unlink(owner, uid)
        for owner in new_owners - old_owners:
            self.dependents.setdefault(owner, set()).add(uid)
        if kind == "DELETED":
            self.where.pop(uid, None)
            for dependent in self.dependents.get(uid, ()):
                self.queue.add(dependent)
        else:
            meta = obj.get("metadata") or {}
            self.where[uid] = (gvr, meta.get("namespace") or "", meta.get("name", ""))
            if new_owners:
                self.queue.add(uid)
            if ownership.is_deleting(obj) and {ownership.FOREGROUND, ownership.ORPHAN} & set(
                ownership.finalizers(obj)
            ):
                self.queue.add(uid)
                for dependent in self.dependents.get(uid, ()):
                    self.queue.add(dependent)
        # Owners waiting in the foreground may be free now.
        for owner in old_owners | new_owners:
            self.queue.add(owner)

    def _unlink(self, owner: str, dependent: str) -> None:
        found = self.dependents.get(owner)
        if found is not None:
            found.discard(dependent)
            if not found:
                del self.dependents[owner]

    # -- decisions and writes ----------------------------------------------------------------

    def find(self, uid: str) -> Obj | None:
        where = self.where.get(uid)
        if where is None:
            return None
        try:
            return self.store.get(where[0], where[2], where[1] or None)
        except ApiError:
            return None

    def process(self, uid: str) -> None:
        obj = self.find(uid)
        if obj is None:
            return
        try:
            self._as_dependent(uid, obj)
            if ownership.is_deleting(obj):
                self._as_owner(uid)
        except ApiError as exc:
            # Raced another writer; its change callback has queued the object again.
            _log.debug("garbage collection step failed", uid=uid, error=exc.message)

    def _as_dependent(self, uid: str, obj: Obj) -> None:
        action = ownership.dependent_action(obj, self.find)
        gvr, namespace, name = self.where[uid]
        if isinstance(action, ownership.DropOwnerRefs):
            kept = ownership.without_refs(ownership.owner_refs(obj), action.uids)
            _set(obj["metadata"], "ownerReferences", kept)
            self.store.update(gvr, obj, namespace or None)
        elif isinstance(action, ownership.Delete):
            _log.info("deleting dependent", resource=str(gvr), namespace=namespace, name=name)
            self.store.delete(
                gvr,
                name,
                namespace or None,
                propagation_policy=action.propagation,
                preconditions={"uid": uid},
            )

    def _as_owner(self, uid: str) -> None:
        owner = self.find(uid)
        if owner is None:
            return
        dependents = [d for d in (self.find(u) for u in self.dependents.get(uid, ())) if d is not None]
        finalizers = ownership.finalizers(owner)
        if ownership.ORPHAN in finalizers:
            for dependent in dependents:
                kept = ownership.without_refs(ownership.owner_refs(dependent), frozenset({uid}))
                _set(dependent["metadata"], "ownerReferences", kept)
                where = self.where[ownership.uid(dependent)]
                self.store.update(where[0], dependent, where[1] or None)
            finalizers = [f for f in finalizers if f != ownership.ORPHAN]
        elif ownership.FOREGROUND in finalizers and not ownership.blocking_dependents(owner, dependents):
            finalizers = [f for f in finalizers if f != ownership.FOREGROUND]
        if finalizers != ownership.finalizers(owner):
            _set(owner["metadata"], "finalizers", finalizers)
            gvr, namespace, _ = self.where[uid]
            self.store.update(gvr, owner, namespace or None)


def _set(meta: dict[str, Any], key: str, items: list[Any]) -> None:
    if items:
        meta[key] = items
    else:
        meta.pop(key, None)
