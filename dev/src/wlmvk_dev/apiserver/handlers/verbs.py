"""The verbs on a resource: get, list, create, update, patch, delete and the subresources.

:func:`serve_resource` answers every request under ``/api/v1`` and ``/apis/{group}/{version}``
after discovery's routes: it finds the target, refuses a verb the kind does not serve (405),
and hands the request to the store; ``pods/log``, ``pods/exec`` go to the handlers of
:class:`~wlmvk_dev.apiserver.handlers.requests.Settings` (501 without one), watches to ``watches.py``.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from wlmvk_dev.apiserver.handlers import scale, tables
from wlmvk_dev.apiserver.handlers.requests import (
    SETTINGS_KEY,
    Target,
    delete_options,
    field_selector_of,
    is_dry_run,
    json_response,
    name_matches,
    read_body,
    store_of,
    strict_fields,
    target_of,
    truthy,
    verb_of,
    wants_table,
)
from wlmvk_dev.apiserver.handlers.watches import serve_watch
from wlmvk_dev.apiserver.objects.errors import ApiError, Cause, bad_request, invalid, method_not_allowed
from wlmvk_dev.apiserver.objects.resources import NAMESPACES, PODS, REVIEWS, TOKEN_REVIEWS
from wlmvk_dev.apiserver.rules.patching import PATCH_TYPES


async def serve_resource(request: web.Request, group: str, version: str, rest: str) -> web.StreamResponse:
    store = store_of(request)
    t = target_of(store, group, version, rest)
    method = request.method
    q = request.query
    verb = verb_of(method, t, truthy(q.get("watch")))
    if t.subresource is None and verb not in t.info.verbs:
        raise method_not_allowed()
    if t.name is None:
        if method == "GET":
            if truthy(q.get("watch")):
                return await serve_watch(request, t)
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
        if t.subresource is None and wants_table(request):
            return json_response(
                tables.table(t.info, [obj], obj["metadata"]["resourceVersion"], now=store.now())
            )
        return json_response(obj)
    if method == "PUT":
        body = await read_body(request)
        strict_fields(request, t.info, body)
        name_matches(body, t.name)
        if t.info.gvr == NAMESPACES and t.subresource == "finalize":
            return json_response(store.get(NAMESPACES, t.name))
        return json_response(
            store.update(
                t.info.gvr,
                body,
                t.namespace,
                subresource=t.subresource,
                client=True,
                dry_run=is_dry_run(request),
            )
        )
    if method == "PATCH":
        return await _patch(request, t)
    if method == "DELETE":
        return await _delete(request, t)
    raise method_not_allowed()


async def _scale(request: web.Request, t: Target) -> web.Response:
    assert t.name is not None
    store = store_of(request)
    if request.method == "GET":
        return json_response(scale.get(store, t.info.gvr, t.name, t.namespace))
    if request.method == "PUT":
        body = await read_body(request)
        return json_response(
            scale.write(store, t.info.gvr, t.name, t.namespace, body, dry_run=is_dry_run(request))
        )
    if request.method == "PATCH":
        patch_type = PATCH_TYPES.get(request.content_type)
        if patch_type is None:
            raise ApiError(415, "UnsupportedMediaType", f"unsupported patch type {request.content_type!r}")
        body = await read_body(request)
        return json_response(
            scale.patch(store, t.info.gvr, t.name, t.namespace, body, patch_type, dry_run=is_dry_run(request))
        )
    raise method_not_allowed()


def _list(request: web.Request, t: Target) -> web.Response:
    store = store_of(request)
    q = request.query
    result = store.list(
        t.info.gvr,
        t.namespace,
        label_selector=q.get("labelSelector"),
        field_selector=field_selector_of(request, t),
        copy=False,
    )
    if wants_table(request):
        return json_response(tables.table(t.info, result.items, result.resource_version, now=store.now()))
    body = {
        "kind": t.info.list_kind,
        "apiVersion": t.info.api_version,
        "metadata": {"resourceVersion": result.resource_version},
        "items": result.items,
    }
    return json_response(body)


def _review(gvr: object) -> dict[str, Any]:
    """The answer to a review: every access is allowed; no token is known (none is issued)."""
    if gvr == TOKEN_REVIEWS:
        return {"authenticated": False, "error": "the wlmvk in-memory API server issues no tokens"}
    return {"allowed": True, "reason": "the wlmvk in-memory API server does not enforce RBAC"}


async def _create(request: web.Request, t: Target) -> web.Response:
    store = store_of(request)
    body = await read_body(request)
    if not isinstance(body, dict):
        raise bad_request("the body must be a JSON object")
    if t.info.gvr in REVIEWS:
        return json_response({**body, "status": _review(t.info.gvr)}, status=201)
    strict_fields(request, t.info, body)
    return json_response(store.create(t.info.gvr, body, t.namespace, dry_run=is_dry_run(request)), status=201)


async def _patch(request: web.Request, t: Target) -> web.Response:
    assert t.name is not None
    store = store_of(request)
    patch_type = PATCH_TYPES.get(request.content_type)
    if patch_type is None or patch_type == "apply-cbor":
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{', '.join(k for k, v in PATCH_TYPES.items() if v != 'apply-cbor')}",
        )
    body = await read_body(request)
    if patch_type == "apply":
        strict_fields(request, t.info, body)
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
        dry_run=is_dry_run(request),
    )
    return json_response(obj)


async def _delete(request: web.Request, t: Target) -> web.Response:
    assert t.name is not None
    options = await delete_options(request)
    obj = store_of(request).delete(
        t.info.gvr,
        t.name,
        t.namespace,
        grace_period_seconds=options.get("gracePeriodSeconds"),
        propagation_policy=options.get("propagationPolicy"),
        preconditions=options.get("preconditions"),
        dry_run=is_dry_run(request) or options.get("dryRun") == ["All"],
    )
    if t.info.gvr in (PODS, NAMESPACES) or "deletionTimestamp" in obj["metadata"]:
        return json_response(obj)  # pods (and pending deletions) answer with the object
    meta = obj["metadata"]
    details = {"name": meta["name"], "group": t.info.group, "kind": t.info.plural, "uid": meta.get("uid")}
    if not t.info.group:
        del details["group"]
    return json_response(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
    )


async def _delete_collection(request: web.Request, t: Target) -> web.Response:
    options = await delete_options(request)
    q = request.query
    items = store_of(request).delete_collection(
        t.info.gvr,
        t.namespace,
        label_selector=q.get("labelSelector"),
        field_selector=field_selector_of(request, t),
        grace_period_seconds=options.get("gracePeriodSeconds"),
        propagation_policy=options.get("propagationPolicy"),
    )
    body = {
        "kind": t.info.list_kind,
        "apiVersion": t.info.api_version,
        "metadata": {"resourceVersion": str(store_of(request).resource_version)},
        "items": items,
    }
    return json_response(body)


async def _binding(request: web.Request, t: Target) -> web.Response:
    assert t.name is not None
    body = await read_body(request)
    target = (body or {}).get("target") or {}
    if not target.get("name"):
        raise ApiError(422, "Invalid", f'Binding "{t.name}" is invalid: target.name: Required value')
    store = store_of(request)
    store.bind(t.namespace or "default", t.name, target["name"])
    return json_response(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201
    )


async def _eviction(request: web.Request, t: Target) -> web.Response:
    assert t.name is not None
    body = await read_body(request)
    options = (body or {}).get("deleteOptions") or {}
    store_of(request).delete(
        PODS, t.name, t.namespace, grace_period_seconds=options.get("gracePeriodSeconds")
    )
    return json_response(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201
    )


async def _pod_log(request: web.Request, t: Target) -> web.StreamResponse:
    assert t.name is not None
    store = store_of(request)
    pod = store.get(PODS, t.name, t.namespace)
    handler = request.app[SETTINGS_KEY].log_handler
    if handler is None:
        raise ApiError(501, "NotImplemented", "pods/log is not served: no log proxy is configured")
    return await handler(request, pod, store)


async def _pod_exec(request: web.Request, t: Target) -> web.StreamResponse:
    assert t.name is not None
    if request.method not in ("GET", "POST"):
        raise method_not_allowed()
    store = store_of(request)
    pod = store.get(PODS, t.name, t.namespace)
    handler = request.app[SETTINGS_KEY].exec_handler
    if handler is None:
        raise ApiError(501, "NotImplemented", "pods/exec is not served: no exec proxy is configured")
    return await handler(request, pod, store)
