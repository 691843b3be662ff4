"""Watches and selectors on both planes: event order, resuming from a resourceVersion,
bookmarks, label and field selectors (spec.nodeName, metadata.name, status.phase)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.fidelity.support import (
    CONFIGMAPS,
    MERGE,
    PODS,
    call,
    configmap,
    pod,
    take,
    unique,
    watch,
    watching,
)

pytestmark = pytest.mark.kube_any(subject="watches and selectors")


async def test_a_watch_from_a_list_resumes_with_every_change_in_order(apiserver: Any, kube_api: Any) -> None:
    tag = unique("t")
    _, listed = await call(kube_api, "GET", CONFIGMAPS, query={"labelSelector": f"fidelity={tag}"})
    name = unique("cm")
    await call(
        kube_api,
        "POST",
        CONFIGMAPS,
        body={**configmap(name), "metadata": {"name": name, "labels": {"fidelity": tag}}},
    )
    _, changed = await call(
        kube_api, "PATCH", f"{CONFIGMAPS}/{name}", body={"data": {"a": "1"}}, content_type=MERGE
    )
    await call(kube_api, "DELETE", f"{CONFIGMAPS}/{name}")
    query = {"labelSelector": f"fidelity={tag}", "timeoutSeconds": "10"}
    events = await watch(
        kube_api, CONFIGMAPS, {**query, "resourceVersion": listed["metadata"]["resourceVersion"]}, count=3
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", name),
        ("MODIFIED", name),
        ("DELETED", name),
    ]
    resumed = await watch(
        kube_api, CONFIGMAPS, {**query, "resourceVersion": changed["metadata"]["resourceVersion"]}, count=1
    )
    assert [e["type"] for e in resumed] == ["DELETED"]


async def test_a_watch_without_resource_version_lists_then_marks_the_end_with_a_bookmark(
    apiserver: Any, kube_api: Any
) -> None:
    tag = unique("t")
    name = unique("cm")
    await call(
        kube_api,
        "POST",
        CONFIGMAPS,
        body={**configmap(name), "metadata": {"name": name, "labels": {"fidelity": tag}}},
    )
    query = {"labelSelector": f"fidelity={tag}", "allowWatchBookmarks": "true", "timeoutSeconds": "10"}
    events = await watch(kube_api, CONFIGMAPS, query, count=2)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    mark = events[1]["object"]
    assert (mark["kind"], mark["apiVersion"], mark["metadata"]["annotations"]) == (
        "ConfigMap",
        "v1",
        {"k8s.io/initial-events-end": "true"},
    )
    assert int(mark["metadata"]["resourceVersion"]) >= int(events[0]["object"]["metadata"]["resourceVersion"])


async def test_a_watch_that_sees_no_change_of_its_own_is_moved_on_by_a_bookmark(
    apiserver: Any, kube_api: Any
) -> None:
    """Another object changes while the watch is open: a BOOKMARK carries the watch past it.

    kube-apiserver sends a watch its bookmarks 2 s before the watch's timeout and about once a
    minute, and only when the resource's resourceVersion moved while the watch was open (a watch
    of a resource nobody writes gets none); the in-memory server sends one after
    ``bookmark_interval`` seconds without events (1 s in the fixture), moved or not. Here one
    moved, so both send one.
    """
    _, listed = await call(kube_api, "GET", CONFIGMAPS, query={"labelSelector": "fidelity=none"})
    query = {
        "labelSelector": "fidelity=none",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "5",
        "resourceVersion": listed["metadata"]["resourceVersion"],
    }
    other = unique("cm")
    async with watching(kube_api, CONFIGMAPS, query) as events:
        _, written = await call(kube_api, "POST", CONFIGMAPS, body=configmap(other))
        (bookmark,) = await take(events, 1)
    await call(kube_api, "DELETE", f"{CONFIGMAPS}/{other}")
    assert bookmark["type"] == "BOOKMARK"
    moved_to = int(written["metadata"]["resourceVersion"])
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= moved_to


async def test_label_and_field_selectors_pick_the_same_pods(apiserver: Any, kube_api: Any) -> None:
    tag = unique("t")
    names = [unique("sel") for _ in range(3)]
    for n, name in enumerate(names):
        spec = {"nodeName": "fidelity-node"} if n == 0 else {"schedulerName": "nobody"}
        labels = {"fidelity": tag, "tier": "a" if n < 2 else "b"}
        await call(
            kube_api, "POST", PODS, body={**pod(name, **spec), "metadata": {"name": name, "labels": labels}}
        )
    await call(
        kube_api,
        "PATCH",
        f"{PODS}/{names[2]}/status",
        body={"status": {"phase": "Running"}},
        content_type=MERGE,
    )

    async def picked(**query: str) -> list[str]:
        code, listed = await call(kube_api, "GET", PODS, query=query)
        assert code == 200
        return sorted(
            i["metadata"]["name"] for i in listed["items"] if i["metadata"]["labels"].get("fidelity") == tag
        )

    assert await picked(labelSelector=f"fidelity={tag},tier=a") == sorted(names[:2])
    assert await picked(labelSelector=f"fidelity={tag},tier in (b)") == [names[2]]
    assert await picked(labelSelector=f"fidelity={tag},tier!=a") == [names[2]]
    assert await picked(labelSelector=f"fidelity={tag},!tier") == []
    assert await picked(fieldSelector="spec.nodeName=fidelity-node") == [names[0]]
    assert await picked(fieldSelector=f"metadata.name={names[1]}") == [names[1]]
    assert await picked(fieldSelector="status.phase=Running") == [names[2]]
    assert await picked(fieldSelector="status.phase!=Running,spec.nodeName=") == [names[1]]
