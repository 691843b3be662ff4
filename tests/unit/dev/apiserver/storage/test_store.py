"""Store semantics: versions, conflicts, status, deletion rules, watches, CRD registration."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.resources import CONFIGMAPS, CRDS, GVR, NAMESPACES, NODES, PODS
from wlmvk_dev.apiserver.storage.store import Store, WatchEvent


@pytest.fixture
def store() -> Store:
    return Store(history=20)


def pod(name: str = "p", node: str | None = None, **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, **meta}, "spec": spec}


def code(exc: pytest.ExceptionInfo[ApiError]) -> tuple[int, str]:
    return exc.value.code, exc.value.reason


def test_create_sets_identity_and_defaults(store: Store) -> None:
    made = store.create(PODS, pod(generateName="x-", name=""))
    meta = made["metadata"]
    assert meta["name"].startswith("x-")
    assert len(meta["name"]) == 7
    assert meta["namespace"] == "default"
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) == store.resource_version
    assert made["kind"] == "Pod"
    assert made["apiVersion"] == "v1"
    assert made["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert made["spec"]["restartPolicy"] == "Always"
    assert {t["key"] for t in made["spec"]["tolerations"]} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }


def test_create_errors(store: Store) -> None:
    store.create(CONFIGMAPS, {"metadata": {"name": "c"}})
    with pytest.raises(ApiError) as dup:
        store.create(CONFIGMAPS, {"metadata": {"name": "c"}})
    assert code(dup) == (409, "AlreadyExists")
    with pytest.raises(ApiError) as nameless:
        store.create(CONFIGMAPS, {"metadata": {}})
    assert code(nameless) == (422, "Invalid")
    with pytest.raises(ApiError) as no_ns:
        store.create(CONFIGMAPS, {"metadata": {"name": "c"}}, "nowhere")
    assert code(no_ns) == (404, "NotFound")
    with pytest.raises(ApiError) as wrong_kind:
        store.create(CONFIGMAPS, {"kind": "Secret", "metadata": {"name": "d"}})
    assert code(wrong_kind) == (400, "BadRequest")


def test_resource_versions_are_monotonic_and_conflicts_are_409(store: Store) -> None:
    first = store.create(CONFIGMAPS, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    second = store.update(CONFIGMAPS, {**first, "data": {"a": "2"}})
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    with pytest.raises(ApiError) as stale:
        store.update(CONFIGMAPS, {**first, "data": {"a": "3"}})
    assert code(stale) == (409, "Conflict")
    unconditional = {**first, "metadata": {**first["metadata"], "resourceVersion": ""}, "data": {"a": "4"}}
    assert store.update(CONFIGMAPS, unconditional)["data"] == {"a": "4"}
    same = store.get(CONFIGMAPS, "c")
    assert (
        store.update(CONFIGMAPS, same)["metadata"]["resourceVersion"] == same["metadata"]["resourceVersion"]
    )


def test_status_subresource_and_generation(store: Store) -> None:
    node = store.create(NODES, {"metadata": {"name": "n"}, "spec": {}, "status": {"phase": "x"}})
    changed = store.update(NODES, {**node, "spec": {"unschedulable": True}, "status": {"phase": "y"}})
    assert changed["status"] == {"phase": "x"}
    assert changed["metadata"]["generation"] == 2
    status = store.update(NODES, {**changed, "spec": {}, "status": {"phase": "z"}}, subresource="status")
    assert status["status"] == {"phase": "z"}
    assert status["spec"] == {"unschedulable": True}
    assert status["metadata"]["generation"] == 2
    labelled = store.patch(NODES, "n", {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 2


def test_pod_graceful_deletion(store: Store) -> None:
    store.create(PODS, pod(node="n1"))
    marked = store.delete(PODS, "p", grace_period_seconds=10)
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 10
    assert store.get(PODS, "p")["metadata"]["deletionTimestamp"]
    shorter = store.delete(PODS, "p", grace_period_seconds=5)
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 5
    store.delete(PODS, "p", grace_period_seconds=0)
    with pytest.raises(ApiError):
        store.get(PODS, "p")


async def test_pod_deletion_is_written_before_the_pod_goes(store: Store) -> None:
    store.create(PODS, pod(node="n1"))
    with store.watch(PODS, resource_version=store.resource_version) as w:
        store.delete(PODS, "p")  # marked: grace 30, generation + 1
        store.delete(PODS, "p", grace_period_seconds=40)  # a longer grace period changes nothing
        store.delete(PODS, "p", grace_period_seconds=0)
        events = await drain(w, 3)
    seen = [
        (e.type, e.object["metadata"]["generation"], e.object["metadata"]["deletionGracePeriodSeconds"])
        for e in events
    ]
    assert seen == [("MODIFIED", 2, 30), ("MODIFIED", 2, 0), ("DELETED", 2, 0)]


def test_unbound_and_terminal_pods_go_at_once(store: Store) -> None:
    store.create(PODS, pod("unbound"))
    store.delete(PODS, "unbound")
    store.create(PODS, pod("done", node="n1"))
    done = store.get(PODS, "done")
    done["status"] = {"phase": "Succeeded"}
    store.update(PODS, done, subresource="status")
    store.delete(PODS, "done")
    assert store.list(PODS).items == []


def test_finalizers_hold_deletion_until_removed(store: Store) -> None:
    store.create(CONFIGMAPS, {"metadata": {"name": "c", "finalizers": ["a/b"]}})
    held = store.delete(CONFIGMAPS, "c")
    assert held["metadata"]["deletionTimestamp"]
    with pytest.raises(ApiError) as more:
        store.patch(CONFIGMAPS, "c", {"metadata": {"finalizers": ["a/b", "c/d"]}})
    assert more.value.code == 422
    store.patch(CONFIGMAPS, "c", {"metadata": {"finalizers": []}})
    assert store.list(CONFIGMAPS).items == []


def test_bound_pod_with_finalizer_waits_for_kubelet_and_finalizer(store: Store) -> None:
    store.create(PODS, pod(node="n1", finalizers=["x/y"]))
    store.delete(PODS, "p")
    store.patch(PODS, "p", {"metadata": {"finalizers": None}})
    assert store.get(PODS, "p")["metadata"]["deletionGracePeriodSeconds"] == 30
    store.delete(PODS, "p", grace_period_seconds=0)
    assert store.list(PODS).items == []


def test_propagation_policies(store: Store) -> None:
    owner = store.create(CONFIGMAPS, {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    store.create(CONFIGMAPS, {"metadata": {"name": "child", "ownerReferences": [ref]}})
    store.delete(CONFIGMAPS, "owner", propagation_policy="Orphan")
    assert "ownerReferences" not in store.get(CONFIGMAPS, "child")["metadata"]
    store.create(CONFIGMAPS, {"metadata": {"name": "fg"}})
    held = store.delete(CONFIGMAPS, "fg", propagation_policy="Foreground")
    assert held["metadata"]["finalizers"] == ["foregroundDeletion"]
    with pytest.raises(ApiError) as bad:
        store.delete(CONFIGMAPS, "child", propagation_policy="Sideways")
    assert bad.value.code == 400


def test_deleting_a_namespace_deletes_its_contents(store: Store) -> None:
    store.create(NAMESPACES, {"metadata": {"name": "team"}})
    store.create(CONFIGMAPS, {"metadata": {"name": "c"}}, "team")
    store.create(CONFIGMAPS, {"metadata": {"name": "c"}}, "default")
    store.delete(NAMESPACES, "team")
    assert [c["metadata"]["namespace"] for c in store.list(CONFIGMAPS).items] == ["default"]


def test_bind(store: Store) -> None:
    store.create(PODS, pod())
    bound = store.bind("default", "p", "n1")
    assert bound["spec"]["nodeName"] == "n1"
    assert bound["status"]["conditions"][0]["type"] == "PodScheduled"
    with pytest.raises(ApiError) as again:
        store.bind("default", "p", "n2")
    assert again.value.code == 409


def test_server_side_apply_creates_and_merges(store: Store) -> None:
    store.patch(
        CONFIGMAPS,
        "c",
        {"metadata": {"name": "c"}, "data": {"a": "1"}},
        "default",
        patch_type="apply",
        field_manager="one",
    )
    merged = store.patch(
        CONFIGMAPS,
        "c",
        {"metadata": {"name": "c"}, "data": {"b": "2"}},
        patch_type="apply",
        field_manager="two",
    )
    assert merged["data"] == {"a": "1", "b": "2"}
    dropped = store.patch(
        CONFIGMAPS,
        "c",
        {"metadata": {"name": "c"}, "data": {"c": "3"}},
        patch_type="apply",
        field_manager="one",
    )
    assert dropped["data"] == {"b": "2", "c": "3"}


def test_returned_objects_are_copies(store: Store) -> None:
    made = store.create(CONFIGMAPS, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    made["data"]["a"] = "changed"
    store.get(CONFIGMAPS, "c")["data"]["a"] = "changed"
    assert store.get(CONFIGMAPS, "c")["data"] == {"a": "1"}


async def drain(w: Any, n: int) -> list[WatchEvent]:
    out = []
    async with asyncio.timeout(5):
        while len(out) < n:
            event = await w.next()
            assert event is not None
            out.append(event)
    return out


async def test_watch_initial_events_then_changes(store: Store) -> None:
    store.create(CONFIGMAPS, {"metadata": {"name": "a"}})
    with store.watch(CONFIGMAPS, "default") as w:
        store.create(CONFIGMAPS, {"metadata": {"name": "b"}})
        store.create(CONFIGMAPS, {"metadata": {"name": "other"}}, "kube-system")
        store.delete(CONFIGMAPS, "a")
        events = await drain(w, 3)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    assert events[2].resource_version == int(events[2].object["metadata"]["resourceVersion"])


async def test_watch_replays_history_and_expires(store: Store) -> None:
    store.create(CONFIGMAPS, {"metadata": {"name": "a"}})
    rv = store.resource_version
    store.patch(CONFIGMAPS, "a", {"data": {"x": "1"}})
    with store.watch(CONFIGMAPS, resource_version=rv) as w:
        assert [e.type for e in await drain(w, 1)] == ["MODIFIED"]
    for n in range(25):
        store.patch(CONFIGMAPS, "a", {"data": {"x": str(n)}})
    with pytest.raises(ApiError) as expired:
        store.watch(CONFIGMAPS, resource_version=rv)
    assert code(expired) == (410, "Expired")
    with pytest.raises(ApiError) as odd:
        store.watch(CONFIGMAPS, resource_version="abc")
    assert odd.value.code == 400


async def test_watch_selector_transitions(store: Store) -> None:
    store.create(PODS, pod())
    with store.watch(PODS, field_selector="spec.nodeName=n1", resource_version=store.resource_version) as w:
        store.bind("default", "p", "n1")
        store.delete(PODS, "p", grace_period_seconds=0)
        events = await drain(w, 3)
    # as kube-apiserver: the deletion is written (grace 0) before the pod goes
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert events[1].object["metadata"]["deletionGracePeriodSeconds"] == 0


async def test_watch_bookmarks_and_timeout(store: Store) -> None:
    w = store.watch(
        CONFIGMAPS,
        resource_version=store.resource_version,
        bookmarks=True,
        bookmark_interval=0.05,
        timeout=0.3,
    )
    events = [e async for e in w]
    assert events
    assert all(e.type == "BOOKMARK" for e in events)
    assert events[0].object["metadata"]["resourceVersion"] == str(store.resource_version)
    assert store.watcher_count(CONFIGMAPS) == 0


async def test_unregister_ends_watches(store: Store) -> None:
    crd = {
        "metadata": {"name": "things.x.io"},
        "spec": {
            "group": "x.io",
            "scope": "Cluster",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    store.create(CRDS, crd)
    things = GVR("x.io", "v1", "things")
    established = store.get(CRDS, "things.x.io")["status"]["conditions"]
    assert {c["type"] for c in established} == {"NamesAccepted", "Established"}
    store.create(things, {"metadata": {"name": "t"}})
    w = store.watch(things)
    store.delete(CRDS, "things.x.io")
    assert [e.type async for e in w] == ["ADDED"]
    assert store.find("x.io", "v1", "things") is None


def test_invalid_crd_is_422(store: Store) -> None:
    with pytest.raises(ApiError) as raised:
        store.create(
            CRDS,
            {
                "metadata": {"name": "wrong"},
                "spec": {
                    "group": "x.io",
                    "scope": "Cluster",
                    "names": {"plural": "things", "kind": "Thing"},
                    "versions": [{"name": "v1", "served": True, "storage": True}],
                },
            },
        )
    assert raised.value.code == 422
    assert "metadata.name" in raised.value.message


def test_server_side_apply_removes_what_the_manager_stopped_applying(store: Store) -> None:
    def applied(labels: dict[str, str], env: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "metadata": {"name": "p", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "i", "env": env}]},
        }

    store.patch(
        PODS,
        "p",
        applied({"a": "1", "b": "2"}, [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]),
        patch_type="apply",
        field_manager="kubectl",
    )
    store.patch(PODS, "p", {"metadata": {"labels": {"other": "x"}}}, patch_type="merge")
    store.patch(
        PODS, "p", {"metadata": {"labels": {"mine": "y"}}}, patch_type="apply", field_manager="someone"
    )
    after = store.patch(
        PODS,
        "p",
        applied({"a": "1"}, [{"name": "Y", "value": "3"}]),
        patch_type="apply",
        field_manager="kubectl",
    )
    assert after["metadata"]["labels"] == {"a": "1", "other": "x", "mine": "y"}
    assert after["spec"]["containers"][0]["env"] == [{"name": "Y", "value": "3"}]
    assert after["spec"]["restartPolicy"] == "Always"


async def test_an_update_that_changes_nothing_is_not_an_event(store: Store) -> None:
    made = store.create(CONFIGMAPS, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    with store.watch(CONFIGMAPS, resource_version=made["metadata"]["resourceVersion"]) as w:
        body = {"metadata": {"name": "c"}, "data": {"a": "1"}}
        same = store.update(CONFIGMAPS, body, "default")
        assert same["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
        store.patch(CONFIGMAPS, "c", {"data": {"a": "2"}})
        (event,) = await drain(w, 1)
    assert event.object["data"] == {"a": "2"}


def test_dry_runs_store_nothing(store: Store) -> None:
    made = store.create(CONFIGMAPS, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    rv = store.resource_version
    assert store.create(CONFIGMAPS, {"metadata": {"name": "d"}}, dry_run=True)["metadata"]["name"] == "d"
    assert store.patch(CONFIGMAPS, "c", {"data": {"a": "2"}}, dry_run=True)["data"] == {"a": "2"}
    assert store.update(CONFIGMAPS, {**made, "data": {"a": "3"}}, dry_run=True)["data"] == {"a": "3"}
    applied = {"metadata": {"name": "c"}, "data": {"b": "4"}}
    assert store.patch(CONFIGMAPS, "c", applied, patch_type="apply", field_manager="m", dry_run=True)[
        "data"
    ] == {"a": "1", "b": "4"}
    assert store.delete(CONFIGMAPS, "c", dry_run=True)["metadata"]["name"] == "c"
    assert store.resource_version == rv
    assert [c["data"] for c in store.list(CONFIGMAPS).items] == [{"a": "1"}]


def test_scale_subresource_view_and_write(store: Store) -> None:
    from wlmvk_dev.apiserver.handlers import scale
    from wlmvk_dev.apiserver.objects.resources import DEPLOYMENTS

    store.create(
        DEPLOYMENTS, {"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"b": "2", "a": "1"}}}}
    )
    view = scale.get(store, DEPLOYMENTS, "d", "default")
    assert view["spec"] == {"replicas": 1}
    assert view["status"] == {"replicas": 0, "selector": "a=1,b=2"}
    assert (
        scale.patch(store, DEPLOYMENTS, "d", "default", {"spec": {"replicas": 4}}, "merge")["spec"][
            "replicas"
        ]
        == 4
    )
    stale = {**view, "spec": {"replicas": 2}}
    with pytest.raises(ApiError) as raised:
        scale.write(store, DEPLOYMENTS, "d", "default", stale)
    assert raised.value.code == 409
    with pytest.raises(ApiError):
        scale.patch(store, DEPLOYMENTS, "d", "default", {"spec": {"replicas": -1}}, "merge")


def test_namespace_termination_waits_for_bound_pods_and_finalizers(store: Store) -> None:
    from wlmvk_dev.apiserver.objects.resources import EVENTS

    store.create(NAMESPACES, {"metadata": {"name": "team"}})
    store.create(PODS, pod("running", node="n1"), "team")
    store.create(PODS, pod("pending"), "team")
    store.create(CONFIGMAPS, {"metadata": {"name": "held", "finalizers": ["x/y"]}}, "team")
    store.create(
        EVENTS,
        {"metadata": {"name": "e"}, "involvedObject": {"name": "running", "namespace": "team"}},
        "team",
    )
    terminating = store.delete(NAMESPACES, "team")
    assert terminating["status"]["phase"] == "Terminating"
    assert [p["metadata"]["name"] for p in store.list(PODS, "team").items] == ["running"]
    with pytest.raises(ApiError) as refused:
        store.create(CONFIGMAPS, {"metadata": {"name": "late"}}, "team")
    assert code(refused) == (403, "Forbidden")
    store.delete(PODS, "running", "team", grace_period_seconds=0)
    assert store.get(NAMESPACES, "team")["metadata"]["deletionTimestamp"]
    store.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, "team")
    with pytest.raises(ApiError):
        store.get(NAMESPACES, "team")
