"""Helpers of the fidelity tests: raw requests to either control plane, answered as (code, body).

The tests compare what a client observes, so they talk HTTP through kubernetes_asyncio's
``ApiClient`` (the ``kube_api`` fixture: TLS and credentials on the real plane, plain HTTP on
the in-memory one) and look at the status code and the decoded body, Status errors included.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import yaml

from tests.fixtures.apiserver import failure_status
from wlmvk_dev.apiserver.objects.resources import CRDS

ROOT = Path(__file__).resolve().parents[3]
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
PODS = "/api/v1/namespaces/default/pods"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
SLURMJOBS = "/apis/wlm.sylabs.io/v1alpha1/namespaces/default/slurmjobs"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


async def call(
    api: Any,
    method: str,
    path: str,
    *,
    query: dict[str, str] | None = None,
    body: Any = None,
    content_type: str = "application/json",
    accept: str = "application/json",
) -> tuple[int, Any]:
    """One request; its HTTP status and decoded JSON body (the raw text when not JSON)."""
    response = await api.call_api(
        path,
        method,
        query_params=list((query or {}).items()),
        header_params={"Accept": accept, "Content-Type": content_type},
        body=body,
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=60,
    )
    data = await response.read()
    try:
        return response.status, json.loads(data)
    except ValueError:
        return response.status, data.decode()


async def watch(
    api: Any, path: str, query: dict[str, str], *, count: int | None = None
) -> list[dict[str, Any]]:
    """The events of a watch (``watch=true`` added), until ``count`` of them or the server ends it."""
    async with watching(api, path, query) as events:
        return await take(events, count)


@contextlib.asynccontextmanager
async def watching(
    api: Any, path: str, query: dict[str, str]
) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
    """A watch once the server has answered its request (it is established): its events as they come."""
    response = await api.call_api(
        path,
        "GET",
        query_params=[("watch", "true"), *query.items()],
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=60,
    )

    async def events() -> AsyncIterator[dict[str, Any]]:
        async for line in response.content:
            if line.strip():
                yield json.loads(line)

    try:
        yield events()
    finally:
        response.release()


async def take(events: AsyncIterator[dict[str, Any]], count: int | None) -> list[dict[str, Any]]:
    """``count`` events (all of them when None), fewer if the watch ends first."""
    taken: list[dict[str, Any]] = []
    async for event in events:
        taken.append(event)
        if count is not None and len(taken) >= count:
            break
    return taken


status = failure_status
"""A Failure Status as kube-apiserver writes it."""


def install_crds(apiserver: Any) -> None:
    """The project's CRDs on the in-memory plane (the real plane's session installs them)."""
    if apiserver.plane != "memory":
        return
    for name in ("slurmjobs", "wlmjobs", "slurmtenants"):
        apiserver.store.create(
            CRDS, yaml.safe_load((ROOT / "manifests" / "crds" / f"{name}.yaml").read_text())
        )


def slurmjob(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": {"name": name},
        "spec": spec or {"batch": "#!/bin/sh\nhostname\n"},
    }


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
