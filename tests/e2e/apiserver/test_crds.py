"""CustomResourceDefinitions and their custom resources, through the real kubectl."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.fixtures.apiserver import RunningApiServer, deleted_line, requires_kubectl
from wlmvk_dev.apiserver.objects.resources import GVR

pytestmark = pytest.mark.kubectl

GADGETS = GVR("demo.wlmvk.io", "v1alpha1", "gadgets")

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.demo.wlmvk.io"},
    "spec": {
        "group": "demo.wlmvk.io",
        "scope": "Namespaced",
        "names": {
            "plural": "gadgets",
            "singular": "gadget",
            "kind": "Gadget",
            "shortNames": ["gd"],
            "categories": ["wlm"],
        },
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Status", "type": "string", "jsonPath": ".status.status"},
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {
                        "name": "Ready",
                        "type": "string",
                        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                    },
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "description": "A Gadget runs a batch script.",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["batch"],
                                "properties": {
                                    "batch": {
                                        "type": "string",
                                        "minLength": 1,
                                        "description": "The batch script to run.",
                                    },
                                    "size": {"type": "integer", "minimum": 1},
                                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def gadget(**spec: object) -> str:
    return yaml.safe_dump(
        {"apiVersion": "demo.wlmvk.io/v1alpha1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": spec}
    )


async def install(apiserver: RunningApiServer) -> None:
    result = await apiserver.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    assert result.returncode == 0, result.stderr
    assert "customresourcedefinition.apiextensions.k8s.io/gadgets.demo.wlmvk.io created" in result.stdout


async def test_custom_resource_applies_and_prints_its_columns(apiserver: RunningApiServer) -> None:
    await install(apiserver)
    created = await apiserver.kubectl("apply", "-f", "-", input=gadget(batch="#!/bin/sh\nhostname", size=2))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "gadget.demo.wlmvk.io/g1 created"
    obj = apiserver.store.get(GADGETS, "g1", "default")
    obj["status"] = {"status": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    apiserver.store.update(GADGETS, obj, subresource="status")
    table = await apiserver.kubectl("get", "gd")
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "STATUS", "SIZE", "READY", "AGE"]
    assert row.split()[:4] == ["g1", "Running", "2", "True"]
    by_category = await apiserver.kubectl("get", "wlm", "-o", "name")
    assert by_category.stdout.strip() == "gadget.demo.wlmvk.io/g1"


async def test_custom_resource_apply_twice_uses_merge_patch(apiserver: RunningApiServer) -> None:
    await install(apiserver)
    await apiserver.kubectl("apply", "-f", "-", input=gadget(batch="a", size=1, mode="fast"))
    again = await apiserver.kubectl("apply", "-f", "-", input=gadget(batch="b", size=1))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "gadget.demo.wlmvk.io/g1 configured"
    spec = apiserver.store.get(GADGETS, "g1", "default")["spec"]
    assert spec == {"batch": "b", "size": 1}


async def test_invalid_custom_resource_is_422_with_field_paths(apiserver: RunningApiServer) -> None:
    await install(apiserver)
    result = await apiserver.kubectl("apply", "-f", "-", input=gadget(size=0, mode="medium"))
    assert result.returncode == 1
    assert 'The Gadget "g1" is invalid' in result.stderr
    assert "spec.batch: Required value" in result.stderr
    assert (
        "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1" in result.stderr
    )
    assert 'spec.mode: Unsupported value: "medium": supported values: "fast", "slow"' in result.stderr
    wrong_type = await apiserver.kubectl("apply", "-f", "-", input=gadget(batch="x", labels={"a": 1}))
    assert "spec.labels.a: Invalid value" in wrong_type.stderr
    assert "must be of type string" in wrong_type.stderr


@requires_kubectl(32)
async def test_unknown_fields_are_rejected_under_strict_validation(apiserver: RunningApiServer) -> None:
    await install(apiserver)
    result = await apiserver.kubectl("apply", "-f", "-", input=gadget(batch="x", colour="red"))
    assert result.returncode == 1
    assert 'unknown field "spec.colour"' in result.stderr
    lenient = await apiserver.kubectl(
        "apply", "--validate=false", "-f", "-", input=gadget(batch="x", colour="red", extra={"free": 1})
    )
    assert lenient.returncode == 0, lenient.stderr
    assert apiserver.store.get(GADGETS, "g1", "default")["spec"] == {"batch": "x", "extra": {"free": 1}}


@requires_kubectl(32)
async def test_status_is_a_subresource(apiserver: RunningApiServer) -> None:
    await install(apiserver)
    await apiserver.kubectl("apply", "-f", "-", input=gadget(batch="x"))
    patched = await apiserver.kubectl(
        "patch", "gadget", "g1", "--subresource=status", "--type=merge", "-p", '{"status":{"status":"Done"}}'
    )
    assert patched.returncode == 0, patched.stderr
    ignored = await apiserver.kubectl(
        "patch", "gadget", "g1", "--type=merge", "-p", '{"status":{"status":"X"}}'
    )
    assert ignored.returncode == 0, ignored.stderr
    stored = apiserver.store.get(GADGETS, "g1", "default")
    assert stored["status"] == {"status": "Done"}
    assert stored["metadata"]["generation"] == 1


@requires_kubectl(32)
async def test_explain_reads_the_crd_schema(apiserver: RunningApiServer) -> None:
    await install(apiserver)
    result = await apiserver.kubectl("explain", "gadgets.spec.batch")
    assert result.returncode == 0, result.stderr
    assert "The batch script to run." in result.stdout
    top = await apiserver.kubectl("explain", "gadget")
    assert "A Gadget runs a batch script." in top.stdout


async def test_deleting_the_crd_stops_serving_its_resources(apiserver: RunningApiServer) -> None:
    await install(apiserver)
    await apiserver.kubectl("apply", "-f", "-", input=gadget(batch="x"))
    deleted = await apiserver.kubectl("delete", "crd", "gadgets.demo.wlmvk.io")
    assert deleted.returncode == 0, deleted.stderr
    assert apiserver.store.find("demo.wlmvk.io", "v1alpha1", "gadgets") is None
    gone = await apiserver.kubectl("get", "gadgets")
    assert gone.returncode == 1


async def test_describe_and_delete_a_custom_resource(apiserver: RunningApiServer) -> None:
    await install(apiserver)
    await apiserver.kubectl("apply", "-f", "-", input=gadget(batch="echo hi", size=3))
    described = await apiserver.kubectl("describe", "gadget", "g1")
    assert described.returncode == 0, described.stderr
    assert "Kind:         Gadget" in described.stdout
    assert "Size:   3" in described.stdout
    deleted = await apiserver.kubectl("delete", "gd", "g1")
    assert deleted.stdout.strip() == deleted_line('gadget.demo.wlmvk.io "g1"')
    assert apiserver.store.list(GADGETS).items == []


async def test_custom_objects_through_kubernetes_asyncio(
    apiserver: RunningApiServer, kube_api: object
) -> None:
    from kubernetes_asyncio import client, watch

    await install(apiserver)
    api = client.CustomObjectsApi(kube_api)
    args = ("demo.wlmvk.io", "v1alpha1", "default", "gadgets")
    body = {
        "apiVersion": "demo.wlmvk.io/v1alpha1",
        "kind": "Gadget",
        "metadata": {"name": "g2"},
        "spec": {"batch": "x"},
    }
    created = await api.create_namespaced_custom_object(*args, body)
    assert created["metadata"]["uid"]
    listed = await api.list_namespaced_custom_object(*args)
    rv = listed["metadata"]["resourceVersion"]
    merge = "application/merge-patch+json"  # kubernetes_asyncio would send the dict as a JSON patch
    await api.patch_namespaced_custom_object_status(
        *args, "g2", {"status": {"status": "Running"}}, _content_type=merge
    )
    await api.patch_namespaced_custom_object(*args, "g2", {"spec": {"size": 2}}, _content_type=merge)
    got = await api.get_namespaced_custom_object(*args, "g2")
    assert got["status"] == {"status": "Running"}
    assert got["spec"] == {"batch": "x", "size": 2}
    assert got["metadata"]["generation"] == 2
    seen = []
    async with watch.Watch() as w:
        async for event in w.stream(
            api.list_namespaced_custom_object, *args, resource_version=rv, timeout_seconds=5
        ):
            seen.append((event["type"], event["object"].get("status")))
            if len(seen) == 2:
                break
    assert seen == [("MODIFIED", {"status": "Running"}), ("MODIFIED", {"status": "Running"})]
