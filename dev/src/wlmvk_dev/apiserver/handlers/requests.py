"""What a request to a resource says: its target, its query options, its body.

Parsed once for the verbs of ``verbs.py`` and the watches of ``watches.py``: booleans are
compared case-insensitively (kubernetes_asyncio sends ``True``), bodies are JSON, YAML or the
protobuf of kubectl's imperative commands, DeleteOptions come from the body and the query.
The application's store and :class:`Settings` are reached through the request here too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from wlmvk_dev.apiserver.handlers import protobuf
from wlmvk_dev.apiserver.kubelets import ExecHandler, LogHandler
from wlmvk_dev.apiserver.kubelets.metrics import MetricsHandler
from wlmvk_dev.apiserver.kubelets.nodeproxy import NodeProxyHandler
from wlmvk_dev.apiserver.objects import fieldlabels
from wlmvk_dev.apiserver.objects.errors import ApiError, bad_request, no_resource
from wlmvk_dev.apiserver.objects.resources import ResourceInfo
from wlmvk_dev.apiserver.objects.selectors import FieldSelector, parse_field_selector
from wlmvk_dev.apiserver.rules import schema
from wlmvk_dev.apiserver.rules.patching import BUILTIN_GROUPS
from wlmvk_dev.apiserver.storage.store import Store

STORE_KEY: web.AppKey[Store] = web.AppKey("store", Store)


@dataclass(frozen=True)
class Settings:
    """Behaviour of the HTTP layer."""

    bookmark_interval: float = 5.0
    """Seconds without events after which a watch with allowWatchBookmarks gets a BOOKMARK."""
    log_handler: LogHandler | None = None
    """Serves ``pods/{name}/log``; without one the route answers 501 (see controllers.py)."""
    exec_handler: ExecHandler | None = None
    """Serves ``pods/{name}/exec``; without one the route answers 501 (see controllers.py)."""
    metrics: MetricsHandler | None = None
    """Serves ``metrics.k8s.io`` (metrics.py); without one the group is not served."""
    node_proxy: NodeProxyHandler | None = None
    """Serves ``nodes/{name}/proxy/...`` (nodeproxy.py); without one the route answers 501."""


SETTINGS_KEY: web.AppKey[Settings] = web.AppKey("settings", Settings)


def truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("true", "1", "yes", "t")


@dataclass(frozen=True)
class Target:
    """What a resource URL addresses."""

    info: ResourceInfo
    namespace: str | None
    name: str | None
    subresource: str | None


def store_of(request: web.Request) -> Store:
    return request.app[STORE_KEY]


def json_response(body: Any, status: int = 200, content_type: str = "application/json") -> web.Response:
    data = json.dumps(body, separators=(",", ":")).encode()
    return web.Response(body=data, status=status, headers={"Content-Type": content_type})


def target_of(store: Store, group: str, version: str, rest: str) -> Target:
    parts = [p for p in rest.split("/") if p]
    namespace = None
    if (
        len(parts) >= 3
        and parts[0] == "namespaces"
        and not (group == "" and len(parts) == 3 and parts[2] in ("status", "finalize"))
    ):
        namespace, parts = parts[1], parts[2:]
    if not parts or len(parts) > 3:
        raise no_resource()
    info = store.find(group, version, parts[0])
    if info is None and group not in BUILTIN_GROUPS:
        # kube-apiserver's apiextensions handler: a plain-text 404, no Status
        raise web.HTTPNotFound(text="404 page not found\n")
    if info is None:
        raise no_resource()
    if namespace is not None and not info.namespaced:
        raise no_resource()
    name = parts[1] if len(parts) > 1 else None
    sub = parts[2] if len(parts) > 2 else None
    if sub is not None and sub not in info.subresources:
        raise no_resource()
    return Target(info, namespace, name, sub)


def verb_of(method: str, t: Target, watch: bool) -> str:
    if t.name is None:
        collection = {"GET": "watch" if watch else "list", "POST": "create", "DELETE": "deletecollection"}
        return collection.get(method, method.lower())
    return {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())


def is_dry_run(request: web.Request) -> bool:
    """``dryRun=All``: answer as if the write happened, store nothing."""
    return request.query.get("dryRun") == "All"


def field_selector_of(request: web.Request, t: Target) -> FieldSelector:
    """The request's field selector, refused (400) on a field label the kind does not support."""
    selector = parse_field_selector(request.query.get("fieldSelector"))
    fieldlabels.check(t.info, selector)
    return selector


def wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return any("as=Table" in part for part in accept.split(","))


async def read_body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        raise bad_request("the request body is empty")
    ctype = request.content_type
    if ctype == "application/vnd.kubernetes.protobuf":
        return protobuf.decode(raw)
    if "protobuf" in ctype or "cbor" in ctype:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: "
            f"application/json, application/yaml, application/vnd.kubernetes.protobuf (not {ctype})",
        )
    try:
        if ctype.endswith("yaml"):
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as e:
        raise bad_request(f"the body of the request could not be decoded: {e}") from e


def name_matches(body: Any, name: str | None) -> None:
    if not isinstance(body, dict):
        raise bad_request("the body must be a JSON object")
    meta = body.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    if meta.get("name") not in (None, "", name):
        raise bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
        )
    meta["name"] = name


def strict_fields(request: web.Request, info: ResourceInfo, body: Any) -> None:
    """``fieldValidation=Strict``: unknown fields of a custom resource are a 400, as real."""
    if info.schema is None or not isinstance(body, dict):
        return
    if request.query.get("fieldValidation", "").lower() != "strict":
        return
    dropped = schema.prune(info.schema, json.loads(json.dumps(body)))
    if dropped:
        listed = ", ".join(f'unknown field "{p}"' for p in dropped)
        raise bad_request(
            f'{info.kind} in version "{info.gvr.version}" cannot be handled as a {info.kind}: '
            f"strict decoding error: {listed}"
        )


async def delete_options(request: web.Request) -> dict[str, Any]:
    options: dict[str, Any] = {}
    raw = await request.read()
    if raw.strip():
        try:
            parsed = json.loads(raw)
        except ValueError as e:
            raise bad_request(f"invalid DeleteOptions: {e}") from e
        if isinstance(parsed, dict):
            options.update(parsed)
    q = request.query
    if "gracePeriodSeconds" in q:
        options["gracePeriodSeconds"] = q["gracePeriodSeconds"]
    if "propagationPolicy" in q:
        options["propagationPolicy"] = q["propagationPolicy"]
    if options.get("gracePeriodSeconds") is not None:
        try:
            options["gracePeriodSeconds"] = int(options["gracePeriodSeconds"])
        except (TypeError, ValueError) as e:
            raise bad_request("gracePeriodSeconds must be an integer") from e
    if options.get("orphanDependents") is True and "propagationPolicy" not in options:
        options["propagationPolicy"] = "Orphan"
    return options
