"""One set of Events under two APIs: core ``v1`` and ``events.k8s.io/v1``.

The real API server stores Events once and serves both versions. Here each API has its
own store bucket, so :func:`install` mirrors every change of one into the other with the
field conversion of Kubernetes (``involvedObject``/``regarding``, ``message``/``note``,
``source``/``reportingController``, ``count``/``deprecatedCount``, ...). An Event written
through events.k8s.io therefore shows in ``kubectl describe`` (which reads core events).
The mirrored copy has its own uid and resourceVersion.
"""

from __future__ import annotations

import functools
from typing import Any

from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.resources import EVENTS, EVENTS_V1, GVR, Obj
from wlmvk_dev.apiserver.storage.store import Store, clone

_SHARED = ("reason", "type", "eventTime", "series", "action", "related", "reportingInstance")


def to_core(event: Obj) -> Obj:
    """An events.k8s.io/v1 Event as a core v1 Event."""
    out: dict[str, Any] = {"metadata": _meta(event)}
    for key in _SHARED:
        if key in event:
            out[key] = clone(event[key])
    renames = {
        "regarding": "involvedObject",
        "note": "message",
        "deprecatedFirstTimestamp": "firstTimestamp",
        "deprecatedLastTimestamp": "lastTimestamp",
        "deprecatedCount": "count",
        "reportingController": "reportingComponent",
    }
    for old, new in renames.items():
        if old in event:
            out[new] = clone(event[old])
    source = clone(event.get("deprecatedSource") or {})
    if not source.get("component") and event.get("reportingController"):
        source["component"] = event["reportingController"]
    if source:
        out["source"] = source
    out.setdefault("involvedObject", {})
    return out


def to_events_v1(event: Obj) -> Obj:
    """A core v1 Event as an events.k8s.io/v1 Event."""
    out: dict[str, Any] = {"metadata": _meta(event)}
    for key in _SHARED:
        if key in event:
            out[key] = clone(event[key])
    renames = {
        "involvedObject": "regarding",
        "message": "note",
        "firstTimestamp": "deprecatedFirstTimestamp",
        "lastTimestamp": "deprecatedLastTimestamp",
        "count": "deprecatedCount",
        "source": "deprecatedSource",
    }
    for old, new in renames.items():
        if old in event:
            out[new] = clone(event[old])
    if event.get("reportingComponent"):  # as kube-apiserver: never taken from source.component
        out["reportingController"] = event["reportingComponent"]
    return out


def _meta(event: Obj) -> dict[str, Any]:
    meta = event.get("metadata") or {}
    keep = ("name", "namespace", "labels", "annotations")
    return {k: clone(meta[k]) for k in keep if k in meta}


def install(store: Store) -> None:
    """Mirror core and events.k8s.io Events into each other from now on."""
    busy: list[bool] = [False]
    store.on_change(EVENTS, functools.partial(_mirror, store, EVENTS_V1, to_events_v1, busy))
    store.on_change(EVENTS_V1, functools.partial(_mirror, store, EVENTS, to_core, busy))


def _mirror(
    store: Store, target: GVR, convert: Any, busy: list[bool], type: str, obj: Obj, _: Obj | None
) -> None:
    if busy[0]:
        return
    meta = obj["metadata"]
    busy[0] = True
    try:
        if type == "DELETED":
            try:
                store.delete(target, meta["name"], meta.get("namespace"))
            except ApiError as e:
                if e.code != 404:
                    raise
            return
        body = convert(obj)
        try:
            store.update(target, body, meta.get("namespace"))
        except ApiError as e:
            if e.code != 404:
                raise
            store.create(target, body, meta.get("namespace"))
    finally:
        busy[0] = False
