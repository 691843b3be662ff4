"""Discovery documents: version preference, aggregated and legacy forms."""

from __future__ import annotations

from wlmvk_dev.apiserver.handlers.discovery import (
    aggregated,
    aggregated_version,
    api_group,
    resource_list,
    version_priority,
)
from wlmvk_dev.apiserver.objects.resources import BUILTINS, GVR, ResourceInfo


def test_discovery_prefers_the_most_stable_version() -> None:
    versions = ["v1alpha1", "v1", "v2beta1", "v1beta2", "v1beta1", "foo", "v2"]
    assert sorted(versions, key=version_priority) == [
        "v2",
        "v1",
        "v2beta1",
        "v1beta2",
        "v1beta1",
        "v1alpha1",
        "foo",
    ]
    infos = [ResourceInfo(GVR("x.io", v, "things"), "Thing", True, "thing") for v in ("v1alpha1", "v1")]
    group = api_group(infos, "x.io")
    assert group is not None
    assert group["preferredVersion"]["version"] == "v1"


def test_accept_header_selects_aggregated_version() -> None:
    kubectl = (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    )
    assert aggregated_version(kubectl) == "v2"
    assert (
        aggregated_version("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList")
        == "v2beta1"
    )
    assert aggregated_version("application/json, */*") is None


def test_aggregated_core_group_lists_pod_subresources() -> None:
    doc = aggregated(BUILTINS, core=True, version="v2")
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    (core,) = doc["items"]
    assert core["metadata"]["name"] == ""
    pods = next(r for r in core["versions"][0]["resources"] if r["resource"] == "pods")
    assert pods["shortNames"] == ["po"]
    assert pods["scope"] == "Namespaced"
    subresources = {s["subresource"] for s in pods["subresources"]}
    assert subresources == {"status", "binding", "log", "exec", "eviction"}
    named = aggregated(BUILTINS, core=False, version="v2")
    assert "" not in {g["metadata"]["name"] for g in named["items"]}


def test_legacy_resource_list() -> None:
    doc = resource_list(BUILTINS, "coordination.k8s.io", "v1")
    assert doc is not None
    assert doc["groupVersion"] == "coordination.k8s.io/v1"
    assert [r["name"] for r in doc["resources"]] == ["leases"]
    assert resource_list(BUILTINS, "nope.io", "v1") is None
