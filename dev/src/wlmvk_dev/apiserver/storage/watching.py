"""Watches on the store: events, their per-watcher filtering, and the async iterator.

A :class:`Watch` is created (and registered) by ``Store.watch``; the store offers it
every committed change, the watch keeps what its namespace and selectors match (turning
selector transitions into ADDED/DELETED as Kubernetes does) and hands events out through
``async for`` / ``next()`` / ``poll()``, with BOOKMARKs after quiet intervals and an end
after ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import collections
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from wlmvk_dev.apiserver.objects.jsonvalues import clone
from wlmvk_dev.apiserver.objects.resources import Obj, ResourceInfo
from wlmvk_dev.apiserver.objects.selectors import FieldSelector, LabelSelector


class WatchEvent:
    """One change of one object, as a watcher receives it."""

    __slots__ = ("_line", "object", "previous", "resource_version", "type")

    def __init__(self, type: str, obj: Obj, resource_version: int, previous: Obj | None = None) -> None:
        self.type = type
        self.object = obj
        self.resource_version = resource_version
        self.previous = previous
        self._line: bytes | None = None

    def line(self) -> bytes:
        """The NDJSON line of this event (computed once, shared by every HTTP watcher)."""
        if self._line is None:
            body = {"type": self.type, "object": self.object}
            self._line = json.dumps(body, separators=(",", ":")).encode() + b"\n"
        return self._line

    def __repr__(self) -> str:
        meta = self.object.get("metadata", {})
        where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        return f"WatchEvent({self.type} {where} rv={self.resource_version})"


@dataclass(frozen=True)
class Filter:
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector

    def matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)

    @property
    def trivial(self) -> bool:
        return self.namespace is None and self.labels.empty and self.fields.empty

    def translate(self, event: WatchEvent) -> WatchEvent | None:
        """The event as this watcher sees it (selector transitions), or None to skip."""
        if self.trivial:
            return event
        now = self.matches(event.object)
        if event.type == "DELETED" or event.type == "ADDED":
            return event if now else None
        before = self.matches(event.previous)
        if now and before:
            return event
        if now:
            return WatchEvent("ADDED", event.object, event.resource_version, event.previous)
        if before:
            return WatchEvent("DELETED", event.object, event.resource_version, event.previous)
        return None


class Watch:
    """An async iterator of :class:`WatchEvent`; see the module docstring."""

    def __init__(
        self,
        info: ResourceInfo,
        flt: Filter,
        initial: list[WatchEvent],
        *,
        bookmarks: bool,
        bookmark_interval: float,
        timeout: float | None,
        copy: bool,
        forget: Callable[[Watch], None],
        current: Callable[[], int],
    ) -> None:
        self._forget = forget
        self._current = current
        self._info = info
        self._filter = flt
        self._pending = collections.deque(initial)
        self._queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        self._bookmarks = bookmarks
        self._interval = bookmark_interval
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._copy = copy
        self._closed = False
        self._last = time.monotonic()

    def _offer(self, event: WatchEvent) -> None:
        seen = self._filter.translate(event)
        if seen is not None:
            self._queue.put_nowait(seen)

    def _end(self) -> None:
        self._queue.put_nowait(None)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._forget(self)
            self._end()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Watch:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> WatchEvent:
        event = await self.next()
        if event is None:
            raise StopAsyncIteration
        return event

    async def next(self) -> WatchEvent | None:
        """The next event, or None once the watch has ended."""
        if self._pending:
            return self._deliver(self._pending.popleft())
        while True:
            try:
                event = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                wait = self._wait_for()
                if wait is not None and wait <= 0:
                    if self._deadline is not None and time.monotonic() >= self._deadline:
                        self.close()
                        return None
                    return self._bookmark()
                try:
                    async with asyncio.timeout(wait):
                        event = await self._queue.get()
                except TimeoutError:
                    continue
            if event is None:
                self._closed = True
                self._forget(self)
                return None
            return self._deliver(event)

    def poll(self) -> WatchEvent | None:
        """The next event if one is ready now (no bookmarks, no waiting), else None."""
        if self._pending:
            return self._deliver(self._pending.popleft())
        try:
            event = self._queue.get_nowait()
        except asyncio.QueueEmpty:
            return None
        if event is None:
            self._queue.put_nowait(None)
            return None
        return self._deliver(event)

    def _wait_for(self) -> float | None:
        now = time.monotonic()
        waits = []
        if self._deadline is not None:
            waits.append(self._deadline - now)
        if self._bookmarks:
            waits.append(self._last + self._interval - now)
        if not waits:
            return None
        return min(waits)

    def _bookmark(self) -> WatchEvent:
        self._last = time.monotonic()
        obj = {
            "kind": self._info.kind,
            "apiVersion": self._info.api_version,
            "metadata": {"resourceVersion": str(self._current())},
        }
        return WatchEvent("BOOKMARK", obj, self._current())

    def _deliver(self, event: WatchEvent) -> WatchEvent:
        self._last = time.monotonic()
        if self._copy:
            return WatchEvent(event.type, clone(event.object), event.resource_version)
        return event
