"""Watches over HTTP: one JSON event per line, batched, as Table rows for ``kubectl get -w``.

A resourceVersion older than the store's history answers one ``ERROR`` event (410 Expired)
in a 200 stream, as kube-apiserver does.
"""

from __future__ import annotations

import json

from aiohttp import web

from wlmvk_dev.apiserver.handlers import tables
from wlmvk_dev.apiserver.handlers.requests import (
    SETTINGS_KEY,
    Target,
    field_selector_of,
    store_of,
    truthy,
    wants_table,
)
from wlmvk_dev.apiserver.objects.errors import ApiError, bad_request
from wlmvk_dev.apiserver.objects.resources import ResourceInfo
from wlmvk_dev.apiserver.storage.store import Store, WatchEvent


async def serve_watch(request: web.Request, t: Target) -> web.StreamResponse:
    store = store_of(request)
    q = request.query
    timeout = None
    if q.get("timeoutSeconds"):
        try:
            timeout = float(q["timeoutSeconds"])
        except ValueError as e:
            raise bad_request("timeoutSeconds must be a number") from e
    table = wants_table(request)
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    try:
        watch = store.watch(
            t.info.gvr,
            t.namespace,
            resource_version=q.get("resourceVersion"),
            label_selector=q.get("labelSelector"),
            field_selector=field_selector_of(request, t),
            bookmarks=truthy(q.get("allowWatchBookmarks")),
            bookmark_interval=request.app[SETTINGS_KEY].bookmark_interval,
            timeout=timeout,
            copy=False,
        )
    except ApiError as e:
        if e.code != 410:
            raise
        await response.prepare(request)
        await response.write(json.dumps({"type": "ERROR", "object": e.status()}).encode() + b"\n")
        await response.write_eof()
        return response
    await response.prepare(request)
    try:
        with watch:
            while True:
                event = await watch.next()
                if event is None:
                    break
                batch = [_line(event, t.info, store, table)]
                while len(batch) < 512 and (more := watch.poll()) is not None:
                    batch.append(_line(more, t.info, store, table))
                await response.write(b"".join(batch))
        await response.write_eof()
    except ConnectionError:
        pass  # the client went away; its watch is closed by the with-block
    return response


def _line(event: WatchEvent, info: ResourceInfo, store: Store, table: bool) -> bytes:
    if not table or event.type == "BOOKMARK":
        return event.line()
    body = tables.table(info, [event.object], str(event.resource_version), now=store.now())
    return json.dumps({"type": event.type, "object": body}, separators=(",", ":")).encode() + b"\n"
