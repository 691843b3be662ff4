"""The HTTP application: routes from Kubernetes paths to the handlers, errors as ``Status``.

Paths: ``/api/v1[/namespaces/{ns}]/{plural}[/{name}[/{sub}]]`` and the same under
``/apis/{group}/{version}`` (served by ``verbs.py``, watches by ``watches.py``), plus discovery
(``/version``, ``/api``, ``/apis``, resource lists), OpenAPI v3 and health, served here. Every
:class:`ApiError` becomes a ``Status`` body with its code in one place (:func:`_status_middleware`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web

from wlmvk.kube.version import KUBERNETES_VERSION
from wlmvk_dev.apiserver.handlers import discovery, openapi
from wlmvk_dev.apiserver.handlers.requests import SETTINGS_KEY, STORE_KEY, Settings, json_response, store_of
from wlmvk_dev.apiserver.handlers.verbs import serve_resource
from wlmvk_dev.apiserver.kubelets import metrics
from wlmvk_dev.apiserver.kubelets.metrics import MetricsHandler
from wlmvk_dev.apiserver.objects.errors import ApiError, no_resource
from wlmvk_dev.apiserver.objects.resources import NODES
from wlmvk_dev.apiserver.storage.store import Store

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
        return await handler(request, store_of(request), kind)

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


async def _version(request: web.Request) -> web.Response:
    return json_response(VERSION)


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _not_found(request: web.Request) -> web.Response:
    raise no_resource()


async def _api(request: web.Request) -> web.Response:
    infos = store_of(request).resources()
    version = discovery.aggregated_version(request.headers.get("Accept", ""))
    if version:
        body = discovery.aggregated(infos, core=True, version=version)
        return json_response(body, content_type=discovery.AGGREGATED.format(v=version))
    return json_response(discovery.api_versions(request.host))


async def _apis(request: web.Request) -> web.Response:
    infos = store_of(request).resources()
    version = discovery.aggregated_version(request.headers.get("Accept", ""))
    if version:
        body = discovery.aggregated(infos, core=False, version=version)
        return json_response(body, content_type=discovery.AGGREGATED.format(v=version))
    return json_response(discovery.api_group_list(infos))


async def _core_resources(request: web.Request) -> web.Response:
    body = discovery.resource_list(store_of(request).resources(), "", "v1")
    return json_response(body)


async def _group(request: web.Request) -> web.Response:
    body = discovery.api_group(store_of(request).resources(), request.match_info["group"])
    if body is None:
        raise no_resource()
    return json_response(body)


async def _group_resources(request: web.Request) -> web.Response:
    m = request.match_info
    body = discovery.resource_list(store_of(request).resources(), m["group"], m["version"])
    if body is None:
        raise no_resource()
    return json_response(body)


async def _openapi_v2(request: web.Request) -> web.Response:
    """An empty OpenAPI v2 document (protobuf: zero bytes), so older kubectl (Debian's 1.20)
    can apply: it validates only kinds the document describes, and builds patches from its
    own types when the document has none. kubectl 1.32 reads the v3 documents instead."""
    return web.Response(body=b"", headers={"Content-Type": "application/octet-stream"})


async def _openapi_root(request: web.Request) -> web.Response:
    return json_response(openapi.root(store_of(request).resources()))


async def _openapi_doc(request: web.Request) -> web.Response:
    doc = openapi.document_for(store_of(request).resources(), request.match_info["path"])
    if doc is None:
        raise no_resource()
    return json_response(doc)


# -- resources ------------------------------------------------------------------------------


async def _core_resource(request: web.Request) -> web.StreamResponse:
    return await serve_resource(request, "", "v1", request.match_info["rest"])


async def _group_resource(request: web.Request) -> web.StreamResponse:
    m = request.match_info
    return await serve_resource(request, m["group"], m["version"], m["rest"])


async def _node_proxy(request: web.Request) -> web.StreamResponse:
    node = store_of(request).get(NODES, request.match_info["name"])
    handler = request.app[SETTINGS_KEY].node_proxy
    if handler is None:
        raise ApiError(501, "NotImplemented", "nodes/proxy is not served: no node proxy is configured")
    return await handler(request, node, request.match_info["path"])
