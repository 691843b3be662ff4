"""The Kubernetes client: raw JSON requests for any group-version-resource.

``KubeClient`` wraps a kubernetes_asyncio ``ApiClient`` for what it does
well (kubeconfig and in-cluster loading, TLS, bearer tokens and their
refresh) and bypasses its models: every request goes through
``ApiClient.call_api(..., _preload_content=False)`` and the body is decoded
JSON (``bodies.Body``). Errors are ``core.errors`` classes (see
``kube.errors``); library exceptions never leave this module.

Typical use::

    client = await KubeClient.connect(kubeconfig="/path/kubeconfig")  # or None: in-cluster
    pod = await client.get(PODS, "p1", namespace="default")
    await client.patch(PODS, "p1", {"metadata": {"annotations": {"a": "b"}}}, namespace="default")
    await client.patch_status(PODS, "p1", {"status": {"phase": "Running"}}, namespace="default")
    await client.close()
"""

from __future__ import annotations

import asyncio
import builtins
import enum
import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from yarl import URL

from wlmvk.core.errors import InvalidInput, Unavailable
from wlmvk.kube.bodies import Body, Resource
from wlmvk.kube.errors import from_status


class PatchKind(enum.Enum):
    """The patch formats the API server accepts, by content type."""

    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    JSON = "application/json-patch+json"


Query = Mapping[str, str | int | bool | None]

_AUTH = ["BearerToken"]
_TIMEOUT = 30.0
# A watch event carries a whole object; etcd allows 1.5 MiB (kubernetes_asyncio's choice too).
_READ_BUFSIZE = 2**21


def _query(params: Query | None) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in (params or {}).items():
        if value is None:
            continue
        out.append((key, ("true" if value else "false") if isinstance(value, bool) else str(value)))
    return out


def _settle_environment(rest: Any, host: str) -> None:
    """Read the proxy environment once, not on every request.

    kubernetes_asyncio's session trusts the environment, so aiohttp looks up
    ``~/.netrc`` and the proxy variables in a worker thread for EVERY request:
    two thread hops per call, a large share of a busy kubelet's CPU. The
    environment does not change under a running process; the proxy for the API
    server (honouring NO_PROXY) is resolved here and the session stops looking.
    """
    if not rest.proxy:
        try:
            proxy, auth = get_env_proxy_for_url(URL(host))
        except LookupError:
            pass
        else:
            rest.proxy = str(proxy)
            if auth is not None:
                rest.proxy_headers = {**(rest.proxy_headers or {}), "Proxy-Authorization": auth.encode()}
    trusting: aiohttp.ClientSession = rest.pool_manager
    rest.pool_manager = aiohttp.ClientSession(
        connector=trusting.connector, trust_env=False, read_bufsize=_READ_BUFSIZE
    )
    trusting.detach()


