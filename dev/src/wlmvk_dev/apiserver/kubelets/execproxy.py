"""``pods/{name}/exec``: proxied to the node's kubelet, upgrade and all, as kube-apiserver does.

kube-apiserver v1.36 passes kubectl's WebSocket on to a kubelet whose Node
declares ``ExtendWebSocketsToKubelet``, and a SPDY request as it came
(``UpgradeAwareHandler``); this proxy does both the same way: it sends the
request's head to the kubelet's ``/exec/{namespace}/{pod}/{container}`` over
TLS with the API server's client certificate, the query renamed as
kube-apiserver renames it (``command``, ``input``, ``output``, ``error``,
``tty`` = 1), and the client's upgrade headers (``Upgrade``,
``Sec-WebSocket-*``, ``X-Stream-Protocol-Version``). A ``101`` from the
kubelet is relayed to the client with its headers, and from then on the
bytes flow both ways untouched until either side closes: the WebSocket's
subprotocol, key and frames are the client's and the kubelet's own. Any
other answer is passed on as it came (its code, type and body), so kubectl
reads what the kubelet said.

The container defaults as for logs (``logproxy.choose_container``); a pod
without a node is kube-apiserver's 400.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any, cast
from urllib.parse import quote, urlencode

import structlog
from aiohttp import web

from wlmvk_dev.apiserver.kubelets import ExecHandler
from wlmvk_dev.apiserver.kubelets.logproxy import choose_container, kubelet_address, kubelet_client_context
from wlmvk_dev.apiserver.objects.errors import ApiError, bad_request
from wlmvk_dev.apiserver.objects.resources import NODES
from wlmvk_dev.apiserver.storage.store import Store

_log = structlog.get_logger(__name__)

_FORWARDED = (
    "Connection",
    "Upgrade",
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Version",
    "Sec-WebSocket-Protocol",
    "Sec-WebSocket-Extensions",
    "X-Stream-Protocol-Version",
)
_FLAGS = {"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"}
_MAX_HEAD = 64 * 1024
_MAX_ERROR = 4096
_CHUNK = 65536


def make_handler(
    *, client_cert: str | None = None, client_key: str | None = None, connect_timeout: float = 10.0
) -> ExecHandler:
    """A ``pods/exec`` handler presenting this client certificate (kubelet certificates unverified)."""
    context = kubelet_client_context(client_cert, client_key)

    async def handler(request: web.Request, pod: dict[str, Any], store: Store) -> web.StreamResponse:
        container = choose_container(pod, request.query.get("container"))
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            raise bad_request(f"pod {pod['metadata']['name']} does not have a host assigned")
        host, port = kubelet_address(store.get(NODES, node_name))
        meta = pod["metadata"]
        path = "/exec/" + "/".join(
            quote(str(p), safe="") for p in (meta["namespace"], meta["name"], container)
        )
        target = f"{path}?{kubelet_query(request)}"
        return await _proxy(request, host, port, target, context, connect_timeout)

    return handler


def kubelet_query(request: web.Request) -> str:
    """The exec query as kube-apiserver passes it to a kubelet."""
    pairs = [("command", word) for word in request.query.getall("command", [])]
    for name, kubelet_name in _FLAGS.items():
        if request.query.get(name, "").lower() in ("1", "true"):
            pairs.append((kubelet_name, "1"))
    return urlencode(pairs)


def _head(request: web.Request, host: str, port: int, target: str) -> bytes:
    lines = [f"{request.method} {target} HTTP/1.1", f"Host: {host}:{port}"]
    for name in _FORWARDED:
        lines += [f"{name}: {value}" for value in request.headers.getall(name, [])]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _proxy(
    request: web.Request, host: str, port: int, target: str, context: ssl.SSLContext, timeout: float
) -> web.StreamResponse:
    where = f"https://{host}:{port}{target.split('?', 1)[0]}"
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=context), timeout)
    except (OSError, TimeoutError) as exc:
        _log.info("kubelet unreachable", url=where, error=str(exc))
        raise ApiError(500, "InternalError", f'error dialing backend: "{where}": {exc}') from exc
    try:
        writer.write(_head(request, host.strip("[]"), port, target))
        status, headers, rest = await _response_head(reader)
        if status != 101:
            # Passed on as it came, as kube-apiserver's UpgradeAwareHandler does.
            body = (rest + await _read_some(reader, _MAX_ERROR - len(rest)))[:_MAX_ERROR]
            kind = next((v for k, v in headers if k.lower() == "content-type"), "text/plain")
            return web.Response(status=status, body=body, headers={"Content-Type": kind})
        return await _splice(request, headers, rest, reader, writer)
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()


async def _response_head(reader: asyncio.StreamReader) -> tuple[int, list[tuple[str, str]], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await reader.read(_CHUNK)
        if not chunk or len(data) > _MAX_HEAD:
            raise ApiError(500, "InternalError", "the kubelet closed the connection before answering")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    first, *lines = head.decode("latin-1").split("\r\n")
    parts = first.split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 502
    headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines) if k.strip()]
    if status != 101:
        length = next((v for k, v in headers if k.lower() == "content-length"), None)
        if length is not None and length.isdigit():
            rest = rest[: int(length)]
    return status, headers, rest


async def _read_some(reader: asyncio.StreamReader, limit: int) -> bytes:
    if limit <= 0:
        return b""
    with contextlib.suppress(OSError, TimeoutError, ssl.SSLError):
        return await asyncio.wait_for(reader.read(limit), 5.0)
    return b""


class _Upstream:
    """aiohttp's payload parser interface: the client's bytes after the head go to the kubelet."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self.closed = asyncio.Event()

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        if data and not self._writer.is_closing():
            self._writer.write(data)
        return False, b""

    def feed_eof(self) -> None:
        self.closed.set()


async def _splice(
    request: web.Request,
    headers: list[tuple[str, str]],
    rest: bytes,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> web.StreamResponse:
    upstream = _Upstream(writer)
    request.protocol.set_parser(cast(Any, upstream))
    request.protocol.keep_alive(False)
    response = web.StreamResponse(status=101)
    for name, value in headers:
        if name.lower() not in ("content-length", "transfer-encoding", "date", "server"):
            response.headers.add(name, value)
    response.force_close()
    await response.prepare(request)

    async def downstream() -> None:
        if rest:
            await response.write(rest)
        while chunk := await reader.read(_CHUNK):
            await response.write(chunk)

    relay = asyncio.create_task(downstream())
    client_gone = asyncio.create_task(upstream.closed.wait())
    try:
        await asyncio.wait({relay, client_gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (relay, client_gone):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, OSError, ConnectionError, ssl.SSLError):
            await relay
        transport = request.transport
        if transport is not None:
            transport.close()
    return response
