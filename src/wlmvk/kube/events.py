"""Posting core/v1 Events, folding repeats into one Event with a count.

A controller reports the same thing many times (a pod failing to submit
while red-box is down). Like the kubelet's recorder, ``EventPoster`` keeps
the name of the last Event for each (object, type, reason, message) and
patches its ``count`` and ``lastTimestamp`` instead of creating another.
Events are best effort: failures are logged, never raised.

``EventQueue`` records without waiting, as client-go's broadcaster does: a
bounded queue drained by a few sender tasks, so a burst of thousands of pod
submissions is not slowed by as many Event writes competing with it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import NamedTuple

import structlog

from wlmvk.core.errors import NotFound, WlmvkError
from wlmvk.core.names import EventType
from wlmvk.kube.bodies import EVENTS, Body, meta
from wlmvk.kube.client import KubeClient
from wlmvk.kube.times import micro_time, rfc3339

_log = structlog.get_logger(__name__)

NORMAL = EventType.NORMAL
WARNING = EventType.WARNING


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
        # reportingInstance: kube-apiserver refuses an Event with an eventTime and without it.
        self._host = host or socket.gethostname()
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


class _Pending(NamedTuple):
    obj: Body
    type: str
    reason: str
    message: str


class EventQueue:
    """Events recorded without waiting, sent in order by ``senders`` tasks while ``run`` runs.

    When ``size`` Events wait unsent (the API server unreachable for long), new
    ones are dropped with a log line, as client-go drops on a full channel.
    """

    def __init__(self, poster: EventPoster, *, size: int = 1000, senders: int = 2) -> None:
        self._poster = poster
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=size)
        self._senders = max(1, senders)
        self.dropped = 0

    def record(self, obj: Body, *, type: str, reason: str, message: str) -> None:
        try:
            self._queue.put_nowait(_Pending(obj, type, reason, message))
        except asyncio.QueueFull:
            self.dropped += 1
            _log.warning("event dropped: too many unsent events", reason=reason, object=meta(obj).get("name"))

    async def run(self) -> None:
        await asyncio.gather(*(self._send() for _ in range(self._senders)))

    async def _send(self) -> None:
        while True:
            pending = await self._queue.get()
            await self._poster.post(
                pending.obj, type=pending.type, reason=pending.reason, message=pending.message
            )
