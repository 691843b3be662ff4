"""The REST surface: aiohttp routes from Kubernetes paths and verbs to the store.

Paths: ``/api/v1[/namespaces/{ns}]/{plural}[/{name}[/{sub}]]`` and the same under
``/apis/{group}/{version}``, plus discovery (``/version``, ``/api``, ``/apis``, resource
lists), OpenAPI v3 and health. Query parameters are parsed once (booleans are compared
case-insensitively: kubernetes_asyncio sends ``True``); every :class:`ApiError` becomes a
``Status`` body with its code in one place (:func:`_status_middleware`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
import yaml
from aiohttp import web

from wlmvk.kube.version import KUBERNETES_VERSION
from wlmvk_dev.apiserver.handlers import discovery, openapi, protobuf, scale, tables
from wlmvk_dev.apiserver.kubelets import ExecHandler, LogHandler, metrics
from wlmvk_dev.apiserver.kubelets.metrics import MetricsHandler
from wlmvk_dev.apiserver.kubelets.nodeproxy import NodeProxyHandler
from wlmvk_dev.apiserver.objects import fieldlabels
from wlmvk_dev.apiserver.objects.errors import (
    ApiError,
    Cause,
    bad_request,
    invalid,
    method_not_allowed,
    no_resource,
)
from wlmvk_dev.apiserver.objects.resources import (
    NAMESPACES,
    NODES,
    PODS,
    REVIEWS,
    TOKEN_REVIEWS,
    ResourceInfo,
)
from wlmvk_dev.apiserver.objects.selectors import FieldSelector, parse_field_selector
from wlmvk_dev.apiserver.rules import schema
from wlmvk_dev.apiserver.rules.patching import BUILTIN_GROUPS, PATCH_TYPES
from wlmvk_dev.apiserver.storage.store import Store, WatchEvent

_log = structlog.get_logger(__name__)

_MAJOR, _MINOR, _PATCH = KUBERNETES_VERSION.removeprefix("v").split(".")
VERSION = {  # /version: the Kubernetes release wlmvk implements, as kube-apiserver words it
    "major": _MAJOR,
    "minor": _MINOR,
    "gitVersion": KUBERNETES_VERSION,
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

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


def build_app(store: Store, settings: Settings) -> web.Application:
    app = web.Application(middlewares=[_status_middleware], client_max_size=64 * 1024 * 1024)
    app[STORE_KEY] = store
    app[SETTINGS_KEY] = settings
    r = app.router
    r.add_get("/version", _version)
    r.add_get("/version/", _version)
    for probe in ("/healthz", "/readyz", "/livez"):
        r.add_get(probe, _ok)
    r.add_get("/api", _api)
    r.add_get("/api/", _api)
    r.add_get("/apis", _apis)
    r.add_get("/apis/", _apis)
    r.add_get("/openapi/v3", _openapi_root)
    r.add_get("/openapi/v3/{path:.+}", _openapi_doc)
    r.add_get("/openapi/v2", _openapi_v2)
    r.add_get("/api/v1", _core_resources)
    r.add_get("/api/v1/", _core_resources)
    if settings.metrics is not None:
        # Before the generic group routes: this group is computed, not stored. Registered in
        # the store for discovery only (get and list; other verbs answer 405 there).
        for info in metrics.INFOS:
            store.register(info)
        paths = ("/nodes", "/nodes/{name}", "/pods", "/namespaces/{namespace}/pods")
        for path in (*paths, "/namespaces/{namespace}/pods/{name}"):
            kind = "pods" if "pods" in path else "nodes"
            r.add_get(f"/apis/{metrics.GROUP}/{metrics.VERSION}{path}", _metrics(settings.metrics, kind))
    r.add_get("/apis/{group}/", _group)
    r.add_get("/apis/{group}/{version}/", _group_resources)
    # Before the generic core route, which takes at most resource/name/subresource.
    r.add_route("*", "/api/v1/nodes/{name}/proxy{path:(/.*)?}", _node_proxy)
    r.add_route("*", "/api/v1/{rest:.+}", _core_resource)
    r.add_get("/apis/{group}", _group)
    r.add_get("/apis/{group}/{version}", _group_resources)
    r.add_route("*", "/apis/{group}/{version}/{rest:.+}", _group_resource)
    return app


def _metrics(handler: MetricsHandler, kind: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def serve(request: web.Request) -> web.Response:
        return await handler(request, _store(request), kind)

    return serve


@web.middleware
async def _status_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as e:
        return web.json_response(e.status(), status=e.code)
    except web.HTTPException:
        raise
    except (ConnectionResetError, asyncio.CancelledError):
        raise
    except Exception as e:
        _log.exception("request failed", method=request.method, path=request.path)
        return web.json_response(ApiError(500, "InternalError", f"internal error: {e}").status(), status=500)


def _store(request: web.Request) -> Store:
    return request.app[STORE_KEY]


def _json(body: Any, status: int = 200, content_type: str = "application/json") -> web.Response:
    data = json.dumps(body, separators=(",", ":")).encode()
    return web.Response(body=data, status=status, headers={"Content-Type": content_type})


async def _version(request: web.Request) -> web.Response:
    return _json(VERSION)


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _not_found(request: web.Request) -> web.Response:
    raise no_resource()


async def _api(request: web.Request) -> web.Response:
    infos = _store(request).resources()
    version = discovery.aggregated_version(request.headers.get("Accept", ""))
    if version:
        body = discovery.aggregated(infos, core=True, version=version)
        return _json(body, content_type=discovery.AGGREGATED.format(v=version))
    return _json(discovery.api_versions(request.host))


async def _apis(request: web.Request) -> web.Response:
    infos = _store(request).resources()
    version = discovery.aggregated_version(request.headers.get("Accept", ""))
    if version:
        body = discovery.aggregated(infos, core=False, version=version)
        return _json(body, content_type=discovery.AGGREGATED.format(v=version))
    return _json(discovery.api_group_list(infos))


async def _core_resources(request: web.Request) -> web.Response:
    body = discovery.resource_list(_store(request).resources(), "", "v1")
    return _json(body)


async def _group(request: web.Request) -> web.Response:
    body = discovery.api_group(_store(request).resources(), request.match_info["group"])
    if body is None:
        raise no_resource()
    return _json(body)


async def _group_resources(request: web.Request) -> web.Response:
    m = request.match_info
    body = discovery.resource_list(_store(request).resources(), m["group"], m["version"])
    if body is None:
        raise no_resource()
    return _json(body)


async def _openapi_v2(request: web.Request) -> web.Response:
    """An empty OpenAPI v2 document (protobuf: zero bytes), so older kubectl (Debian's 1.20)
    can apply: it validates only kinds the document describes, and builds patches from its
    own types when the document has none. kubectl 1.32 reads the v3 documents instead."""
    return web.Response(body=b"", headers={"Content-Type": "application/octet-stream"})


async def _openapi_root(request: web.Request) -> web.Response:
    return _json(openapi.root(_store(request).resources()))


async def _openapi_doc(request: web.Request) -> web.Response:
    doc = openapi.document_for(_store(request).resources(), request.match_info["path"])
    if doc is None:
        raise no_resource()
    return _json(doc)


# -- resources ------------------------------------------------------------------------------


async def _core_resource(request: web.Request) -> web.StreamResponse:
    return await _resource(request, "", "v1", request.match_info["rest"])


async def _group_resource(request: web.Request) -> web.StreamResponse:
    m = request.match_info
    return await _resource(request, m["group"], m["version"], m["rest"])


def _target(store: Store, group: str, version: str, rest: str) -> Target:
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


async def _resource(request: web.Request, group: str, version: str, rest: str) -> web.StreamResponse:
    store = _store(request)
    t = _target(store, group, version, rest)
    method = request.method
    q = request.query
    verb = _verb(method, t, truthy(q.get("watch")))
    if t.subresource is None and verb not in t.info.verbs:
        raise method_not_allowed()
    if t.name is None:
        if method == "GET":
            if truthy(q.get("watch")):
                return await _watch(request, t)
            return _list(request, t)
        if method == "POST":
            return await _create(request, t)
        if method == "DELETE":
            return await _delete_collection(request, t)
        raise method_not_allowed()
    if t.subresource == "log":
        return await _pod_log(request, t)
    if t.subresource == "exec":
        return await _pod_exec(request, t)
    if t.subresource in ("binding", "eviction"):
        if method != "POST":
            raise method_not_allowed()
        if t.subresource == "binding":
            return await _binding(request, t)
        return await _eviction(request, t)
    if t.subresource == "scale":
        return await _scale(request, t)
    if method == "GET":
        obj = store.get(t.info.gvr, t.name, t.namespace)
        if t.subresource is None and _wants_table(request):
            return _json(tables.table(t.info, [obj], obj["metadata"]["resourceVersion"], now=store.now()))
        return _json(obj)
    if method == "PUT":
        body = await _body(request)
        _strict_fields(request, t.info, body)
        _name_matches(body, t.name)
        if t.info.gvr == NAMESPACES and t.subresource == "finalize":
            return _json(store.get(NAMESPACES, t.name))
        return _json(
            store.update(
                t.info.gvr, body, t.namespace, subresource=t.subresource, client=True, dry_run=_dry(request)
            )
        )
    if method == "PATCH":
        return await _patch(request, t)
    if method == "DELETE":
        return await _delete(request, t)
    raise method_not_allowed()


async def _scale(request: web.Request, t: Target) -> web.Response:
    assert t.name is not None
    store = _store(request)
    if request.method == "GET":
        return _json(scale.get(store, t.info.gvr, t.name, t.namespace))
    if request.method == "PUT":
        body = await _body(request)
        return _json(scale.write(store, t.info.gvr, t.name, t.namespace, body, dry_run=_dry(request)))
    if request.method == "PATCH":
        patch_type = PATCH_TYPES.get(request.content_type)
        if patch_type is None:
            raise ApiError(415, "UnsupportedMediaType", f"unsupported patch type {request.content_type!r}")
        body = await _body(request)
        return _json(
            scale.patch(store, t.info.gvr, t.name, t.namespace, body, patch_type, dry_run=_dry(request))
        )
    raise method_not_allowed()


def _verb(method: str, t: Target, watch: bool) -> str:
    if t.name is None:
        collection = {"GET": "watch" if watch else "list", "POST": "create", "DELETE": "deletecollection"}
        return collection.get(method, method.lower())
    return {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())


def _dry(request: web.Request) -> bool:
    """``dryRun=All``: answer as if the write happened, store nothing."""
    return request.query.get("dryRun") == "All"


def _field_selector(request: web.Request, t: Target) -> FieldSelector:
    """The request's field selector, refused (400) on a field label the kind does not support."""
    selector = parse_field_selector(request.query.get("fieldSelector"))
    fieldlabels.check(t.info, selector)
    return selector


def _wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return any("as=Table" in part for part in accept.split(","))


def _list(request: web.Request, t: Target) -> web.Response:
    store = _store(request)
    q = request.query
    result = store.list(
        t.info.gvr,
        t.namespace,
        label_selector=q.get("labelSelector"),
        field_selector=_field_selector(request, t),
        copy=False,
    )
    if _wants_table(request):
        return _json(tables.table(t.info, result.items, result.resource_version, now=store.now()))
    body = {
        "kind": t.info.list_kind,
        "apiVersion": t.info.api_version,
        "metadata": {"resourceVersion": result.resource_version},
        "items": result.items,
    }
    return _json(body)


async def _body(request: web.Request) -> Any:
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


def _name_matches(body: Any, name: str | None) -> None:
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


def _strict_fields(request: web.Request, info: ResourceInfo, body: Any) -> None:
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


def _review(gvr: object) -> dict[str, Any]:
    """The answer to a review: every access is allowed; no token is known (none is issued)."""
    if gvr == TOKEN_REVIEWS:
        return {"authenticated": False, "error": "the wlmvk in-memory API server issues no tokens"}
    return {"allowed": True, "reason": "the wlmvk in-memory API server does not enforce RBAC"}


async def _create(request: web.Request, t: Target) -> web.Response:
    store = _store(request)
    body = await _body(request)
    if not isinstance(body, dict):
        raise bad_request("the body must be a JSON object")
    if t.info.gvr in REVIEWS:
        return _json({**body, "status": _review(t.info.gvr)}, status=201)
    _strict_fields(request, t.info, body)
    return _json(store.create(t.info.gvr, body, t.namespace, dry_run=_dry(request)), status=201)


async def _patch(request: web.Request, t: Target) -> web.Response:
    assert t.name is not None
    store = _store(request)
    patch_type = PATCH_TYPES.get(request.content_type)
    if patch_type is None or patch_type == "apply-cbor":
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{', '.join(k for k, v in PATCH_TYPES.items() if v != 'apply-cbor')}",
        )
    body = await _body(request)
    if patch_type == "apply":
        _strict_fields(request, t.info, body)
        if not request.query.get("fieldManager"):
            required = Cause(
                "fieldManager", "Required value: is required for apply patch", "FieldValueRequired"
            )
            raise invalid("PatchOptions", "", [required], group="meta.k8s.io")
    obj = store.patch(
        t.info.gvr,
        t.name,
        body,
        t.namespace,
        patch_type=patch_type,
        subresource=t.subresource,
        field_manager=request.query.get("fieldManager"),
        force=truthy(request.query.get("force")),
        client=True,
        dry_run=_dry(request),
    )
    return _json(obj)


