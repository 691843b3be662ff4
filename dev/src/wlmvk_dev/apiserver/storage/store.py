"""The object store: every object the in-memory API server holds, and watches on them.

This is the one source of truth of ``wlmvk_dev.apiserver``. The HTTP layer and the
in-process controllers (scheduler, garbage collector, node lifecycle, host kubelet)
all read and write through it, so a controller sees exactly what kubectl sees.

Public API (all objects are plain JSON dicts, see :data:`resources.Obj`)::

    store = Store(history=10_000)           # built-in kinds, CRD handling, Events mirroring,
                                            # default namespaces (built_ins=False: kinds only)
    store.register(info) / unregister(gvr)  # resource types; CRDs do this for you (crds.py)
    store.info(gvr) -> ResourceInfo         # 404 ApiError if unknown; store.resources() lists all
    store.resource_version -> int           # the newest resourceVersion handed out

    store.get(gvr, name, namespace=None) -> Obj
    store.list(gvr, namespace=None, label_selector=..., field_selector=...) -> ListResult(items, rv)
    store.create(gvr, obj, namespace=None, dry_run=False) -> Obj
    store.update(gvr, obj, namespace=None, subresource=None, client=False, dry_run=False) -> Obj
    store.patch(gvr, name, patch, namespace=None, patch_type="merge"|"strategic"|"json"|"apply",
                subresource=None, field_manager=None, force=False, client=False, dry_run=False) -> Obj
    store.delete(gvr, name, namespace=None, grace_period_seconds=None,
                 propagation_policy=None, preconditions=None, dry_run=False) -> Obj
    store.delete_collection(gvr, namespace=None, label_selector=..., field_selector=...) -> list[Obj]
    store.bind(namespace, pod_name, node_name) -> Obj        # the pods/binding subresource
    store.watch(gvr, namespace=None, resource_version=None, label_selector=..., field_selector=...,
                bookmarks=False, bookmark_interval=60.0, timeout=None) -> Watch
    store.on_change(gvr, callback)          # synchronous hook after each committed change
    store.watcher_count(gvr) -> int         # open watches (tests wait on it)

``gvr`` is a :class:`resources.GVR` such as ``resources.PODS`` or
``GVR("wlm.sylabs.io", "v1alpha1", "slurmjobs")``. ``namespace`` is ignored for
cluster-scoped kinds; for namespaced kinds ``None`` means "all namespaces" in ``list``,
``watch`` and ``delete_collection``, and the object's own ``metadata.namespace`` (else
``default``) elsewhere. Selectors are strings in query form (``"app=x,tier!=db"``,
``"spec.nodeName=n1"``) or parsed :mod:`selectors` values.

Semantics, as the real API server:

- Writes are synchronous and atomic on the event loop; every write takes the next global
  ``resourceVersion`` (a monotonic integer, rendered as a string in objects).
- ``create`` sets ``uid``, ``creationTimestamp``, ``generation`` = 1, ``resourceVersion``,
  fills ``name`` from ``generateName``, and answers 409 AlreadyExists, 404 when the
  namespace does not exist, 422 Invalid when the resource's validator rejects the object.
- ``update`` answers 409 Conflict when ``metadata.resourceVersion`` is set and stale (unset
  means an unconditional update). On kinds with a ``status`` subresource, a main-resource
  update keeps the stored status and ``subresource="status"`` changes only the status.
  ``generation`` increases when anything outside ``metadata``/``status`` changes.
- ``delete``: an object with finalizers (or ``propagation_policy="Foreground"``, which adds the
  ``foregroundDeletion`` finalizer for the garbage collector to clear) only gets
  ``deletionTimestamp``; it goes once an update removes its last finalizer. Pods bound to a
  node and not Succeeded/Failed are deleted gracefully: ``deletionTimestamp`` = now + grace,
  ``deletionGracePeriodSeconds`` = grace; the pod stays until a delete with
  ``grace_period_seconds=0`` (the kubelet's) removes it. Unbound or terminal pods go at once.
  As kube-apiserver, a pod deletion is always written first (MODIFIED: ``deletionTimestamp``,
  the grace period, 0 when it goes now, ``generation`` + 1 the first time), then DELETED.
  ``"Orphan"`` strips the owner's ownerReferences from its dependents; ``"Background"``
  (default) leaves dependents to the garbage collector. Deleting a namespace marks it
  Terminating (creates in it answer 403), deletes its contents with these same rules, and
  removes it once it is empty. Returns the object as last stored (deleted objects carry
  the deleting RV).
- ``client=True`` on ``update``/``patch`` adds the checks kube-apiserver makes on client
  updates (a pod's spec is immutable but for images, activeDeadlineSeconds, added
  tolerations); the HTTP layer passes it, in-process controllers and tests may set up any
  state they need without it.
- Read results and in-process watch events are deep copies: mutate them freely.

Watches: ``store.watch(...)`` registers at once (no event can be missed between a ``list``
and a ``watch`` from its ``resource_version``) and returns a :class:`Watch`, an async
iterator of :class:`WatchEvent` (``type`` ADDED/MODIFIED/DELETED/BOOKMARK, ``object``,
``resource_version``). With ``resource_version`` None or ``"0"`` it starts with synthetic
ADDED events for the current objects; with ``"N"`` it replays history after N and raises
``ApiError`` 410 Expired at once when N is older than the bounded per-resource history
(``history`` events per resource type). Selector transitions follow Kubernetes: an object
modified into the selector arrives as ADDED, out of it as DELETED. With ``bookmarks`` a
BOOKMARK (``object`` = ``{"kind", "apiVersion", "metadata": {"resourceVersion"}}``) comes
after ``bookmark_interval`` seconds without events, and (as kube-apiserver) one annotated
``k8s.io/initial-events-end: "true"`` right after the synthetic ADDED events. The iterator
ends after ``timeout`` seconds, on ``close()`` / ``async with`` exit, or when the resource
type is unregistered::

    with store.watch(PODS, field_selector="spec.nodeName=n1", resource_version=rv) as w:
        async for event in w:
            ...

Controllers: see ``controllers/__init__.py``. A controller is ``async def run(store: Store) -> None``
that runs until cancelled; ``ApiServer(controllers=[run, ...])`` starts them with the
server and cancels them when it stops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from wlmvk_dev.apiserver.objects.jsonvalues import clone, timestamp
from wlmvk_dev.apiserver.objects.resources import NAMESPACES
from wlmvk_dev.apiserver.storage.buckets import ChangeCallback, ListResult
from wlmvk_dev.apiserver.storage.deletion import Deletions
from wlmvk_dev.apiserver.storage.watching import Watch, WatchEvent
from wlmvk_dev.apiserver.storage.writes import Writes

__all__ = ["ChangeCallback", "ListResult", "Store", "Watch", "WatchEvent", "clone", "timestamp"]

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Store(Writes, Deletions):
    """See the module docstring: the writes of ``writes.py`` and deletions of ``deletion.py``
    over the buckets, reads and watches of ``buckets.py``."""

    def __init__(
        self,
        *,
        history: int = 10_000,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        namespaces: Iterable[str] = DEFAULT_NAMESPACES,
        built_ins: bool = True,
    ) -> None:
        super().__init__(history=history, clock=clock)
        if built_ins:
            # Imported here: both modules build on this one.
            from wlmvk_dev.apiserver.storage import crds, eventsbridge

            crds.install(self)
            eventsbridge.install(self)
        for name in namespaces:
            self.create(NAMESPACES, {"metadata": {"name": name}})
