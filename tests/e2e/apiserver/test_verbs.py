"""Verbs and their errors as clients see them: Status bodies, conflicts, selectors, patch types."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.fixtures.apiserver import RunningApiServer
from wlmvk_dev.apiserver.objects.resources import CONFIGMAPS, DEPLOYMENTS, PODS

pytestmark = pytest.mark.apiserver(controllers=False)


def pod(name: str, node: str = "", phase: str = "", **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "labels": labels}, "spec": spec}


async def test_stale_update_is_409_conflict(apiserver: RunningApiServer, kube_api: Any) -> None:
    v1 = client.CoreV1Api(kube_api)
    created = await v1.create_namespaced_config_map(
        "default", {"metadata": {"name": "c"}, "data": {"a": "1"}}
    )
    created.data = {"a": "2"}
    await v1.replace_namespaced_config_map("c", "default", created)
    created.data = {"a": "3"}
    with pytest.raises(ApiException) as raised:
        await v1.replace_namespaced_config_map("c", "default", created)
    assert raised.value.status == 409
    body = json.loads(raised.value.body)
    assert body["kind"] == "Status"
    assert body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]


async def test_create_twice_is_409_already_exists(apiserver: RunningApiServer, kube_api: Any) -> None:
    v1 = client.CoreV1Api(kube_api)
    await v1.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    with pytest.raises(ApiException) as raised:
        await v1.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    assert raised.value.status == 409
    assert json.loads(raised.value.body)["reason"] == "AlreadyExists"


async def test_generate_name_uid_and_timestamps(apiserver: RunningApiServer, kube_api: Any) -> None:
    v1 = client.CoreV1Api(kube_api)
    made = await v1.create_namespaced_config_map("default", {"metadata": {"generateName": "job-"}})
    assert made.metadata.name.startswith("job-")
    assert len(made.metadata.name) == len("job-") + 5
    assert made.metadata.uid
    assert made.metadata.creation_timestamp is not None
    assert int(made.metadata.resource_version) > 0


async def test_missing_namespace_and_object_are_404(apiserver: RunningApiServer, kube_api: Any) -> None:
    v1 = client.CoreV1Api(kube_api)
    with pytest.raises(ApiException) as no_ns:
        await v1.create_namespaced_config_map("nowhere", {"metadata": {"name": "c"}})
    assert no_ns.value.status == 404
    with pytest.raises(ApiException) as no_obj:
        await v1.read_namespaced_pod("ghost", "default")
    assert no_obj.value.status == 404
    assert json.loads(no_obj.value.body)["message"] == 'pods "ghost" not found'


async def test_bad_bodies_and_methods(apiserver: RunningApiServer) -> None:
    base = f"{apiserver.url}/api/v1/namespaces/default/configmaps"
    async with aiohttp.ClientSession() as http:
        async with http.post(base, data=b"{not json", headers={"Content-Type": "application/json"}) as r:
            assert r.status == 400
            assert (await r.json())["reason"] == "BadRequest"
        async with http.put(base, json={}) as r:
            assert r.status == 405
        apiserver.store.create(CONFIGMAPS, {"metadata": {"name": "c"}})
        async with http.patch(f"{base}/c", data=b"{}", headers={"Content-Type": "text/plain"}) as r:
            assert r.status == 415
            assert (await r.json())["reason"] == "UnsupportedMediaType"


async def test_patch_types(apiserver: RunningApiServer, kube_api: Any) -> None:
    apps = client.AppsV1Api(kube_api)
    template = {
        "metadata": {"labels": {"app": "a"}},
        "spec": {
            "containers": [
                {"name": "a", "image": "i", "env": [{"name": "X", "value": "1"}]},
                {"name": "b", "image": "i"},
            ]
        },
    }
    apiserver.store.create(
        DEPLOYMENTS,
        {
            "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": template},
        },
    )
    strategic = {
        "spec": {"template": {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}}}
    }
    patched = await apps.patch_namespaced_deployment("d", "default", strategic)
    containers = patched.spec.template.spec.containers
    assert [c.name for c in containers] == ["a", "b"]
    assert [(e.name, e.value) for e in containers[0].env] == [("X", "1"), ("Y", "2")]
    ops = [{"op": "replace", "path": "/spec/template/spec/containers/1/image", "value": "j"}]
    patched = await apps.patch_namespaced_deployment(
        "d", "default", ops, _content_type="application/json-patch+json"
    )
    assert patched.spec.template.spec.containers[1].image == "j"
    merge = {"metadata": {"labels": {"k": "v"}}}
    patched = await apps.patch_namespaced_deployment(
        "d", "default", merge, _content_type="application/merge-patch+json"
    )
    assert patched.metadata.labels == {"k": "v"}
    bad = [{"op": "test", "path": "/spec/replicas", "value": 7}]
    with pytest.raises(ApiException) as raised:
        await apps.patch_namespaced_deployment(
            "d", "default", bad, _content_type="application/json-patch+json"
        )
    assert raised.value.status == 422


async def test_label_and_field_selectors(apiserver: RunningApiServer, kube_api: Any) -> None:
    store = apiserver.store
    store.create(PODS, pod("a", node="n1", app="web", tier="front"))
    store.create(PODS, pod("b", node="n2", app="web"))
    store.create(PODS, pod("c", app="db"))
    v1 = client.CoreV1Api(kube_api)

    async def names(**kwargs: str) -> list[str]:
        return [p.metadata.name for p in (await v1.list_namespaced_pod("default", **kwargs)).items]

    assert await names(label_selector="app=web") == ["a", "b"]
    assert await names(label_selector="app==web,tier") == ["a"]
    assert await names(label_selector="app!=web") == ["c"]
    assert await names(label_selector="app in (db, other)") == ["c"]
    assert await names(label_selector="app notin (db)") == ["a", "b"]
    assert await names(label_selector="!tier") == ["b", "c"]
    assert await names(field_selector="spec.nodeName=n2") == ["b"]
    assert await names(field_selector="spec.nodeName=") == ["c"]
    assert await names(field_selector="metadata.name!=a,status.phase=Pending") == ["b", "c"]
    everywhere = await v1.list_pod_for_all_namespaces(field_selector="metadata.namespace=default")
    assert len(everywhere.items) == 3


@pytest.mark.kubectl
async def test_kubectl_selectors_and_all_namespaces(apiserver: RunningApiServer) -> None:
    apiserver.store.create(PODS, pod("a", app="web"))
    apiserver.store.create(PODS, pod("s", app="web"), "kube-system")
    result = await apiserver.kubectl(
        "get", "pods", "-A", "-l", "app=web", "--field-selector", "metadata.name=s"
    )
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stdout.strip().splitlines()]
    assert lines[0][:2] == ["NAMESPACE", "NAME"]
    assert [row[:2] for row in lines[1:]] == [["kube-system", "s"]]


async def test_delete_collection_and_finalizers(apiserver: RunningApiServer, kube_api: Any) -> None:
    store = apiserver.store
    store.create(
        CONFIGMAPS, {"metadata": {"name": "keep", "labels": {"x": "1"}, "finalizers": ["wlmvk/hold"]}}
    )
    store.create(CONFIGMAPS, {"metadata": {"name": "drop", "labels": {"x": "1"}}})
    v1 = client.CoreV1Api(kube_api)
    await v1.delete_collection_namespaced_config_map("default", label_selector="x=1")
    held = store.get(CONFIGMAPS, "keep", "default")
    assert held["metadata"]["deletionTimestamp"]
    assert [c["metadata"]["name"] for c in store.list(CONFIGMAPS).items] == ["keep"]
    await v1.patch_namespaced_config_map(
        "keep", "default", {"metadata": {"finalizers": None}}, _content_type="application/merge-patch+json"
    )
    assert store.list(CONFIGMAPS).items == []


async def test_binding_and_eviction_subresources(apiserver: RunningApiServer, kube_api: Any) -> None:
    apiserver.store.create(PODS, pod("p"))
    base = f"{apiserver.url}/api/v1/namespaces/default/pods/p"
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n1"},
    }
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{base}/binding", json=binding) as r:
            assert r.status == 201
        async with http.post(f"{base}/binding", json=binding) as r:
            assert r.status == 409
        stored = apiserver.store.get(PODS, "p", "default")
        assert stored["spec"]["nodeName"] == "n1"
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}
        async with http.post(f"{base}/eviction", json=eviction) as r:
            assert r.status == 201
    assert apiserver.store.get(PODS, "p", "default")["metadata"]["deletionGracePeriodSeconds"] == 30


async def test_status_subresource_through_kubernetes_asyncio(
    apiserver: RunningApiServer, kube_api: Any
) -> None:
    v1 = client.CoreV1Api(kube_api)
    apiserver.store.create(PODS, pod("p", node="n1"))
    status = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    patched = await v1.patch_namespaced_pod_status("p", "default", status)
    assert patched.status.phase == "Running"
    current = await v1.read_namespaced_pod_status("p", "default")
    current.status.phase = "Succeeded"
    replaced = await v1.replace_namespaced_pod_status("p", "default", current)
    assert replaced.status.phase == "Succeeded"
    assert replaced.status.conditions[0].type == "Ready"


@pytest.mark.kubectl
async def test_cascade_orphan_keeps_dependents_without_their_owner(apiserver: RunningApiServer) -> None:
    owner = apiserver.store.create(CONFIGMAPS, {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    apiserver.store.create(CONFIGMAPS, {"metadata": {"name": "child", "ownerReferences": [ref]}})
    result = await apiserver.kubectl("delete", "configmap", "owner", "--cascade=orphan")
    assert result.returncode == 0, result.stderr
    child = apiserver.store.get(CONFIGMAPS, "child", "default")
    assert "ownerReferences" not in child["metadata"]
    collected = await apiserver.kubectl("delete", "configmaps", "--all")
    assert collected.returncode == 0, collected.stderr
    assert apiserver.store.list(CONFIGMAPS).items == []
