"""``pods/{name}/log``: proxied to the node's kubelet, as kube-apiserver does.

The container defaults to the pod's only container; with several and none
named, the answer is kube-apiserver's 400. The kubelet is reached at the
node's InternalIP (else ExternalIP, else Hostname) and
``status.daemonEndpoints.kubeletEndpoint.Port``, over HTTPS, at
``/containerLogs/{namespace}/{pod}/{container}`` with follow, tailLines,
limitBytes, sinceSeconds, sinceTime, timestamps and previous passed on. The
kubelet's certificate is not verified by default (kube-apiserver's
``--kubelet-certificate-authority`` is optional too); :func:`make_handler`
takes a CA file and a client certificate. The response streams through
chunk by chunk, so ``kubectl logs -f`` follows. A kubelet's error answer
400 or 500 becomes a Status with the kubelet's text as its message (a
BadRequest, an InternalError), as kube-apiserver's response checker makes it,
so kubectl prints it; other answers pass through as they came.

The host nodes of ``hostkubelet`` are reached the same way, at the port they
advertise.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import structlog
from aiohttp import web

from wlmvk.core.errors import InvalidInput
from wlmvk_dev.apiserver.kubelets import LogHandler
from wlmvk_dev.apiserver.objects.errors import ApiError, bad_request
from wlmvk_dev.apiserver.objects.resources import NODES, Obj
from wlmvk_dev.apiserver.storage.store import Store
from wlmvk_dev.hostnode import logs as hostlogs

_log = structlog.get_logger(__name__)

_ADDRESS_ORDER = ("InternalIP", "ExternalIP", "Hostname")
_MAX_ERROR = 4096


def kubelet_client_context(
    client_cert: str | None, client_key: str | None, *, ca_file: str | None = None
) -> ssl.SSLContext:
    """TLS to a kubelet as kube-apiserver's client: this client certificate, and the kubelet's
    own certificate verified against ``ca_file``, or not at all without one."""
    context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
    if not ca_file:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if client_cert:
        context.load_cert_chain(client_cert, client_key)
    return context


def make_handler(
    *,
    ca_file: str | None = None,
    client_cert: str | None = None,
    client_key: str | None = None,
    connect_timeout: float = 10.0,
) -> LogHandler:
    """A ``pods/log`` handler; with ``ca_file`` the kubelet's certificate is verified against it."""
    context = kubelet_client_context(client_cert, client_key, ca_file=ca_file)

    async def handler(request: web.Request, pod: dict[str, Any], store: Store) -> web.StreamResponse:
        try:
            options = hostlogs.LogOptions.from_query(request.query)
        except InvalidInput as exc:
            raise bad_request(exc.message) from exc
        container = choose_container(pod, options.container)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            raise bad_request(f"pod {pod['metadata']['name']} does not have a host assigned")
        url = kubelet_url(store.get(NODES, node_name), pod, container, options)
        return await _proxy(request, url, context, connect_timeout)

    return handler


handle: LogHandler = make_handler()
"""The default handler: kubelet certificates are not verified (as kube-apiserver by default)."""


def choose_container(pod: Mapping[str, Any], wanted: str | None) -> str:
    """The container whose log is asked for, with kube-apiserver's 400 messages."""
    spec = pod.get("spec") or {}
    name = pod["metadata"]["name"]
    containers = [str(c["name"]) for c in spec.get("containers") or []]
    init = [str(c["name"]) for c in spec.get("initContainers") or []]
    ephemeral = [str(c["name"]) for c in spec.get("ephemeralContainers") or []]
    if wanted:
        if wanted not in containers + init + ephemeral:
            raise bad_request(f"container {wanted} is not valid for pod {name}")
        return wanted
    if len(containers) == 1:
        return containers[0]
    message = f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
    if init:
        message += f" or one of the init containers: [{' '.join(init)}]"
    if ephemeral:
        message += f" or one of the ephemeral containers: [{' '.join(ephemeral)}]"
    raise bad_request(message)


def kubelet_url(node: Obj, pod: Mapping[str, Any], container: str, options: hostlogs.LogOptions) -> str:
    host, port = kubelet_address(node)
    meta = pod["metadata"]
    path = "/".join(quote(str(p), safe="") for p in (meta["namespace"], meta["name"], container))
    query = urlencode(options.query())
    return f"https://{host}:{port}/containerLogs/{path}" + (f"?{query}" if query else "")


def kubelet_address(node: Obj) -> tuple[str, int]:
    """The node's kubelet (host, bracketed when IPv6, and port), as kube-apiserver picks it."""
    status = node.get("status") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    host = next((addresses[t] for t in _ADDRESS_ORDER if addresses.get(t)), None)
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    if not host or not port:
        raise ApiError(
            500,
            "InternalError",
            f"node {node['metadata']['name']} has no kubelet address and port in its status",
        )
    if ":" in str(host):
        host = f"[{host}]"
    return str(host), int(port)


async def _proxy(
    request: web.Request, url: str, context: ssl.SSLContext, connect_timeout: float
) -> web.StreamResponse:
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout, connect=connect_timeout)
    response: web.StreamResponse | None = None
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url, ssl=context) as upstream,
        ):
            if upstream.status in (400, 500):
                text = (await upstream.content.read(_MAX_ERROR)).decode("utf-8", "replace").strip()
                raise bad_request(text) if upstream.status == 400 else ApiError(500, "InternalError", text)
            response = web.StreamResponse(
                status=upstream.status,
                headers={"Content-Type": upstream.headers.get("Content-Type", "text/plain")},
            )
            response.enable_chunked_encoding()
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        if response is not None and response.prepared:
            # The stream had begun: the client went away or the kubelet broke off; nothing to answer.
            _log.debug("log stream ended", url=url, error=str(exc))
            return response
        _log.info("kubelet unreachable", url=url, error=str(exc))
        raise ApiError(500, "InternalError", f'Get "{url}": {exc}') from exc