async def _delete_options(request: web.Request) -> dict[str, Any]:
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


async def _delete(request: web.Request, t: Target) -> web.Response:
    assert t.name is not None
    options = await _delete_options(request)
    obj = _store(request).delete(
        t.info.gvr,
        t.name,
        t.namespace,
        grace_period_seconds=options.get("gracePeriodSeconds"),
        propagation_policy=options.get("propagationPolicy"),
        preconditions=options.get("preconditions"),
        dry_run=_dry(request) or options.get("dryRun") == ["All"],
    )
    if t.info.gvr in (PODS, NAMESPACES) or "deletionTimestamp" in obj["metadata"]:
        return _json(obj)  # pods (and pending deletions) answer with the object
    meta = obj["metadata"]
    details = {"name": meta["name"], "group": t.info.group, "kind": t.info.plural, "uid": meta.get("uid")}
    if not t.info.group:
        del details["group"]
    return _json(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
    )


async def _delete_collection(request: web.Request, t: Target) -> web.Response:
    options = await _delete_options(request)
    q = request.query
    items = _store(request).delete_collection(
        t.info.gvr,
        t.namespace,
        label_selector=q.get("labelSelector"),
        field_selector=_field_selector(request, t),
        grace_period_seconds=options.get("gracePeriodSeconds"),
        propagation_policy=options.get("propagationPolicy"),
    )
    body = {
        "kind": t.info.list_kind,
        "apiVersion": t.info.api_version,
        "metadata": {"resourceVersion": str(_store(request).resource_version)},
        "items": items,
    }
    return _json(body)


