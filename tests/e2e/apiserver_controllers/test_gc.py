"""Garbage collection seen through kubectl: deleting an owner deletes its dependents."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import yaml

from tests.fixtures.apiserver import RunningApiServer

pytestmark = pytest.mark.kubectl

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": ["gd"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


async def uid_of(apiserver: RunningApiServer, *what: str) -> str:
    result = await apiserver.kubectl("get", *what, "-o", "jsonpath={.metadata.uid}")
    assert result.returncode == 0, result.stderr
    return result.stdout


def owned(kind: str, name: str, uid: str, api_version: str = "v1") -> list[dict[str, Any]]:
    return [{"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}]


async def gone(apiserver: RunningApiServer, *what: str, timeout: float = 30) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = await apiserver.kubectl("get", *what)
        if result.returncode != 0 and "NotFound" in result.stderr:
            return
        assert loop.time() < deadline, f"{what} still there: {result.stdout}"
        await asyncio.sleep(0.2)


async def test_deleting_an_owner_deletes_its_dependents(apiserver: RunningApiServer) -> None:
    assert (await apiserver.kubectl("create", "configmap", "owner", "--from-literal=a=1")).returncode == 0
    uid = await uid_of(apiserver, "configmap", "owner")
    dependents = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "dep", "ownerReferences": owned("ConfigMap", "owner", uid)},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "dep-pod", "ownerReferences": owned("ConfigMap", "owner", uid)},
            "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["true"]}]},
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bystander"}},
    ]
    applied = await apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(dependents))
    assert applied.returncode == 0, applied.stderr
    deleted = await apiserver.kubectl("delete", "configmap", "owner")
    assert deleted.returncode == 0, deleted.stderr
    await gone(apiserver, "configmap", "dep")
    await gone(apiserver, "pod", "dep-pod")
    assert (await apiserver.kubectl("get", "configmap", "bystander")).returncode == 0


async def test_custom_resource_owner_and_several_owners(apiserver: RunningApiServer) -> None:
    assert (await apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump(CRD))).returncode == 0
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {}}
    applied = await apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump(gadget))
    assert applied.returncode == 0, applied.stderr
    gadget_uid = await uid_of(apiserver, "gadget", "g1")
    await apiserver.kubectl("create", "configmap", "second")
    second_uid = await uid_of(apiserver, "configmap", "second")
    shared = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "shared",
            "ownerReferences": owned("Gadget", "g1", gadget_uid, "example.com/v1")
            + owned("ConfigMap", "second", second_uid),
        },
    }
    only = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "only", "ownerReferences": owned("Gadget", "g1", gadget_uid, "example.com/v1")},
    }
    await apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([shared, only]))
    assert (await apiserver.kubectl("delete", "gd", "g1")).returncode == 0
    await gone(apiserver, "configmap", "only")
    refs = await apiserver.kubectl(
        "get", "configmap", "shared", "-o", "jsonpath={.metadata.ownerReferences[*].name}"
    )
    assert refs.stdout == "second", "the remaining owner keeps it; the gone one is dropped"
    await apiserver.kubectl("delete", "configmap", "second")
    await gone(apiserver, "configmap", "shared")


async def test_cascade_orphan_keeps_dependents(apiserver: RunningApiServer) -> None:
    await apiserver.kubectl("create", "configmap", "owner")
    uid = await uid_of(apiserver, "configmap", "owner")
    dep = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "dep", "ownerReferences": owned("ConfigMap", "owner", uid)},
    }
    await apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump(dep))
    assert (await apiserver.kubectl("delete", "configmap", "owner", "--cascade=orphan")).returncode == 0
    await gone(apiserver, "configmap", "owner")
    refs = await apiserver.kubectl("get", "configmap", "dep", "-o", "jsonpath={.metadata.ownerReferences}")
    assert refs.returncode == 0
    assert refs.stdout == ""


async def test_cascade_foreground_waits_for_blocking_dependents(apiserver: RunningApiServer) -> None:
    await apiserver.kubectl("create", "configmap", "owner")
    uid = await uid_of(apiserver, "configmap", "owner")
    ref = owned("ConfigMap", "owner", uid)
    ref[0]["blockOwnerDeletion"] = True
    dep = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dep", "ownerReferences": ref}}
    await apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump(dep))
    deleted = await apiserver.kubectl("delete", "configmap", "owner", "--cascade=foreground")
    assert deleted.returncode == 0, deleted.stderr
    await gone(apiserver, "configmap", "dep")
    await gone(apiserver, "configmap", "owner")
