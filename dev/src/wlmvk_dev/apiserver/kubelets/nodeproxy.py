"""``nodes/{name}/proxy/{path}``: a request passed on to the node's kubelet, as kube-apiserver does.

kube-apiserver serves the ``proxy`` subresource of a node (``kubectl get --raw
/api/v1/nodes/<node>/proxy/stats/summary``) by sending the request to the node's kubelet
endpoint over TLS with its ``--kubelet-client-certificate``: the caller needs ``nodes/proxy``
(RBAC; the in-memory server lets everyone in), and the kubelet then authorizes the API
server's identity for what the path asks (``/stats`` is ``nodes/stats``, ``/metrics`` is
``nodes/metrics``). The kubelet's answer comes back as it is: status, content type and body,
an error included. A kubelet that cannot be reached is kube-apiserver's 503
``error trying to reach service``. The kubelet's own certificate is not verified (as for logs
and exec).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import aiohttp
import structlog
from aiohttp import web

from wlmvk_dev.apiserver.kubelets.logproxy import kubelet_address, kubelet_client_context
from wlmvk_dev.apiserver.objects.errors import ApiError

_log = structlog.get_logger(__name__)

NodeProxyHandler = Callable[[web.Request, dict[str, Any], str], Awaitable[web.StreamResponse]]
"""``handler(request, node, path)``: path is what follows ``proxy`` (``/stats/summary``)."""

_PASSED_ON = ("Content-Type", "Accept", "Accept-Encoding")
_CHUNK = 65536


def make_handler(
    *, client_cert: str | None = None, client_key: str | None = None, connect_timeout: float = 10.0
) -> NodeProxyHandler:
    """The proxy, presenting this client certificate to kubelets."""
    context = kubelet_client_context(client_cert, client_key)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout, connect=connect_timeout)

    async def handler(request: web.Request, node: dict[str, Any], path: str) -> web.StreamResponse:
        host, port = kubelet_address(node)
        url = f"https://{host}:{port}{quote(path or '/', safe='/:@!$&()*+,;=-._~')}"
        headers = {name: request.headers[name] for name in _PASSED_ON if name in request.headers}
        body = await request.read() if request.can_read_body else None
        response: web.StreamResponse | None = None
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as session,
                session.request(
                    request.method,
                    url,
                    params=list(request.query.items()),
                    data=body,
                    headers=headers,
                    ssl=context,
                    allow_redirects=False,
                ) as upstream,
            ):
                response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                for name in ("Content-Type", "Content-Encoding"):
                    if name in upstream.headers:
                        response.headers[name] = upstream.headers[name]
                await response.prepare(request)
                async for chunk in upstream.content.iter_chunked(_CHUNK):
                    await response.write(chunk)
                await response.write_eof()
                return response
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            if response is not None and response.prepared:
                _log.debug("node proxy stream ended", url=url, error=str(exc))
                return response
            _log.info("kubelet unreachable", url=url, error=str(exc))
            raise ApiError(503, "ServiceUnavailable", f"error trying to reach service: {exc}") from exc

    return handler
