"""The kubelet HTTPS API (aiohttp): logs, exec, pods, health, Summary API, resource metrics; 501 else.

The server takes handler functions, not the controllers: a handler left
out answers 501 with a message. Query parameters are parsed once into
``LogOptions``; ``core.errors`` map to HTTP codes in ``_code_of`` only (a
text body, or for a refused upgrade a ``metav1.Status`` in JSON).
Metrics are served by ``metrics_app`` on their own port.

``/exec/{namespace}/{pod}/{container}`` parses the query and asks
``exec_check`` before any upgrade (so a pod not here is 404, a job not running
400, in kubectl's words), then serves the session over the transport the
request upgrades to: WebSocket (``websocket``) or SPDY/3.1 (``spdy``).

With a ``gate`` (``Gate``) every request is authenticated and authorized
before its handler runs, as the kubelet does: 401 Unauthorized without an
identity, 403 Forbidden without the right on the node. The metrics app has
no gate: it listens apart, on loopback unless told otherwise.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog
from aiohttp import web

from wlmvk.core.errors import (
    Conflict,
    FailedPrecondition,
    InvalidInput,
    NotFound,
    Unavailable,
    Unsupported,
    WlmvkError,
)
from wlmvk.kubelet.api.auth.gate import Gate, Request
from wlmvk.kubelet.api.exec import spdy, websocket
from wlmvk.kubelet.api.exec.requests import ExecHandler, ExecRequest, parse_exec_query
from wlmvk.kubelet.api.logs import LogOptions, parse_options
from wlmvk.kubelet.api.stats import resource_metrics

_log = structlog.get_logger(__name__)

LogsHandler = Callable[[str, str, str, LogOptions], Awaitable[AsyncIterator[bytes]]]
PodsHandler = Callable[[], list[dict[str, Any]]]


@dataclass(frozen=True)
class Handlers:
    logs: LogsHandler | None = None
    pods: PodsHandler | None = None
    healthy: Callable[[], bool] | None = None
    summary: Callable[[], Awaitable[dict[str, Any]]] | None = None
    # The /metrics/resource text of one node (None: of every node served).
    resource_metrics: Callable[[str | None], Awaitable[str]] | None = None
    exec: ExecHandler | None = None
    # Raises what kubectl should hear before an exec session starts (no such pod, a job not running).
    exec_check: Callable[[ExecRequest], Awaitable[None]] | None = None


_NOT_SUPPORTED = {
    "exec": "exec is not supported: a pod on a virtual node is a Slurm batch job, not a container",
    "attach": "attach is not supported: a Slurm batch job has no terminal to attach to",
    "portForward": "port forwarding is not supported: a Slurm job exposes no ports",
    "run": "run is not supported on a Slurm job",
}


# metav1.StatusReason for the codes an upgrade is refused with.
_REASONS = {400: "BadRequest", 404: "NotFound", 409: "Conflict", 503: "ServiceUnavailable"}


def _code_of(exc: WlmvkError) -> int:
    status = {
        InvalidInput: 400,
        FailedPrecondition: 400,
        NotFound: 404,
        Conflict: 409,
        Unsupported: 501,
        Unavailable: 503,
    }
    return next((value for kind, value in status.items() if isinstance(exc, kind)), 500)


def _http_error(exc: WlmvkError) -> web.HTTPException:
    return _exception(_code_of(exc), exc.message)


def _upgrade_refusal(code: int, message: str) -> web.HTTPException:
    """A refused exec/attach/port-forward upgrade: a ``metav1.Status`` in JSON, not text.

    kube-apiserver passes the answer to a refused upgrade on as it is, and clients read it
    differently: client-go up to v1.35 decodes the body as a Status with its universal
    decoder, so a text message with ": " in it reads as a YAML mapping and arrives as an
    empty Status (kubectl: "Error from server: "); v1.36's ``k8s.io/streaming`` takes a JSON
    body's ``message`` or else the text. A Status in JSON reads as its message in both.
    """
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": _REASONS.get(code, "InternalError" if code == 500 else ""),
        "code": code,
    }
    error = web.HTTPException(text=json.dumps(body), content_type="application/json")
    error.set_status(code)
    return error


def _exception(code: int, message: str) -> web.HTTPException:
    error = web.HTTPException(text=message + "\n", content_type="text/plain")
    error.set_status(code)
    return error


def kubelet_app(handlers: Handlers, *, gate: Gate | None = None) -> web.Application:
    app = web.Application(middlewares=[_guarded_by(gate)] if gate is not None else [])

    async def healthz(request: web.Request) -> web.Response:
        if handlers.healthy is not None and not handlers.healthy():
            return web.Response(status=503, text="red-box unreachable\n")
        return web.Response(text="ok")

    async def pods(request: web.Request) -> web.Response:
        if handlers.pods is None:
            raise _exception(501, "pods listing is not available")
        body = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": handlers.pods()}
        return web.Response(text=json.dumps(body), content_type="application/json")

    async def container_logs(request: web.Request) -> web.StreamResponse:
        if handlers.logs is None:
            raise _exception(501, "logs are not available")
        info = request.match_info
        try:
            options = parse_options(request.query, now=datetime.now(UTC))
            stream = await handlers.logs(info["namespace"], info["pod"], info["container"], options)
        except WlmvkError as exc:
            raise _http_error(exc) from exc
        response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
        try:
            first = await anext(stream, None)
        except WlmvkError as exc:
            raise _http_error(exc) from exc
        await response.prepare(request)
        try:
            if first:
                await response.write(first)
            async for chunk in stream:
                await response.write(chunk)
        except (ConnectionResetError, WlmvkError) as exc:
            _log.info("log stream ended early", pod=info["pod"], error=str(exc))
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        await response.write_eof()
        return response

    async def stats_summary(request: web.Request) -> web.Response:
        if handlers.summary is None:
            raise _exception(501, "the Summary API is not available")
        try:
            body = await handlers.summary()
        except WlmvkError as exc:
            raise _http_error(exc) from exc
        return web.Response(text=json.dumps(body), content_type="application/json")

    async def metrics_resource(request: web.Request) -> web.Response:
        if handlers.resource_metrics is None:
            raise _exception(501, "resource metrics are not available")
        try:
            text = await handlers.resource_metrics(request.match_info.get("node"))
        except WlmvkError as exc:
            raise _http_error(exc) from exc
        return web.Response(body=text.encode(), headers={"Content-Type": resource_metrics.CONTENT_TYPE})

    async def exec_session(request: web.Request) -> web.StreamResponse:
        if handlers.exec is None:
            raise _upgrade_refusal(501, _NOT_SUPPORTED["exec"])
        info = request.match_info
        query = {key: request.query.getall(key) for key in request.query}
        try:
            exec_request = parse_exec_query(info["namespace"], info["pod"], info["container"], query)
            if handlers.exec_check is not None:
                await handlers.exec_check(exec_request)
        except WlmvkError as exc:
            raise _upgrade_refusal(_code_of(exc), exc.message) from exc
        if websocket.is_websocket_upgrade(request):
            return await websocket.serve(request, exec_request, handlers.exec)
        if spdy.is_spdy_upgrade(request):
            return await spdy.serve(request, exec_request, handlers.exec)
        raise _exception(400, "Upgrade request required")

    def unsupported(kind: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            raise _upgrade_refusal(501, _NOT_SUPPORTED[kind])

        return handler

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/pods", pods)
    app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", container_logs)
    app.router.add_get("/stats/summary", stats_summary)
    for method in ("GET", "POST"):
        app.router.add_route(method, "/exec/{namespace}/{pod}/{container}", exec_session)
    app.router.add_get(resource_metrics.PATH, metrics_resource)
    app.router.add_get(resource_metrics.node_path("{node}"), metrics_resource)
    for kind in _NOT_SUPPORTED:
        for method in ("GET", "POST"):
            app.router.add_route(method, f"/{kind}/{{namespace}}/{{pod}}/{{rest:.*}}", unsupported(kind))
            app.router.add_route(method, f"/{kind}/{{namespace}}/{{pod}}", unsupported(kind))
    return app


def _guarded_by(gate: Gate) -> Any:
    @web.middleware
    async def guard(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        _log.debug("request received", method=request.method, path=request.path)
        transport = request.transport
        peercert = transport.get_extra_info("peercert") if transport is not None else None
        refusal = await gate.check(
            Request(
                peercert=peercert or None,
                authorization=request.headers.get("Authorization", ""),
                method=request.method,
                path=request.path,
            )
        )
        if refusal is not None:
            raise _exception(refusal.status, refusal.message)
        _log.debug("request let in", method=request.method, path=request.path)
        return await handler(request)

    return guard


def metrics_app(render: Callable[[], str]) -> web.Application:
    app = web.Application()

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(text=render(), content_type="text/plain", charset="utf-8")

    app.router.add_get("/metrics", metrics)
    return app
