"""The store's core: a bucket per resource type, reads, watches, and the commit that tells them.

:class:`Buckets` holds what every part of the store shares: the served resource types, the
objects and recent history of each, the resourceVersion counter, and :meth:`Buckets._commit`,
the one place an object is stored or removed and its watchers and change callbacks are told.
:class:`~wlmvk_dev.apiserver.storage.store.Store` adds the writes (``writes.py``) and the
deletions (``deletion.py``) on top of it; ``store.py`` documents the whole API.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import NamedTuple

from wlmvk_dev.apiserver.objects.errors import ApiError, bad_request, gone, not_found
from wlmvk_dev.apiserver.objects.jsonvalues import clone
from wlmvk_dev.apiserver.objects.resources import BUILTINS, GVR, NAMESPACES, Obj, ResourceInfo
from wlmvk_dev.apiserver.objects.selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from wlmvk_dev.apiserver.storage.watching import Filter, Watch, WatchEvent

ChangeCallback = Callable[[str, Obj, Obj | None], None]
"""``callback(event_type, new_or_deleted_object, previous_object_or_None)``."""

ObjList = list[Obj]


class ListResult(NamedTuple):
    items: list[Obj]
    resource_version: str


class Bucket:
    """Objects and recent history of one resource type."""

    def __init__(self, info: ResourceInfo, history: int) -> None:
        self.info = info
        self.objects: dict[tuple[str, str], Obj] = {}
        self.history: collections.deque[WatchEvent] = collections.deque()
        self.history_limit = history
        self.compacted = 0
        self.watches: set[Watch] = set()
        self.listeners: list[ChangeCallback] = []


class Buckets:
    """The resource types, their objects and watches (the store's shared state)."""

    def __init__(self, *, history: int, clock: Callable[[], datetime]) -> None:
        self._history = history
        self._clock = clock
        self._rv = 0
        self._buckets: dict[GVR, Bucket] = {}
        self._registry_listeners: list[Callable[[], None]] = []
        self._applied: dict[str, dict[str, Obj]] = {}
        """Server-side apply: the last configuration each field manager applied, per object uid."""
        for info in BUILTINS:
            self.register(info)

    # -- resource types ---------------------------------------------------------------------

    def register(self, info: ResourceInfo) -> None:
        """Serve a resource type (replacing the description of one already served)."""
        bucket = self._buckets.get(info.gvr)
        if bucket is None:
            self._buckets[info.gvr] = Bucket(info, self._history)
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

    def _bucket(self, gvr: GVR) -> Bucket:
        bucket = self._buckets.get(gvr)
        if bucket is None:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({gvr})")
        return bucket

    # -- reads ------------------------------------------------------------------------------

    def get(self, gvr: GVR, name: str, namespace: str | None = None) -> Obj:
        bucket = self._bucket(gvr)
        return clone(self._raw(bucket, name, namespace))

    def _raw(self, bucket: Bucket, name: str, namespace: str | None) -> Obj:
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

    def objects(self, gvr: GVR) -> Iterator[Obj]:
        """The stored objects of ``gvr`` without copying (read-only view for the HTTP layer)."""
        return iter(list(self._bucket(gvr).objects.values()))

    # -- the commit -------------------------------------------------------------------------

    def _commit(self, bucket: Bucket, type: str, obj: Obj, previous: Obj | None) -> None:
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