async def _binding(request: web.Request, t: Target) -> web.Response:
    assert t.name is not None
    body = await _body(request)
    target = (body or {}).get("target") or {}
    if not target.get("name"):
        raise ApiError(422, "Invalid", f'Binding "{t.name}" is invalid: target.name: Required value')
    store = _store(request)
    store.bind(t.namespace or "default", t.name, target["name"])
    return _json(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201
    )


async def _eviction(request: web.Request, t: Target) -> web.Response:
    assert t.name is not None
    body = await _body(request)
    options = (body or {}).get("deleteOptions") or {}
    _store(request).delete(PODS, t.name, t.namespace, grace_period_seconds=options.get("gracePeriodSeconds"))
    return _json(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201
    )


async def _pod_log(request: web.Request, t: Target) -> web.StreamResponse:
    assert t.name is not None
    store = _store(request)
    pod = store.get(PODS, t.name, t.namespace)
    handler = request.app[SETTINGS_KEY].log_handler
    if handler is None:
        raise ApiError(501, "NotImplemented", "pods/log is not served: no log proxy is configured")
    return await handler(request, pod, store)


async def _pod_exec(request: web.Request, t: Target) -> web.StreamResponse:
    assert t.name is not None
    if request.method not in ("GET", "POST"):
        raise method_not_allowed()
    store = _store(request)
    pod = store.get(PODS, t.name, t.namespace)
    handler = request.app[SETTINGS_KEY].exec_handler
    if handler is None:
        raise ApiError(501, "NotImplemented", "pods/exec is not served: no exec proxy is configured")
    return await handler(request, pod, store)


