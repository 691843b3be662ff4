"""Discovery as kubectl and kubernetes_asyncio see it: version, resources, a CRD's group at once."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.apiserver import RunningApiServer, requires_kubectl
from wlmvk.kube.version import KUBERNETES_VERSION
from wlmvk_dev.apiserver.objects.resources import CRDS

pytestmark = pytest.mark.kubectl

WIDGETS = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
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


async def test_kubectl_version_reports_the_kubernetes_version_wlmvk_implements(
    apiserver: RunningApiServer,
) -> None:
    result = await apiserver.kubectl("version", "-o", "json")
    assert result.returncode == 0, result.stderr
    server = json.loads(result.stdout)["serverVersion"]
    assert server["gitVersion"] == KUBERNETES_VERSION
    assert KUBERNETES_VERSION.startswith(f"v{server['major']}.{server['minor']}.")


async def test_api_resources_lists_builtin_kinds(apiserver: RunningApiServer) -> None:
    result = await apiserver.kubectl("api-resources", "-o", "name")
    assert result.returncode == 0, result.stderr
    names = set(result.stdout.split())
    for expected in (
        "pods",
        "nodes",
        "namespaces",
        "events",
        "configmaps",
        "secrets",
        "serviceaccounts",
        "leases.coordination.k8s.io",
        "events.events.k8s.io",
        "customresourcedefinitions.apiextensions.k8s.io",
        "deployments.apps",
        "daemonsets.apps",
        "clusterroles.rbac.authorization.k8s.io",
        "rolebindings.rbac.authorization.k8s.io",
    ):
        assert expected in names


async def test_default_namespaces_exist(apiserver: RunningApiServer) -> None:
    result = await apiserver.kubectl("get", "namespaces", "-o", "name")
    assert result.stdout.split() == [
        "namespace/default",
        "namespace/kube-node-lease",
        "namespace/kube-public",
        "namespace/kube-system",
    ]


@requires_kubectl(32)
async def test_crd_group_is_discoverable_as_soon_as_created(apiserver: RunningApiServer) -> None:
    first = await apiserver.kubectl("get", "wd")
    assert first.returncode != 0
    apiserver.store.create(CRDS, WIDGETS)
    again = await apiserver.kubectl("get", "wd")
    assert again.returncode == 0, again.stderr
    assert "No resources found in default namespace." in again.stderr


async def test_legacy_discovery_answers_plain_json(kube_api: object) -> None:
    from kubernetes_asyncio import client

    versions = await client.CoreApi(kube_api).get_api_versions()
    assert versions.versions == ["v1"]
    groups = await client.ApisApi(kube_api).get_api_versions()
    assert "apps" in {g.name for g in groups.groups}
    resources = await client.CoreV1Api(kube_api).get_api_resources()
    assert {"pods", "pods/status", "pods/log", "pods/binding"} <= {r.name for r in resources.resources}
    code = await client.VersionApi(kube_api).get_code()
    assert code.git_version == KUBERNETES_VERSION


@requires_kubectl(32)
async def test_explain_builtin_kind(apiserver: RunningApiServer) -> None:
    result = await apiserver.kubectl("explain", "pods")
    assert result.returncode == 0, result.stderr
    assert "KIND:       Pod" in result.stdout
    for field in ("apiVersion", "kind", "metadata", "spec", "status"):
        assert f"  {field}\t<" in result.stdout


@requires_kubectl(32)
async def test_auth_can_i_says_yes_because_rbac_is_not_enforced(apiserver: RunningApiServer) -> None:
    result = await apiserver.kubectl("auth", "can-i", "delete", "pods")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "yes"
    listed = await apiserver.kubectl("get", "selfsubjectaccessreviews")
    assert listed.returncode == 1
    assert "MethodNotAllowed" in listed.stderr
