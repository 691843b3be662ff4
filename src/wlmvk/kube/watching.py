"""List+watch of one resource, kept alive across expiry and outages.

``watch`` yields what a controller needs to mirror a collection:

- ``Listed(items)`` after every (re)list: the complete current set. Objects
  the caller knew that are absent from it were deleted while nobody watched.
- ``Changed(type, object)`` for each ADDED / MODIFIED / DELETED event.

Bookmarks only advance the resourceVersion. A 410 Gone (at watch start or as
an ERROR event) relists; a dropped connection resumes the watch from the last
resourceVersion after a backoff; any failure to list is retried with the same
backoff. The generator never ends on its own: cancel the consuming task.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import structlog

from wlmvk.core.errors import WlmvkError
from wlmvk.kube.backoff import Backoff
from wlmvk.kube.bodies import Body, Resource, resource_version_of
from wlmvk.kube.client import KubeClient
from wlmvk.kube.errors import ResourceExpired, from_status

_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Listed:
    items: list[Body]
    resource_version: str


@dataclass(frozen=True)
class Changed:
    type: str
    object: Body


WatchEvent = Listed | Changed


@dataclass(frozen=True)
class WatchOptions:
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    # Server-side timeout of one watch request; jittered so many watchers do not reconnect together.
    timeout_seconds: int = 300
    backoff: Backoff = field(default_factory=Backoff)


async def watch(
    client: KubeClient,
    resource: Resource,
    options: WatchOptions | None = None,
    *,
    on_restart: Callable[[str], None] | None = None,
) -> AsyncIterator[WatchEvent]:
    """Mirror ``resource`` (see the module docstring).

    ``on_restart(reason)`` hears of every relist and reconnect (for metrics).
    """
    opts = options or WatchOptions()
    backoff = opts.backoff
    version = ""
    log = _log.bind(resource=resource.plural, fields=opts.field_selector, labels=opts.label_selector)
    while True:
        if not version:
            try:
                listing = await client.list(
                    resource,
                    namespace=opts.namespace,
                    label_selector=opts.label_selector,
                    field_selector=opts.field_selector,
                )
            except WlmvkError as exc:
                log.warning("list failed", error=str(exc))
                _tell(on_restart, "list-failed")
                await backoff.sleep()
                continue
            version = resource_version_of(listing)
            yield Listed(list(listing.get("items") or []), version)
        try:
            async for line in _watch_once(client, resource, opts, version):
                kind = str(line.get("type", ""))
                obj = line.get("object") or {}
                if kind == "ERROR":
                    raise from_status(int(obj.get("code", 500)), str(obj.get("message", "")), what="watch")
                new_version = resource_version_of(obj)
                if new_version:
                    version = new_version
                backoff.reset()
                if kind != "BOOKMARK":
                    yield Changed(kind, obj)
            # The server ended the request (timeoutSeconds): resume at once from the last version.
            _tell(on_restart, "timeout")
        except ResourceExpired:
            log.info("watch expired, relisting", resource_version=version)
            version = ""
            _tell(on_restart, "expired")
        except WlmvkError as exc:
            log.warning("watch failed, reconnecting", error=str(exc))
            _tell(on_restart, "error")
            await backoff.sleep()


def _watch_once(
    client: KubeClient, resource: Resource, opts: WatchOptions, version: str
) -> AsyncIterator[Body]:
    timeout = int(opts.timeout_seconds * random.uniform(0.9, 1.1)) or 1
    query: dict[str, str | int | bool | None] = {
        "watch": True,
        "allowWatchBookmarks": True,
        "resourceVersion": version,
        "timeoutSeconds": timeout,
        "labelSelector": opts.label_selector,
        "fieldSelector": opts.field_selector,
    }
    return client.stream_lines(
        resource.path(namespace=opts.namespace), query=query, read_timeout=timeout + 30
    )


def _tell(callback: Callable[[str], None] | None, reason: str) -> None:
    if callback is not None:
        callback(reason)
