"""OpenAPI v3 documents: the root index and one document per served group-version.

kubectl uses them for two things: ``apply`` checks that the PATCH operation of a kind
declares the ``fieldValidation`` parameter (then it leaves validation to the server),
and ``explain`` reads the schema whose ``x-kubernetes-group-version-kind`` names the
kind. Custom resources get their CRD's ``openAPIV3Schema``; built-in kinds get a shallow
schema (apiVersion, kind, metadata, spec, status, and their descriptions).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from wlmvk.kube.version import KUBERNETES_VERSION
from wlmvk_dev.apiserver.objects.resources import Obj, ResourceInfo

_DESCRIPTIONS = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object.",
    "kind": "Kind is a string value representing the REST resource this object represents.",
    "metadata": "Standard object's metadata.",
    "spec": "Specification of the desired behavior of the object.",
    "status": "Most recently observed status of the object. Read-only.",
}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _by_gv(infos: Iterable[ResourceInfo]) -> dict[tuple[str, str], list[ResourceInfo]]:
    out: dict[tuple[str, str], list[ResourceInfo]] = {}
    for info in infos:
        out.setdefault((info.group, info.gvr.version), []).append(info)
    return out


def root(infos: Iterable[ResourceInfo]) -> Obj:
    paths = {}
    for (group, version), members in _by_gv(infos).items():
        doc = document(members, group, version)
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def document_for(infos: Iterable[ResourceInfo], path: str) -> Obj | None:
    """The document of ``api/v1`` or ``apis/<group>/<version>`` (None if not served)."""
    parts = path.strip("/").split("/")
    if parts[:1] == ["api"] and len(parts) == 2:
        group, version = "", parts[1]
    elif parts[:1] == ["apis"] and len(parts) == 3:
        group, version = parts[1], parts[2]
    else:
        return None
    members = _by_gv(infos).get((group, version))
    return document(members, group, version) if members else None


def schema_name(info: ResourceInfo) -> str:
    group = ".".join(reversed(info.group.split("."))) if info.group else "io.k8s.api.core"
    return f"{group}.{info.gvr.version}.{info.kind}"


def document(members: list[ResourceInfo], group: str, version: str) -> Obj:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for info in members:
        gvk = {"group": info.group, "version": version, "kind": info.kind}
        prefix = "/" + _gv_path(group, version)
        scope = "/namespaces/{namespace}" if info.namespaced else ""
        params = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
        if info.namespaced:
            params.append({"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}})
        item = f"{prefix}{scope}/{info.plural}/{{name}}"
        ref = {"$ref": f"#/components/schemas/{schema_name(info)}"}
        ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
        field_validation = {
            "name": "fieldValidation",
            "in": "query",
            "schema": {"type": "string", "uniqueItems": True},
        }
        paths[item] = {
            "parameters": params,
            "get": {"x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk, "responses": ok},
            "put": {
                "x-kubernetes-action": "put",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [field_validation],
                "responses": ok,
            },
            "patch": {
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [
                    field_validation,
                    {"name": "force", "in": "query", "schema": {"type": "boolean"}},
                ],
                "responses": ok,
            },
            "delete": {
                "x-kubernetes-action": "delete",
                "x-kubernetes-group-version-kind": gvk,
                "responses": ok,
            },
        }
        paths[f"{prefix}{scope}/{info.plural}"] = {
            "parameters": params[1:],
            "post": {
                "x-kubernetes-action": "post",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [field_validation],
                "responses": ok,
            },
            "get": {
                "x-kubernetes-action": "list",
                "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK"}},
            },
        }
        schemas[schema_name(info)] = _schema(info)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _schema(info: ResourceInfo) -> dict[str, Any]:
    gvk = [{"group": info.group, "version": info.gvr.version, "kind": info.kind}]
    if info.schema is not None:
        body: dict[str, Any] = json.loads(json.dumps(info.schema))
        declared = body.setdefault("properties", {})
        for field in ("apiVersion", "kind"):
            declared.setdefault(field, {"type": "string", "description": _DESCRIPTIONS[field]})
        declared.setdefault("metadata", {"type": "object", "description": _DESCRIPTIONS["metadata"]})
        body.setdefault("type", "object")
        body["x-kubernetes-group-version-kind"] = gvk
        return body
    props: dict[str, Any] = {
        "apiVersion": {"type": "string", "description": _DESCRIPTIONS["apiVersion"]},
        "kind": {"type": "string", "description": _DESCRIPTIONS["kind"]},
        "metadata": {
            "type": "object",
            "description": _DESCRIPTIONS["metadata"],
            "x-kubernetes-preserve-unknown-fields": True,
        },
    }
    for field in ("spec", "status"):
        props[field] = {
            "type": "object",
            "description": _DESCRIPTIONS[field],
            "x-kubernetes-preserve-unknown-fields": True,
        }
    return {
        "type": "object",
        "description": f"{info.kind} ({info.api_version}), as stored by the wlmvk in-memory API server.",
        "properties": props,
        "x-kubernetes-group-version-kind": gvk,
    }
