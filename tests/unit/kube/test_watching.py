"""``kube.watching.watch``: list, then events, bookmarks skipped, relist after 410, resume after drops."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.polling import eventually
from wlmvk.kube.backoff import Backoff
from wlmvk.kube.bodies import Resource, name_of
from wlmvk.kube.client import KubeClient
from wlmvk.kube.watching import Changed, Listed, WatchEvent, WatchOptions, watch

CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


async def collect(
    kube: KubeClient, events: asyncio.Queue[WatchEvent], restarts: list[str], **options: object
) -> None:
    opts = WatchOptions(namespace="default", backoff=Backoff(initial=0.05, maximum=0.2), **options)  # type: ignore[arg-type]
    async for event in watch(kube, CONFIGMAPS, opts, on_restart=restarts.append):
        await events.put(event)


async def next_event(events: asyncio.Queue[WatchEvent]) -> WatchEvent:
    return await asyncio.wait_for(events.get(), 10)


@pytest.mark.apiserver(controllers=False, bookmark_interval=0.1)
async def test_list_then_changes_and_bookmarks_are_not_yielded(kube: KubeClient) -> None:
    await kube.create(CONFIGMAPS, configmap("before"), namespace="default")
    events: asyncio.Queue[WatchEvent] = asyncio.Queue()
    restarts: list[str] = []
    task = asyncio.create_task(collect(kube, events, restarts))
    try:
        first = await next_event(events)
        assert isinstance(first, Listed)
        assert [name_of(i) for i in first.items] == ["before"]
        await asyncio.sleep(0.5)  # several bookmarks pass
        await kube.create(CONFIGMAPS, configmap("after"), namespace="default")
        added = await next_event(events)
        assert isinstance(added, Changed)
        assert (added.type, name_of(added.object)) == ("ADDED", "after")
        await kube.delete(CONFIGMAPS, "before", namespace="default")
        deleted = await next_event(events)
        assert isinstance(deleted, Changed)
        assert (deleted.type, name_of(deleted.object)) == ("DELETED", "before")
        assert events.empty()
    finally:
        task.cancel()


@pytest.mark.apiserver(controllers=False, history=3, bookmark_interval=30)
async def test_server_timeout_resumes_and_expiry_relists(
    kube: KubeClient, apiserver: RunningApiServer
) -> None:
    events: asyncio.Queue[WatchEvent] = asyncio.Queue()
    restarts: list[str] = []
    task = asyncio.create_task(collect(kube, events, restarts, timeout_seconds=1))
    try:
        assert isinstance(await next_event(events), Listed)
        await asyncio.sleep(2.5)  # the server ends each watch after ~1 s; the watcher resumes
        assert "timeout" in restarts
        await kube.create(CONFIGMAPS, configmap("still-seen"), namespace="default")
        seen = await next_event(events)
        assert isinstance(seen, Changed)
        assert name_of(seen.object) == "still-seen"
    finally:
        task.cancel()


class ScriptedClient:
    """Stands in for KubeClient: lists and watch streams play a script, requests are recorded."""

    def __init__(
        self, lists: list[dict[str, object]], streams: list[list[dict[str, object] | Exception]]
    ) -> None:
        self.lists = lists
        self.streams = streams
        self.watch_versions: list[object] = []

    async def list(self, resource: Resource, **kw: object) -> dict[str, object]:
        return self.lists.pop(0)

    async def stream_lines(
        self, path: str, *, query: dict[str, object], read_timeout: float
    ) -> AsyncIterator[dict[str, object]]:
        self.watch_versions.append(query["resourceVersion"])
        if not self.streams:
            await asyncio.sleep(3600)
        for item in self.streams.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item


def cm(name: str, rv: str) -> dict[str, object]:
    return {"metadata": {"name": name, "resourceVersion": rv}}


async def test_relist_after_410_and_resume_after_a_drop() -> None:
    from wlmvk.core.errors import Unavailable

    client = ScriptedClient(
        lists=[
            {"metadata": {"resourceVersion": "10"}, "items": [cm("a", "9")]},
            {"metadata": {"resourceVersion": "50"}, "items": [cm("a", "9"), cm("c", "49")]},
        ],
        streams=[
            [{"type": "ADDED", "object": cm("b", "11")}, {"type": "BOOKMARK", "object": cm("", "12")}],
            [Unavailable("connection reset")],
            [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}],
            [{"type": "MODIFIED", "object": cm("c", "51")}],
        ],
    )
    restarts: list[str] = []
    seen: list[WatchEvent] = []
    options = WatchOptions(backoff=Backoff(initial=0.01, maximum=0.02))

    async def run() -> None:
        async for event in watch(client, CONFIGMAPS, options, on_restart=restarts.append):  # type: ignore[arg-type]
            seen.append(event)

    task = asyncio.create_task(run())
    await eventually(lambda: len(seen) >= 4, timeout=2, every=0.01)
    task.cancel()
    kinds = [type(e).__name__ + (f":{e.type}" if isinstance(e, Changed) else "") for e in seen]
    assert kinds == ["Listed", "Changed:ADDED", "Listed", "Changed:MODIFIED"]
    assert isinstance(seen[2], Listed)
    assert [name_of(i) for i in seen[2].items] == ["a", "c"]
    # First watch from the list's version; after the stream ended, from the bookmark's;
    # after the drop, the same; after the relist, from the new list's version.
    assert client.watch_versions[:4] == ["10", "12", "12", "50"]
    assert restarts == ["timeout", "error", "expired", "timeout"][: len(restarts)]
    assert "expired" in restarts
