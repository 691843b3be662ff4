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

Controllers: see ``controllers.py``. A controller is ``async def run(store: Store) -> None``
that runs until cancelled; ``ApiServer(controllers=[run, ...])`` starts them with the
server and cancels them when it stops.
"""

from __future__ import annotations

import collections
import functools
import random
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from wlmvk_dev.apiserver.objects import timestamps
from wlmvk_dev.apiserver.objects.errors import (
    STALE,
    ApiError,
    Cause,
    already_exists,
    bad_request,
    conflict,
    gone,
    invalid,
    no_resource,
    not_found,
)
from wlmvk_dev.apiserver.objects.jsonvalues import clone, timestamp
from wlmvk_dev.apiserver.objects.resources import BUILTINS, GVR, NAMESPACES, PODS, Obj, ResourceInfo
from wlmvk_dev.apiserver.objects.selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from wlmvk_dev.apiserver.rules import patching, schema, strategies, validation
from wlmvk_dev.apiserver.storage.watching import Filter, Watch, WatchEvent

__all__ = ["ChangeCallback", "ListResult", "Store", "Watch", "WatchEvent", "clone", "timestamp"]

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

ChangeCallback = Callable[[str, Obj, Obj | None], None]
"""``callback(event_type, new_or_deleted_object, previous_object_or_None)``."""

ObjList = list[Obj]
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


class ListResult(NamedTuple):
    items: list[Obj]
    resource_version: str


class _Bucket:
    """Objects and recent history of one resource type."""

    def __init__(self, info: ResourceInfo, history: int) -> None:
        self.info = info
        self.objects: dict[tuple[str, str], Obj] = {}
        self.history: collections.deque[WatchEvent] = collections.deque()
        self.history_limit = history
        self.compacted = 0
        self.watches: set[Watch] = set()
        self.listeners: list[ChangeCallback] = []


class Store:
    """See the module docstring."""

    def __init__(
        self,
        *,
        history: int = 10_000,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        namespaces: Iterable[str] = DEFAULT_NAMESPACES,
        built_ins: bool = True,
    ) -> None:
        self._history = history
        self._clock = clock
        self._rv = 0
        self._buckets: dict[GVR, _Bucket] = {}
        self._registry_listeners: list[Callable[[], None]] = []
        self._applied: dict[str, dict[str, Obj]] = {}
        """Server-side apply: the last configuration each field manager applied, per object uid."""
        for info in BUILTINS:
            self.register(info)
        if built_ins:
            # Imported here: both modules build on this one.
            from wlmvk_dev.apiserver.storage import crds, eventsbridge

            crds.install(self)
            eventsbridge.install(self)
        for name in namespaces:
            self.create(NAMESPACES, {"metadata": {"name": name}})

    # -- resource types ---------------------------------------------------------------------

    def register(self, info: ResourceInfo) -> None:
        """Serve a resource type (replacing the description of one already served)."""
        bucket = self._buckets.get(info.gvr)
        if bucket is None:
            self._buckets[info.gvr] = _Bucket(info, self._history)
        else:
            bucket.info = info
        self._registry_changed()

    def unregister(self, gvr: GVR) -> None:
        """Stop serving a resource type: its objects are dropped and its watches end."""
        bucket = self._buckets.pop(gvr, None)
        if bucket is not None:
            for w in list(bucket.watches):
                w._end()
            self._registry_changed()

    def close_watches(self) -> None:
        """End every open watch (the server is stopping)."""
        for bucket in self._buckets.values():
            for w in list(bucket.watches):
                w._end()

    def on_registry_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` whenever the set of served resource types changes."""
        self._registry_listeners.append(callback)

    def _registry_changed(self) -> None:
        for cb in self._registry_listeners:
            cb()

    def resources(self) -> list[ResourceInfo]:
        return [b.info for b in self._buckets.values()]

    def info(self, gvr: GVR) -> ResourceInfo:
        return self._bucket(gvr).info

    def find(self, group: str, version: str, resource: str) -> ResourceInfo | None:
        bucket = self._buckets.get(GVR(group, version, resource))
        return bucket.info if bucket else None

    def on_change(self, gvr: GVR, callback: ChangeCallback) -> None:
        """Call ``callback(type, obj, previous)`` synchronously after each change of ``gvr``."""
        self._bucket(gvr).listeners.append(callback)

    @property
    def resource_version(self) -> int:
        return self._rv

    def now(self) -> datetime:
        return self._clock()

    def _bucket(self, gvr: GVR) -> _Bucket:
        bucket = self._buckets.get(gvr)
        if bucket is None:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({gvr})")
        return bucket

    # -- reads ------------------------------------------------------------------------------

    def get(self, gvr: GVR, name: str, namespace: str | None = None) -> Obj:
        bucket = self._bucket(gvr)
        return clone(self._raw(bucket, name, namespace))

    def _raw(self, bucket: _Bucket, name: str, namespace: str | None) -> Obj:
        key = (self._ns(bucket.info, namespace, None), name)
        obj = bucket.objects.get(key)
        if obj is None:
            raise not_found(bucket.info.plural, name, group=bucket.info.group)
        return obj

    def list(
        self,
        gvr: GVR,
        namespace: str | None = None,
        *,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | FieldSelector | None = None,
        copy: bool = True,
    ) -> ListResult:
        """Matching objects sorted by namespace and name, and the store's resourceVersion.

        ``copy=False`` returns the stored objects themselves (read-only; used by the HTTP layer).
        """
        bucket = self._bucket(gvr)
        flt = self._filter(bucket.info, namespace, label_selector, field_selector)
        items = [obj for _, obj in sorted(bucket.objects.items()) if flt.matches(obj)]
        return ListResult([clone(o) for o in items] if copy else items, str(self._rv))

    def _filter(
        self,
        info: ResourceInfo,
        namespace: str | None,
        labels: str | LabelSelector | None,
        fields: str | FieldSelector | None,
    ) -> Filter:
        ls = labels if isinstance(labels, LabelSelector) else parse_label_selector(labels)
        fs = fields if isinstance(fields, FieldSelector) else parse_field_selector(fields)
        return Filter(namespace if info.namespaced else None, ls, fs)

    # -- writes -----------------------------------------------------------------------------

    def create(self, gvr: GVR, obj: Obj, namespace: str | None = None, *, dry_run: bool = False) -> Obj:
        bucket = self._bucket(gvr)
        info = bucket.info
        new = clone(obj)
        if not isinstance(new, dict):
            raise bad_request("the object must be a JSON object")
        self._check_type(info, new)
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            meta = new["metadata"] = {}
        ns = self._ns(info, namespace, meta.get("namespace"))
        if info.namespaced:
            if namespace is not None and meta.get("namespace") not in (None, "", namespace):
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = ns
            if NAMESPACES in self._buckets:
                home = self._buckets[NAMESPACES].objects.get(("", ns))
                if home is None:
                    raise not_found("namespaces", ns)
                if "deletionTimestamp" in home["metadata"]:
                    raise ApiError(
                        403,
                        "Forbidden",
                        f'{info.plural} "{meta.get("name") or meta.get("generateName", "")}" is forbidden: '
                        f"unable to create new content in namespace {ns} because it is being terminated",
                    )
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = self._generate(bucket, ns, meta["generateName"])
            else:
                raise invalid(
                    info.kind,
                    "",
                    [_cause("metadata.name", "Required value: name or generateName is required")],
                )
        name = meta["name"]
        if (ns, name) in bucket.objects:
            raise already_exists(info.plural, name, group=info.group)
        for stale in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(stale, None)
        strategies.prepare_create(info, new)
        self._validate(info, new)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = timestamp(self.now())
        meta["generation"] = 1
        if dry_run:
            return new
        self._commit(bucket, "ADDED", new, None)
        return clone(new)

    def update(
        self,
        gvr: GVR,
        obj: Obj,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        client: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        bucket = self._bucket(gvr)
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            raise bad_request("the object must be a JSON object with metadata")
        name = obj["metadata"].get("name")
        if not name:
            raise bad_request("metadata.name is required")
        old = self._raw(
            bucket, name, namespace if namespace is not None else obj["metadata"].get("namespace")
        )
        return clone(
            self._replace(bucket, old, clone(obj), subresource=subresource, client=client, dry_run=dry_run)
        )

    def _replace(
        self,
        bucket: _Bucket,
        old: Obj,
        new: Obj,
        *,
        subresource: str | None,
        client: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        info = bucket.info
        self._check_type(info, new)
        old_meta, meta = old["metadata"], new.setdefault("metadata", {})
        if meta.get("namespace") not in (None, "", old_meta.get("namespace")) and info.namespaced:
            raise bad_request("the namespace of the object does not match the namespace of the request")
        if meta.get("name") != old_meta["name"]:
            raise bad_request("the name of the object does not match the name on the URL")
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and str(rv) != old_meta["resourceVersion"]:
            raise conflict(info.plural, old_meta["name"], STALE, group=info.group)
        if meta.get("uid") not in (None, "", old_meta["uid"]):
            raise conflict(
                info.plural, old_meta["name"], "Precondition failed: UID in object meta", group=info.group
            )
        if subresource == "status":
            merged = clone(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            if info.group in patching.BUILTIN_GROUPS:
                # Built-in status strategies keep the spec, not the labels and annotations
                # (custom resources keep everything but the status).
                for key in ("labels", "annotations"):
                    if key in meta:
                        merged["metadata"][key] = meta[key]
                    else:
                        merged["metadata"].pop(key, None)
            new = merged
        elif subresource is not None:
            raise no_resource()
        else:
            if info.has_status:
                if "status" in old:
                    new["status"] = clone(old["status"])
                else:
                    new.pop("status", None)
            for fixed in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "namespace",
            ):
                if fixed in old_meta:
                    meta[fixed] = old_meta[fixed]
                else:
                    meta.pop(fixed, None)
            meta.pop("managedFields", None)
            if "deletionTimestamp" in old_meta:
                added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
                if added:
                    raise invalid(
                        info.kind,
                        old_meta["name"],
                        [
                            _cause(
                                "metadata.finalizers",
                                "Forbidden: no new finalizers can be added if the object is being deleted",
                            )
                        ],
                        group=info.group,
                    )
        new["metadata"]["generation"] = old_meta.get("generation", 1) + (1 if _spec_changed(old, new) else 0)
        self._validate(info, new, old if client else None, subresource=subresource)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        new["apiVersion"], new["kind"] = info.api_version, info.kind
        if new == old or dry_run:
            return new
        if (
            "deletionTimestamp" in old_meta
            and not new["metadata"].get("finalizers")
            and self._may_go(info, new)
        ):
            self._commit(bucket, "DELETED", new, old)
            return new
        self._commit(bucket, "MODIFIED", new, old)
        return new

    @staticmethod
    def _may_go(info: ResourceInfo, obj: Obj) -> bool:
        """Whether a deleting object without finalizers is gone (pods wait for their kubelet)."""
        return info.gvr != PODS or obj["metadata"].get("deletionGracePeriodSeconds", 0) == 0

    def patch(
        self,
        gvr: GVR,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        client: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        """Patch an object. ``patch_type``: merge, strategic, json, apply (server-side apply).

        A server-side apply of a missing object creates it. ``dry_run`` computes the result
        without storing it (``kubectl diff``).
        """
        bucket = self._bucket(gvr)
        info = bucket.info
        if patch_type == "apply":
            if not isinstance(patch, dict):
                raise bad_request("an apply patch must be an object")
            try:
                old = self._raw(bucket, name, namespace)
            except ApiError as e:
                if e.code != 404 or subresource:
                    raise
                body = clone(patch)
                body.setdefault("metadata", {})["name"] = name
                made = self.create(gvr, body, namespace, dry_run=dry_run)
                if not dry_run:
                    self._applied[made["metadata"]["uid"]] = {field_manager or "": clone(patch)}
                return made
        else:
            old = self._raw(bucket, name, namespace)
        base = old
        if patch_type == "apply" and subresource is None:
            managers = self._applied.get(old["metadata"]["uid"], {})
            if not dry_run:
                self._applied[old["metadata"]["uid"]] = managers
            previous = managers.get(field_manager or "")
            if previous is not None:
                builtin = info.group in patching.BUILTIN_GROUPS
                base = patching.forget_unapplied(old, previous, patch, builtin=builtin)
            if not dry_run:
                managers[field_manager or ""] = clone(patch)
        new = clone(patching.apply_patch(base, patch, patch_type, info))
        meta = new.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        pinned = isinstance(patch, dict) and "resourceVersion" in (patch.get("metadata") or {})
        if patch_type == "apply" or not pinned:
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        meta.setdefault("name", name)
        return clone(self._replace(bucket, old, new, subresource=subresource, client=client, dry_run=dry_run))

    def bind(self, namespace: str, pod_name: str, node_name: str) -> Obj:
        """Bind a pod to a node (``pods/binding``): 409 if it already has one."""
        bucket = self._bucket(PODS)
        old = self._raw(bucket, pod_name, namespace)
        if old["spec"].get("nodeName"):
            raise conflict(
                "pods", pod_name, f"pod {pod_name} is already assigned to node {old['spec']['nodeName']!r}"
            )
        if "deletionTimestamp" in old["metadata"]:
            raise conflict("pods", pod_name, "pod is being deleted, cannot be assigned to a host")
        new = clone(old)
        new["spec"]["nodeName"] = node_name
        conds = [
            c for c in new.setdefault("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"
        ]
        conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": timestamp(self.now())})
        new["status"]["conditions"] = conds
        self._commit(bucket, "MODIFIED", new, old)
        return clone(new)

    def delete(
        self,
        gvr: GVR,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> Obj:
        bucket = self._bucket(gvr)
        info = bucket.info
        old = self._raw(bucket, name, namespace)
        if dry_run:
            return clone(old)
        meta = old["metadata"]
        for key, label, why in (
            ("uid", "UID", "deleted and then recreated"),
            ("resourceVersion", "ResourceVersion", "modified"),
        ):
            want = (preconditions or {}).get(key)
            if want and want != meta.get(key):
                raise conflict(
                    info.kind,
                    name,
                    f"the {label} in the precondition ({want}) does not match the {label} in record "
                    f"({meta.get(key)}). The object might have been {why}",
                )
        if propagation_policy not in (None, "Background", "Foreground", "Orphan"):
            raise bad_request(f"unsupported propagationPolicy {propagation_policy!r}")
        if gvr == NAMESPACES:
            return self._terminate_namespace(old)
        if propagation_policy == "Orphan":
            self._orphan(meta["uid"])
        finalizers = list(meta.get("finalizers") or ())
        if propagation_policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if gvr == PODS:
            return self._delete_pod(bucket, old, finalizers, grace_period_seconds)
        if not finalizers:
            gone_obj = clone(old)
            self._commit(bucket, "DELETED", gone_obj, old)
            return clone(gone_obj)
        new = clone(old)
        nmeta = new["metadata"]
        nmeta["finalizers"] = finalizers
        if "deletionTimestamp" not in nmeta:
            nmeta["deletionTimestamp"] = timestamp(self.now())
            nmeta["deletionGracePeriodSeconds"] = 0
            nmeta["generation"] = nmeta.get("generation", 0) + 1
        if new != old:
            self._commit(bucket, "MODIFIED", new, old)
        return clone(new)

    def _delete_pod(self, bucket: _Bucket, old: Obj, finalizers: Sequence[str], requested: int | None) -> Obj:
        """Pod deletion as kube-apiserver's graceful strategy does it: the pod is first marked
        (``deletionTimestamp``, ``deletionGracePeriodSeconds``, generation + 1 the first time),
        a later delete may only shorten the grace period, and a grace period of 0 is written
        (MODIFIED) before the pod goes (DELETED), unless it already was 0."""
        meta = old["metadata"]
        grace = strategies.pod_grace_seconds(old, requested)
        marked_grace = meta.get("deletionGracePeriodSeconds")
        if "deletionTimestamp" in meta and not marked_grace:
            new = old  # marked with grace 0 already: it goes now (or when its finalizers do)
        elif "deletionTimestamp" in meta and grace >= marked_grace:
            return clone(old)  # a deletion with a shorter grace period is pending
        else:
            new = clone(old)
            nmeta = new["metadata"]
            if finalizers:
                nmeta["finalizers"] = list(finalizers)
            if "deletionTimestamp" in meta:
                marked = timestamps.parse(meta["deletionTimestamp"]) or self.now()
                started = marked - timedelta(seconds=marked_grace)
            else:
                started = self.now()
                nmeta["generation"] = nmeta.get("generation", 0) + 1
            nmeta["deletionTimestamp"] = timestamp(started + timedelta(seconds=grace))
            nmeta["deletionGracePeriodSeconds"] = grace
            self._commit(bucket, "MODIFIED", new, old)
        if finalizers or new["metadata"]["deletionGracePeriodSeconds"]:
            return clone(new)
        gone_obj = clone(new)
        self._commit(bucket, "DELETED", gone_obj, new)
        return clone(gone_obj)

    def delete_collection(
        self,
        gvr: GVR,
        namespace: str | None = None,
        *,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | FieldSelector | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> ObjList:
        found = self.list(
            gvr, namespace, label_selector=label_selector, field_selector=field_selector, copy=False
        )
        done = []
        for obj in found.items:
            meta = obj["metadata"]
            try:
                done.append(
                    self.delete(
                        gvr,
                        meta["name"],
                        meta.get("namespace"),
                        grace_period_seconds=grace_period_seconds,
                        propagation_policy=propagation_policy,
                    )
                )
            except ApiError as e:
                if e.code != 404:
                    raise
        return done

    def _terminate_namespace(self, namespace: Obj) -> Obj:
        """Mark the namespace Terminating, delete its contents as clients would, and let it go
        once it is empty (bound pods wait for their kubelet, finalizers hold their objects)."""
        name = namespace["metadata"]["name"]
        if "deletionTimestamp" not in namespace["metadata"]:
            marked = clone(namespace)
            marked["metadata"]["deletionTimestamp"] = timestamp(self.now())
            marked["metadata"]["deletionGracePeriodSeconds"] = 0
            marked.setdefault("status", {})["phase"] = "Terminating"
            self._commit(self._buckets[NAMESPACES], "MODIFIED", marked, namespace)
            for bucket in list(self._buckets.values()):
                if not bucket.info.namespaced:
                    continue
                for (ns, obj_name), obj in list(bucket.objects.items()):
                    if ns == name and "deletionTimestamp" not in obj["metadata"]:
                        try:
                            self.delete(bucket.info.gvr, obj_name, ns)
                        except ApiError as e:
                            if e.code != 404:  # gone already, e.g. a mirrored Event
                                raise
        self._finish_namespace(name)
        current = self._buckets[NAMESPACES].objects.get(("", name))
        if current is not None:
            return clone(current)
        return clone(self._buckets[NAMESPACES].history[-1].object)

    def _finish_namespace(self, name: str) -> None:
        """Remove a terminating namespace that has become empty."""
        bucket = self._buckets.get(NAMESPACES)
        namespace = bucket.objects.get(("", name)) if bucket else None
        if bucket is None or namespace is None or "deletionTimestamp" not in namespace["metadata"]:
            return
        for other in self._buckets.values():
            if other.info.namespaced and any(ns == name for ns, _ in other.objects):
                return
        self._commit(bucket, "DELETED", clone(namespace), namespace)

    def _orphan(self, owner_uid: str) -> None:
        for bucket in list(self._buckets.values()):
            for obj in list(bucket.objects.values()):
                refs = obj["metadata"].get("ownerReferences") or []
                kept = [r for r in refs if r.get("uid") != owner_uid]
                if len(kept) != len(refs):
                    new = clone(obj)
                    if kept:
                        new["metadata"]["ownerReferences"] = kept
                    else:
                        del new["metadata"]["ownerReferences"]
                    self._commit(bucket, "MODIFIED", new, obj)

    def _commit(self, bucket: _Bucket, type: str, obj: Obj, previous: Obj | None) -> None:
        """Store (or remove) ``obj`` with the next resourceVersion and tell the watchers."""
        self._rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self._rv)
        obj["apiVersion"] = bucket.info.api_version
        obj["kind"] = bucket.info.kind
        key = (meta.get("namespace", ""), meta["name"])
        if type == "DELETED":
            bucket.objects.pop(key, None)
            self._applied.pop(meta.get("uid", ""), None)
        else:
            bucket.objects[key] = obj
        event = WatchEvent(type, obj, self._rv, previous)
        bucket.history.append(event)
        if len(bucket.history) > bucket.history_limit:
            bucket.compacted = bucket.history.popleft().resource_version
        for w in bucket.watches:
            w._offer(event)
        for cb in bucket.listeners:
            cb(type, obj, previous)
        if type == "DELETED" and bucket.info.namespaced:
            self._finish_namespace(meta.get("namespace", ""))

    # -- watch ------------------------------------------------------------------------------

    def watch(
        self,
        gvr: GVR,
        namespace: str | None = None,
        *,
        resource_version: str | int | None = None,
        label_selector: str | LabelSelector | None = None,
        field_selector: str | FieldSelector | None = None,
        bookmarks: bool = False,
        bookmark_interval: float = 60.0,
        timeout: float | None = None,
        copy: bool = True,
    ) -> Watch:
        """Start watching; raises 410 Expired when ``resource_version`` is too old."""
        bucket = self._bucket(gvr)
        flt = self._filter(bucket.info, namespace, label_selector, field_selector)
        initial: list[WatchEvent] = []
        if resource_version in (None, "", "0", 0):
            for _, obj in sorted(bucket.objects.items()):
                if flt.matches(obj):
                    initial.append(WatchEvent("ADDED", obj, int(obj["metadata"]["resourceVersion"])))
            if bookmarks:  # kube-apiserver marks the end of the initial events
                end = {
                    "kind": bucket.info.kind,
                    "apiVersion": bucket.info.api_version,
                    "metadata": {
                        "resourceVersion": str(self._rv),
                        "annotations": {"k8s.io/initial-events-end": "true"},
                    },
                }
                initial.append(WatchEvent("BOOKMARK", end, self._rv))
        else:
            try:
                since = int(resource_version)
            except ValueError as e:
                raise bad_request(f"invalid resource version: {resource_version!r}") from e
            if since < bucket.compacted:
                raise gone(f"too old resource version: {since} ({bucket.compacted})")
            for event in bucket.history:
                if event.resource_version > since and (seen := flt.translate(event)) is not None:
                    initial.append(seen)
        w = Watch(
            bucket.info,
            flt,
            initial,
            bookmarks=bookmarks,
            bookmark_interval=bookmark_interval,
            timeout=timeout,
            copy=copy,
            forget=functools.partial(self._forget, bucket.info.gvr),
            current=lambda: self._rv,
        )
        bucket.watches.add(w)
        return w

    def _forget(self, gvr: GVR, w: Watch) -> None:
        bucket = self._buckets.get(gvr)
        if bucket is not None:
            bucket.watches.discard(w)

    def watcher_count(self, gvr: GVR) -> int:
        return len(self._bucket(gvr).watches)

    # -- helpers ----------------------------------------------------------------------------

    def _ns(self, info: ResourceInfo, namespace: str | None, fallback: str | None) -> str:
        if not info.namespaced:
            return ""
        return namespace or fallback or "default"

    def _check_type(self, info: ResourceInfo, obj: Obj) -> None:
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if info.group not in patching.BUILTIN_GROUPS and api_version not in (None, "", info.api_version):
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({info.api_version})"
            )
        if info.group == "" and api_version == "v1" and kind not in (None, "", info.kind):
            raise bad_request(
                f'{kind} in version "v1" cannot be handled as a {info.kind}: '
                f"converting (v1.{kind}) to (core.{info.kind}): unknown conversion"
            )
        if kind not in (None, "", info.kind) or api_version not in (None, "", info.api_version):
            raise bad_request(
                f"the API version in the data ({api_version}) and kind ({kind}) do not match "
                f"the expected {info.api_version} {info.kind}"
            )
        if info.gvr == PODS and (wrong := validation.pod_decoding_error(obj)):
            raise bad_request(f'Pod in version "v1" cannot be handled as a Pod: {wrong}')

    def _validate(
        self, info: ResourceInfo, obj: Obj, old: Obj | None = None, *, subresource: str | None = None
    ) -> None:
        causes = validation.validate(info, obj)
        if old is not None:
            causes += validation.validate_update(info, old, obj)
        if info.validate is not None:
            own = info.validate(obj)
            if subresource == "status" and info.schema is not None:
                own = schema.relative_to_status(own)
            causes += own
        if info.schema is not None:
            causes += schema.rule_causes(info.schema, old, obj, causes)
        if causes:
            raise invalid(info.kind, obj["metadata"].get("name", ""), causes, group=info.group)

    def _generate(self, bucket: _Bucket, namespace: str, prefix: str) -> str:
        for _ in range(100):
            name = prefix + "".join(random.choices(_NAME_CHARS, k=5))
            if (namespace, name) not in bucket.objects:
                return name
        raise ApiError(500, "AlreadyExists", "could not generate a unique name")

    def objects(self, gvr: GVR) -> Iterator[Obj]:
        """The stored objects of ``gvr`` without copying (read-only view for the HTTP layer)."""
        return iter(list(self._bucket(gvr).objects.values()))


def _spec_changed(old: Obj, new: Obj) -> bool:
    skip = ("metadata", "status", "apiVersion", "kind")
    return {k: v for k, v in old.items() if k not in skip} != {k: v for k, v in new.items() if k not in skip}


def _cause(field: str, message: str) -> Cause:
    return Cause(
        field, message, "FieldValueRequired" if message.startswith("Required") else "FieldValueInvalid"
    )
