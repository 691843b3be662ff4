"""Posting core/v1 Events, folding repeats into one Event with a count.

A controller reports the same thing many times (a pod failing to submit
while red-box is down). Like the kubelet's recorder, ``EventPoster`` keeps
the name of the last Event for each (object, type, reason, message) and
patches its ``count`` and ``lastTimestamp`` instead of creating another.
Events are best effort: failures are logged, never raised.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from dataclasses import dataclass

import structlog

from wlmvk.core.errors import NotFound, WlmvkError
from wlmvk.kube.bodies import EVENTS, Body, meta
from wlmvk.kube.client import KubeClient
from wlmvk.kube.times import micro_time, rfc3339

_log = structlog.get_logger(__name__)

NORMAL = "Normal"
WARNING = "Warning"


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int


class EventPoster:
    """Posts Events about objects on behalf of one component (e.g. ``wlmvk-kubelet``)."""

    def __init__(self, client: KubeClient, *, component: str, host: str = "", cache_size: int = 4096) -> None:
        self._client = client
        self._component = component
        self._host = host
        self._cache_size = cache_size
        self._seen: OrderedDict[tuple[str, str, str, str], _Seen] = OrderedDict()

    async def post(self, obj: Body, *, type: str, reason: str, message: str) -> None:
        """Record an Event about ``obj`` (a full object or at least kind/apiVersion/metadata)."""
        md = meta(obj)
        key = (str(md.get("uid", "")), type, reason, message)
        now = rfc3339()
        try:
            seen = self._seen.get(key)
            if seen is not None:
                seen.count += 1
                patch = {"count": seen.count, "lastTimestamp": now}
                try:
                    await self._client.patch(EVENTS, seen.name, patch, namespace=seen.namespace)
                    self._seen.move_to_end(key)
                    return
                except NotFound:
                    del self._seen[key]
            await self._create(obj, key, type=type, reason=reason, message=message, now=now)
        except WlmvkError as exc:
            _log.warning("event not posted", reason=reason, object=md.get("name"), error=str(exc))

    async def _create(
        self, obj: Body, key: tuple[str, str, str, str], *, type: str, reason: str, message: str, now: str
    ) -> None:
        md = meta(obj)
        namespace = str(md.get("namespace") or "default")
        name = f"{md.get('name', 'object')}.{time.time_ns():x}{os.getpid() % 0xFFF:03x}"
        body: Body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", "v1"),
                "kind": obj.get("kind", ""),
                "name": md.get("name", ""),
                "namespace": md.get("namespace", ""),
                "uid": md.get("uid", ""),
                "resourceVersion": md.get("resourceVersion", ""),
            },
            "type": type,
            "reason": reason,
            "message": message,
            "source": {"component": self._component, "host": self._host},
            "reportingComponent": self._component,
            "reportingInstance": self._host,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "eventTime": micro_time(),
            "action": reason,
            "count": 1,
        }
        await self._client.create(EVENTS, body, namespace=namespace)
        self._seen[key] = _Seen(name, namespace, 1)
        while len(self._seen) > self._cache_size:
            self._seen.popitem(last=False)