class KubeClient:
    """Raw-JSON access to one API server. Construct with ``connect``; ``close`` when done."""

    def __init__(self, api: Any, *, timeout: float = _TIMEOUT) -> None:
        self._api = api
        self._timeout = timeout

    @classmethod
    async def connect(
        cls, kubeconfig: str | None = None, *, context: str | None = None, timeout: float = _TIMEOUT
    ) -> KubeClient:
        """From a kubeconfig file; with none, in-cluster when running in a pod, else ~/.kube/config."""
        configuration = k8s.Configuration()
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            await k8s_config.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        api = k8s.ApiClient(configuration=configuration)
        _settle_environment(api.rest_client, str(configuration.host))
        return cls(api, timeout=timeout)

    @classmethod
    async def at(cls, url: str, *, timeout: float = _TIMEOUT) -> KubeClient:
        """Plain access to ``url``, no credentials (the in-memory API server, and its own controllers)."""
        configuration = k8s.Configuration(host=url)
        api = k8s.ApiClient(configuration=configuration)
        _settle_environment(api.rest_client, url)
        return cls(api, timeout=timeout)

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    async def close(self) -> None:
        await self._api.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- raw requests -------------------------------------------------------------------------------------

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: aiohttp.ClientTimeout | float | None = None,
    ) -> aiohttp.ClientResponse:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        try:
            response: aiohttp.ClientResponse = await self._api.call_api(
                path,
                method,
                query_params=_query(query),
                header_params=headers,
                body=body,
                auth_settings=_AUTH,
                _preload_content=False,
                _request_timeout=timeout if timeout is not None else self._timeout,
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise Unavailable(f"{method} {path}: {exc or type(exc).__name__}") from exc
        return response

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Body:
        """One request (within ``timeout`` s, else the client's); the decoded JSON reply.

        Raises ``core.errors`` classes on failure.
        """
        response = await self._send(
            method, path, query=query, body=body, content_type=content_type, timeout=timeout
        )
        try:
            payload = await response.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise Unavailable(f"{method} {path}: {exc or type(exc).__name__}") from exc
        finally:
            response.release()
        if not 200 <= response.status < 300:
            raise from_status(response.status, payload, what=f"{method} {path}")
        if not payload:
            return {}
        try:
            decoded: Any = json.loads(payload)
        except ValueError as exc:
            raise Unavailable(f"{method} {path}: reply is not JSON") from exc
        return decoded if isinstance(decoded, dict) else {"items": decoded}

    async def stream_lines(
        self, path: str, *, query: Query | None, read_timeout: float
    ) -> AsyncIterator[Body]:
        """A long GET answering NDJSON (a watch): each decoded line, until the server ends it."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._timeout, sock_read=read_timeout)
        response = await self._send("GET", path, query=query, timeout=timeout)
        try:
            if not 200 <= response.status < 300:
                payload = await response.read()
                raise from_status(response.status, payload, what=f"watch {path}")
            async for raw in response.content:
                line = raw.strip()
                if not line:
                    continue
                try:
                    decoded = json.loads(line)
                except ValueError as exc:
                    raise Unavailable(f"watch {path}: malformed line") from exc
                if isinstance(decoded, dict):
                    yield decoded
        except (aiohttp.ClientError, OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            raise Unavailable(f"watch {path}: {exc or type(exc).__name__}") from exc
        finally:
            response.release()
            response.close()

    # -- verbs --------------------------------------------------------------------------------------------

    async def version(self) -> Body:
        """The API server's ``/version`` answer (gitVersion, major, minor...)."""
        return await self.request("GET", "/version")

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> Body:
        return await self.request("GET", resource.path(namespace=namespace, name=name))

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        limit: int | None = None,
    ) -> Body:
        """The List object (``items`` and ``metadata.resourceVersion``)."""
        query = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "resourceVersion": resource_version,
            "limit": limit,
        }
        return await self.request("GET", resource.path(namespace=namespace), query=query)

    async def create(self, resource: Resource, body: Body, *, namespace: str | None = None) -> Body:
        return await self.request("POST", resource.path(namespace=namespace), body=body)

    async def replace(
        self,
        resource: Resource,
        name: str,
        body: Body,
        *,
        namespace: str | None = None,
        subresource: str = "",
    ) -> Body:
        path = resource.path(namespace=namespace, name=name, subresource=subresource)
        return await self.request("PUT", path, body=body)

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Body | builtins.list[Body],
        *,
        namespace: str | None = None,
        kind: PatchKind = PatchKind.MERGE,
        subresource: str = "",
    ) -> Body:
        """Patch an object (or its subresource) with a merge, strategic-merge or JSON patch."""
        if kind is PatchKind.JSON and not isinstance(patch, list):
            raise InvalidInput("a JSON patch is a list of operations")
        if not patch:
            return await self.get(resource, name, namespace=namespace)
        path = resource.path(namespace=namespace, name=name, subresource=subresource)
        return await self.request("PATCH", path, body=patch, content_type=kind.value)

    async def patch_status(
        self,
        resource: Resource,
        name: str,
        patch: Body | builtins.list[Body],
        *,
        namespace: str | None = None,
        kind: PatchKind = PatchKind.MERGE,
    ) -> Body:
        return await self.patch(resource, name, patch, namespace=namespace, kind=kind, subresource="status")

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        propagation: str | None = None,
    ) -> Body:
        """Delete (optionally only the object with this uid); the reply body (object or Status)."""
        options: Body = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if uid:
            options["preconditions"] = {"uid": uid}
        if propagation:
            options["propagationPolicy"] = propagation
        return await self.request("DELETE", resource.path(namespace=namespace, name=name), body=options)