async def _node_proxy(request: web.Request) -> web.StreamResponse:
    node = _store(request).get(NODES, request.match_info["name"])
    handler = request.app[SETTINGS_KEY].node_proxy
    if handler is None:
        raise ApiError(501, "NotImplemented", "nodes/proxy is not served: no node proxy is configured")
    return await handler(request, node, request.match_info["path"])


# -- watch ----------------------------------------------------------------------------------


async def _watch(request: web.Request, t: Target) -> web.StreamResponse:
    store = _store(request)
    q = request.query
    timeout = None
    if q.get("timeoutSeconds"):
        try:
            timeout = float(q["timeoutSeconds"])
        except ValueError as e:
            raise bad_request("timeoutSeconds must be a number") from e
    table = _wants_table(request)
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    try:
        watch = store.watch(
            t.info.gvr,
            t.namespace,
            resource_version=q.get("resourceVersion"),
            label_selector=q.get("labelSelector"),
            field_selector=_field_selector(request, t),
            bookmarks=truthy(q.get("allowWatchBookmarks")),
            bookmark_interval=request.app[SETTINGS_KEY].bookmark_interval,
            timeout=timeout,
            copy=False,
        )
    except ApiError as e:
        if e.code != 410:
            raise
        await response.prepare(request)
        await response.write(json.dumps({"type": "ERROR", "object": e.status()}).encode() + b"\n")
        await response.write_eof()
        return response
    await response.prepare(request)
    try:
        with watch:
            while True:
                event = await watch.next()
                if event is None:
                    break
                batch = [_line(event, t.info, store, table)]
                while len(batch) < 512 and (more := watch.poll()) is not None:
                    batch.append(_line(more, t.info, store, table))
                await response.write(b"".join(batch))
        await response.write_eof()
    except ConnectionError:
        pass  # the client went away; its watch is closed by the with-block
    return response


def _line(event: WatchEvent, info: ResourceInfo, store: Store, table: bool) -> bytes:
    if not table or event.type == "BOOKMARK":
        return event.line()
    body = tables.table(info, [event.object], str(event.resource_version), now=store.now())
    return json.dumps({"type": event.type, "object": body}, separators=(",", ":")).encode() + b"\n"
