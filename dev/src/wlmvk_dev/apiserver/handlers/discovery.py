"""Discovery documents: aggregated (apidiscovery.k8s.io/v2 and v2beta1) and legacy forms.

Built from the store's resource types on every request, so a CRD's group is discoverable
as soon as the CRD exists.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from typing import Any

from wlmvk_dev.apiserver.objects.resources import Obj, ResourceInfo
from wlmvk_dev.apiserver.rules.patching import BUILTIN_GROUPS

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"

_SUB_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "log": ["get"],
    "exec": ["create", "get"],
    "binding": ["create"],
    "eviction": ["create"],
    "proxy": ["create", "delete", "get", "patch", "update"],
}
_SUB_KINDS = {
    "log": "Pod",
    "exec": "PodExecOptions",
    "binding": "Binding",
    "eviction": "Eviction",
    "scale": "Scale",
    "proxy": "NodeProxyOptions",
}


def aggregated_version(accept: str) -> str | None:
    """``v2`` or ``v2beta1`` when the client accepts aggregated discovery, else None."""
    for part in accept.split(","):
        if "as=APIGroupDiscoveryList" in part and "g=apidiscovery.k8s.io" in part:
            if "v=v2beta1" in part:
                return "v2beta1"
            if "v=v2" in part:
                return "v2"
    return None


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key of Kubernetes version priority: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > other."""
    m = _VERSION.match(version)
    if m is None:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0), version)


def _groups(infos: Iterable[ResourceInfo]) -> dict[str, dict[str, list[ResourceInfo]]]:
    """Group -> version (preferred first) -> resource types."""
    groups: dict[str, dict[str, list[ResourceInfo]]] = {}
    for info in infos:
        groups.setdefault(info.group, {}).setdefault(info.gvr.version, []).append(info)
    return {g: dict(sorted(vs.items(), key=lambda kv: version_priority(kv[0]))) for g, vs in groups.items()}


def aggregated(infos: Iterable[ResourceInfo], *, core: bool, version: str) -> Obj:
    """``/api`` (core=True) or ``/apis`` as an APIGroupDiscoveryList."""
    items = []
    for group, versions in _groups(infos).items():
        if (group == "") != core:
            continue
        items.append(
            {
                "metadata": {"name": group, "creationTimestamp": None},
                "versions": [
                    {"version": v, "resources": [_aggregated_resource(i) for i in rs], "freshness": "Current"}
                    for v, rs in versions.items()
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }


def _aggregated_resource(info: ResourceInfo) -> dict[str, Any]:
    kind = {"group": info.group, "version": info.gvr.version, "kind": info.kind}
    body: dict[str, Any] = {
        "resource": info.plural,
        "responseKind": kind,
        "scope": "Namespaced" if info.namespaced else "Cluster",
        "singularResource": info.singular,
        "verbs": list(info.verbs),
    }
    if info.short_names:
        body["shortNames"] = list(info.short_names)
    if info.categories:
        body["categories"] = list(info.categories)
    if info.subresources:
        body["subresources"] = [
            {
                "subresource": sub,
                "responseKind": (
                    {"group": "autoscaling", "version": "v1", "kind": "Scale"}
                    if sub == "scale"
                    else {**kind, "kind": _SUB_KINDS.get(sub, info.kind)}
                ),
                "verbs": _SUB_VERBS.get(sub, ["get"]),
            }
            for sub in info.subresources
        ]
    return body


def api_versions(host: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    }


def _group(group: str, versions: Iterable[str]) -> Obj:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def api_group_list(infos: Iterable[ResourceInfo]) -> Obj:
    groups = [_group(g, vs) for g, vs in _groups(infos).items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(infos: Iterable[ResourceInfo], group: str) -> Obj | None:
    versions = _groups(infos).get(group)
    if not versions or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def storage_version_hash(info: ResourceInfo) -> str:
    """kube-apiserver's hash of a custom resource's storage version (one served version, stored)."""
    digest = hashlib.sha256(f"{info.api_version}/{info.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def resource_list(infos: Iterable[ResourceInfo], group: str, version: str) -> Obj | None:
    """The legacy APIResourceList of one group-version (None if it is not served)."""
    chosen = [i for i in infos if i.group == group and i.gvr.version == version]
    if not chosen:
        return None
    resources: list[dict[str, Any]] = []
    for info in chosen:
        entry: dict[str, Any] = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": list(info.verbs),
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        if info.group not in BUILTIN_GROUPS:
            entry["storageVersionHash"] = storage_version_hash(info)
        resources.append(entry)
        for sub in info.subresources:
            resources.append(
                {
                    "name": f"{info.plural}/{sub}",
                    "singularName": "",
                    "namespaced": info.namespaced,
                    "kind": _SUB_KINDS.get(sub, info.kind),
                    "verbs": _SUB_VERBS.get(sub, ["get"]),
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
