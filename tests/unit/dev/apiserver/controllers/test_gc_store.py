"""The garbage collector against a real in-memory Store: cascades across kinds, CRs included."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from tests.unit.dev.apiserver.controllers.conftest import eventually
from wlmvk_dev.apiserver.controllers import gc
from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.apiserver.objects.resources import CONFIGMAPS, GVR, NODES, PODS, SECRETS, Obj, ResourceInfo
from wlmvk_dev.apiserver.storage.store import Store

WIDGETS = GVR("example.com", "v1", "widgets")


def owned_by(*owners: Obj, block: bool = False) -> list[dict[str, Any]]:
    refs = []
    for owner in owners:
        ref = {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
        }
        if block:
            ref["blockOwnerDeletion"] = True
        refs.append(ref)
    return refs


def configmap(name: str, *owners: Obj, block: bool = False) -> Obj:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owners:
        meta["ownerReferences"] = owned_by(*owners, block=block)
    return {"metadata": meta, "data": {}}


def exists(store: Store, gvr: GVR, name: str, namespace: str | None = "default") -> bool:
    try:
        store.get(gvr, name, namespace)
    except ApiError:
        return False
    return True


async def test_owner_deleted_takes_dependents_and_theirs(store: Store, running: Any) -> None:
    running(gc.run)
    owner = store.create(CONFIGMAPS, configmap("owner"))
    child = store.create(CONFIGMAPS, configmap("child", owner))
    store.create(SECRETS, {"metadata": {"name": "grandchild", "ownerReferences": owned_by(child)}})
    store.create(CONFIGMAPS, configmap("unrelated"))
    store.delete(CONFIGMAPS, "owner", "default")
    await eventually(lambda: not exists(store, CONFIGMAPS, "child"))
    await eventually(lambda: not exists(store, SECRETS, "grandchild"))
    assert exists(store, CONFIGMAPS, "unrelated")


async def test_only_when_every_owner_is_gone(store: Store, running: Any) -> None:
    running(gc.run)
    first = store.create(CONFIGMAPS, configmap("first"))
    second = store.create(CONFIGMAPS, configmap("second"))
    store.create(CONFIGMAPS, configmap("shared", first, second))
    store.delete(CONFIGMAPS, "first", "default")
    refs = await eventually(
        lambda: (
            len(store.get(CONFIGMAPS, "shared", "default")["metadata"]["ownerReferences"]) == 1
            and store.get(CONFIGMAPS, "shared", "default")["metadata"]["ownerReferences"]
        )
    )
    assert [r["name"] for r in refs] == ["second"]
    store.delete(CONFIGMAPS, "second", "default")
    await eventually(lambda: not exists(store, CONFIGMAPS, "shared"))


async def test_dependent_of_a_cluster_scoped_owner(store: Store, running: Any) -> None:
    running(gc.run)
    node = store.create(NODES, {"metadata": {"name": "n1"}})
    store.create(CONFIGMAPS, configmap("per-node", node))
    store.delete(NODES, "n1")
    await eventually(lambda: not exists(store, CONFIGMAPS, "per-node"))


async def test_dependent_created_for_a_missing_owner_goes(store: Store, running: Any) -> None:
    running(gc.run)
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost", "uid": "no-such-uid"}}
    store.create(CONFIGMAPS, configmap("orphan", ghost))
    await eventually(lambda: not exists(store, CONFIGMAPS, "orphan"))


async def test_orphan_policy_keeps_dependents(store: Store, running: Any) -> None:
    running(gc.run)
    owner = store.create(CONFIGMAPS, configmap("owner"))
    store.create(CONFIGMAPS, configmap("child", owner))
    store.delete(CONFIGMAPS, "owner", "default", propagation_policy="Orphan")
    await eventually(lambda: not exists(store, CONFIGMAPS, "owner"))
    assert "ownerReferences" not in store.get(CONFIGMAPS, "child", "default")["metadata"]


async def test_foreground_deletes_blocking_dependents_first(store: Store, running: Any) -> None:
    running(gc.run)
    owner = store.create(CONFIGMAPS, configmap("owner"))
    store.create(
        CONFIGMAPS,
        configmap("child", owner, block=True)
        | {
            "metadata": {
                "name": "child",
                "namespace": "default",
                "finalizers": ["example.com/hold"],
                "ownerReferences": owned_by(owner, block=True),
            }
        },
    )
    store.delete(CONFIGMAPS, "owner", "default", propagation_policy="Foreground")
    await eventually(lambda: store.get(CONFIGMAPS, "child", "default")["metadata"].get("deletionTimestamp"))
    assert exists(store, CONFIGMAPS, "owner"), "the owner waits for its blocking dependent"
    child = store.get(CONFIGMAPS, "child", "default")
    child["metadata"]["finalizers"] = []
    store.update(CONFIGMAPS, child)
    await eventually(lambda: not exists(store, CONFIGMAPS, "owner"))


async def test_orphan_finalizer_set_by_a_client(store: Store, running: Any) -> None:
    running(gc.run)
    owner = store.create(
        CONFIGMAPS,
        configmap("owner")
        | {"metadata": {"name": "owner", "namespace": "default", "finalizers": ["orphan"]}},
    )
    store.create(CONFIGMAPS, configmap("child", owner))
    store.delete(CONFIGMAPS, "owner", "default")
    await eventually(lambda: not exists(store, CONFIGMAPS, "owner"))
    assert exists(store, CONFIGMAPS, "child")
    assert "ownerReferences" not in store.get(CONFIGMAPS, "child", "default")["metadata"]


async def test_custom_resources_own_and_are_owned(store: Store, running: Any) -> None:
    running(gc.run)
    # What applying a CRD does to the store: a resource type registered after the collector started.
    store.register(ResourceInfo(WIDGETS, "Widget", True, "widget", subresources=("status",)))
    widget = store.create(WIDGETS, {"metadata": {"name": "w1", "namespace": "default"}, "spec": {}})
    store.create(
        PODS,
        {
            "metadata": {"name": "w1-pod", "ownerReferences": owned_by(widget)},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    store.create(
        WIDGETS, {"metadata": {"name": "w1-sub", "namespace": "default", "ownerReferences": owned_by(widget)}}
    )
    store.delete(WIDGETS, "w1", "default")
    await eventually(lambda: not exists(store, PODS, "w1-pod"))
    await eventually(lambda: not exists(store, WIDGETS, "w1-sub"))


@pytest.mark.parametrize("policy", [None, "Background"])
async def test_bound_pod_dependents_are_deleted_gracefully(
    store: Store, running: Any, policy: str | None
) -> None:
    running(gc.run)
    owner = store.create(CONFIGMAPS, configmap("owner"))
    store.create(
        PODS,
        {
            "metadata": {"name": "p", "ownerReferences": owned_by(owner)},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
        },
    )
    store.delete(CONFIGMAPS, "owner", "default", propagation_policy=policy)
    pod = await eventually(
        lambda: (p := store.get(PODS, "p", "default"))["metadata"].get("deletionTimestamp") and p
    )
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30


async def test_pods_of_a_deleted_node_are_force_deleted_after_the_quarantine(
    store: Store, running: Any
) -> None:
    running(functools.partial(gc.run, orphaned_pod_quarantine=0.3))
    store.create(NODES, {"metadata": {"name": "n1"}})
    store.create(NODES, {"metadata": {"name": "n2"}})
    for name, node_name in (("on-n1", "n1"), ("on-n2", "n2"), ("on-ghost", "ghost")):
        store.create(
            PODS, {"metadata": {"name": name}, "spec": {"nodeName": node_name, "containers": [{"name": "c"}]}}
        )
    store.delete(NODES, "n1")
    await eventually(lambda: not exists(store, PODS, "on-n1"))
    await eventually(lambda: not exists(store, PODS, "on-ghost"))
    assert exists(store, PODS, "on-n2")


async def test_a_node_back_within_the_quarantine_keeps_its_pods(store: Store, running: Any) -> None:
    running(functools.partial(gc.run, orphaned_pod_quarantine=0.5))
    store.create(NODES, {"metadata": {"name": "n1"}})
    store.create(PODS, {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}})
    store.delete(NODES, "n1")
    store.create(NODES, {"metadata": {"name": "n1"}})
    await asyncio.sleep(1.0)
    assert exists(store, PODS, "p")
