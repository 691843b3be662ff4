"""list+watch through kubernetes_asyncio and kubectl: resourceVersions, bookmarks, 410, selectors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from tests.fixtures.apiserver import RunningApiServer
from wlmvk_dev.apiserver.objects.resources import CONFIGMAPS, PODS

pytestmark = pytest.mark.apiserver(controllers=False, bookmark_interval=0.2, history=5)


def cm(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "data": {"v": "0"}}


async def collect(kube_api: Any, rv: str, count: int, **kwargs: Any) -> list[tuple[str, str]]:
    v1 = client.CoreV1Api(kube_api)
    seen: list[tuple[str, str]] = []
    async with watch.Watch() as w:
        async for event in w.stream(
            v1.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5, **kwargs
        ):
            if event["type"] != "BOOKMARK":
                seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == count:
                break
    return seen


async def test_watch_from_list_resource_version_sees_every_change(
    apiserver: RunningApiServer, kube_api: Any
) -> None:
    store = apiserver.store
    store.create(CONFIGMAPS, cm("before"))
    listed = await client.CoreV1Api(kube_api).list_namespaced_config_map("default")
    assert [i.metadata.name for i in listed.items] == ["before"]
    store.create(CONFIGMAPS, cm("a"))
    store.patch(CONFIGMAPS, "a", {"data": {"v": "1"}})
    store.delete(CONFIGMAPS, "a")
    seen = await collect(kube_api, listed.metadata.resource_version, 3)
    assert seen == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


async def test_bookmarks_carry_the_current_resource_version(
    apiserver: RunningApiServer, kube_api: Any
) -> None:
    store = apiserver.store
    listed = await client.CoreV1Api(kube_api).list_namespaced_config_map("default")
    store.create(CONFIGMAPS, cm("x"), "kube-system")
    v1 = client.CoreV1Api(kube_api)
    async with watch.Watch() as w:
        async for event in w.stream(
            v1.list_namespaced_config_map,
            "default",
            allow_watch_bookmarks=True,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=5,
        ):
            assert event["type"] == "BOOKMARK"
            assert event["object"]["metadata"]["resourceVersion"] == str(store.resource_version)
            assert w.resource_version == str(store.resource_version)
            break


async def drain(v1: client.CoreV1Api, rv: str) -> None:
    async with watch.Watch() as w:
        async for _ in w.stream(
            v1.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
        ):
            pass


async def test_too_old_resource_version_is_410_then_relist_works(
    apiserver: RunningApiServer, kube_api: Any
) -> None:
    store = apiserver.store
    store.create(CONFIGMAPS, cm("c"))
    old = str(store.resource_version)
    for n in range(10):
        store.patch(CONFIGMAPS, "c", {"data": {"v": str(n)}})
    v1 = client.CoreV1Api(kube_api)
    with pytest.raises(ApiException) as raised:
        await drain(v1, old)
    assert raised.value.status == 410
    relisted = await v1.list_namespaced_config_map("default")
    assert relisted.items[0].data == {"v": "9"}
    store.patch(CONFIGMAPS, "c", {"data": {"v": "10"}})
    assert await collect(kube_api, relisted.metadata.resource_version, 1) == [("MODIFIED", "c")]


async def test_label_selector_transitions_are_added_and_deleted(
    apiserver: RunningApiServer, kube_api: Any
) -> None:
    store = apiserver.store
    store.create(CONFIGMAPS, cm("m", tier="web"))
    rv = str(store.resource_version)
    store.patch(CONFIGMAPS, "m", {"metadata": {"labels": {"tier": "db"}}})
    store.patch(CONFIGMAPS, "m", {"metadata": {"labels": {"tier": "web"}}})
    seen = await collect(kube_api, rv, 2, label_selector="tier=db")
    assert seen == [("ADDED", "m"), ("DELETED", "m")]


async def test_timeout_seconds_ends_the_stream(apiserver: RunningApiServer, kube_api: Any) -> None:
    v1 = client.CoreV1Api(kube_api)
    async with watch.Watch() as w:
        events = [e async for e in w.stream(v1.list_namespaced_pod, "default", timeout_seconds=1)]
    assert events == []
    assert apiserver.store.watcher_count(PODS) == 0


async def test_many_concurrent_watchers_each_see_every_event(
    apiserver: RunningApiServer, kube_api: Any
) -> None:
    rv = str(apiserver.store.resource_version)
    watchers = [asyncio.create_task(collect(kube_api, rv, 5)) for _ in range(50)]
    for _ in range(100):
        if apiserver.store.watcher_count(CONFIGMAPS) == 50:
            break
        await asyncio.sleep(0.02)
    for n in range(5):
        apiserver.store.create(CONFIGMAPS, cm(f"c{n}"))
    results = await asyncio.gather(*watchers)
    assert all(r == [("ADDED", f"c{n}") for n in range(5)] for r in results)


@pytest.mark.kubectl
async def test_kubectl_get_watch_prints_changes(apiserver: RunningApiServer) -> None:
    apiserver.store.create(CONFIGMAPS, cm("w"))
    task = asyncio.create_task(
        apiserver.kubectl("get", "configmaps", "--watch", "--request-timeout=3s", "-o", "name")
    )
    for _ in range(100):
        if apiserver.store.watcher_count(CONFIGMAPS):
            break
        await asyncio.sleep(0.05)
    apiserver.store.create(CONFIGMAPS, cm("w2"))
    result = await task
    assert result.stdout.split() == ["configmap/w", "configmap/w2"]


async def test_a_watch_ends_when_its_client_goes_away(apiserver: RunningApiServer) -> None:
    import aiohttp

    url = f"{apiserver.url}/api/v1/namespaces/default/configmaps?watch=true"
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        assert response.status == 200
        for _ in range(100):
            if apiserver.store.watcher_count(CONFIGMAPS):
                break
            await asyncio.sleep(0.02)
        assert apiserver.store.watcher_count(CONFIGMAPS) == 1
    for _ in range(100):
        if not apiserver.store.watcher_count(CONFIGMAPS):
            break
        await asyncio.sleep(0.02)
    assert apiserver.store.watcher_count(CONFIGMAPS) == 0
