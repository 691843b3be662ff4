"""Core v1 Events written by the in-process controllers, deduplicated like client-go's recorder.

The same (object, type, reason, message) from the same component bumps the
``count`` and ``lastTimestamp`` of the existing Event instead of creating a
new one, which is what ``kubectl describe`` shows as ``(x3 over 2m)``. Events
of cluster-scoped objects (nodes) go to the ``default`` namespace.
"""

from __future__ import annotations

import collections
import socket
import time
from typing import Any

import structlog

from wlmvk_dev.apiserver.objects import timestamps
from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.resources import EVENTS, Obj
from wlmvk_dev.apiserver.storage.store import Store

_log = structlog.get_logger(__name__)

_CACHE = 4096


class EventRecorder:
    def __init__(self, store: Store, *, component: str, host: str | None = None) -> None:
        self._store = store
        self._component = component
        self._host = host
        self._known: collections.OrderedDict[tuple[str, ...], tuple[str, str]] = collections.OrderedDict()

    def record(self, obj: Obj, type: str, reason: str, message: str) -> Obj | None:
        """Record an Event about ``obj``; returns the Event as stored (None if it could not be)."""
        meta = obj.get("metadata") or {}
        key = (meta.get("uid", ""), type, reason, message)
        now = timestamps.format_time(self._store.now())
        known = self._known.get(key)
        if known is not None:
            try:
                event = self._store.get(EVENTS, known[1], known[0])
            except ApiError:
                self._known.pop(key, None)
            else:
                event["count"] = int(event.get("count") or 1) + 1
                event["lastTimestamp"] = now
                try:
                    return self._store.update(EVENTS, event)
                except ApiError as exc:
                    _log.debug("event update failed", error=exc.message)
                    return None
        namespace = meta.get("namespace") or "default"
        body: dict[str, Any] = {
            "metadata": {"name": f"{meta.get('name', 'object')}.{time.time_ns():x}", "namespace": namespace},
            "involvedObject": {
                "kind": obj.get("kind", ""),
                "apiVersion": obj.get("apiVersion", ""),
                "name": meta.get("name", ""),
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
                **({"namespace": meta["namespace"]} if meta.get("namespace") else {}),
            },
            "reason": reason,
            "message": message,
            "type": type,
            "source": {"component": self._component, **({"host": self._host} if self._host else {})},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "eventTime": None,
            "reportingComponent": self._component,
            "reportingInstance": f"{self._component}-{self._host or socket.gethostname()}",
        }
        try:
            event = self._store.create(EVENTS, body)
        except ApiError as exc:
            _log.debug("event not recorded", reason=reason, error=exc.message)
            return None
        self._known[key] = (namespace, event["metadata"]["name"])
        if len(self._known) > _CACHE:
            self._known.popitem(last=False)
        return event
