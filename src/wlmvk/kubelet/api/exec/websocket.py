"""kubectl exec over WebSocket (``v5``/``v4.channel.k8s.io``): the upgrade and an ``ExecChannel``.

What kubectl v1.30+ speaks, and what kube-apiserver passes on to a kubelet
whose Node declares ``ExtendWebSocketsToKubelet`` (see ``spdyframes`` for the
evidence); the in-memory API server passes it on as well. The subprotocol is
negotiated before the upgrade (``wschannels.negotiate``: 400 when none is
served); the client's messages become exec events (``wschannels.Inbound``);
the session ends with the final status on the error channel and a normal
closure, which client-go reads as the end of every stream.

A handler's ``core.errors`` become a Failure status with their message, as
over SPDY; a client that goes away is ``None`` from ``receive()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import aiohttp
import structlog
from aiohttp import web

from wlmvk.core.errors import WlmvkError
from wlmvk.kubelet.api.exec import wschannels
from wlmvk.kubelet.api.exec.requests import ExecEvent, ExecHandler, ExecRequest, exit_status

_log = structlog.get_logger(__name__)

HEARTBEAT = 30.0
"""Seconds between pings, so that a client gone without a close is noticed (kubelet: 30 s)."""
MAX_MESSAGE = 4 * 1024 * 1024
INBOUND = 64
"""Client messages read ahead of the command; beyond this the socket is not read (backpressure)."""


def is_websocket_upgrade(request: web.BaseRequest) -> bool:
    upgrade = ",".join(request.headers.getall("Upgrade", ())).lower()
    return "websocket" in upgrade


async def serve(request: web.Request, exec_request: ExecRequest, handler: ExecHandler) -> web.StreamResponse:
    """Upgrade the request to a WebSocket, run ``handler`` on it, end the session."""
    protocol = wschannels.negotiate(request.headers.getall(wschannels.PROTOCOL_HEADER, ()))
    if isinstance(protocol, wschannels.Refusal):
        return web.Response(status=protocol.status, text=protocol.message + "\n")
    socket = web.WebSocketResponse(
        protocols=(protocol,), heartbeat=HEARTBEAT, max_msg_size=MAX_MESSAGE, autoping=True
    )
    await socket.prepare(request)
    channel = WebSocketExecChannel(socket, protocol)
    log = _log.bind(pod=f"{exec_request.namespace}/{exec_request.pod}", protocol=protocol)
    log.info("exec session over WebSocket")
    reader = asyncio.create_task(channel.read(log))
    try:
        try:
            await handler(exec_request, channel)
        except WlmvkError as exc:
            log.info("exec failed", error=exc.message)
            await channel.finish(exit_status(None, exc.message))
        if not channel.finished:
            await channel.finish(exit_status(None, "the exec session ended without an exit status"))
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        if not socket.closed:
            await socket.close()
    return socket


class WebSocketExecChannel:
    """The ``ExecChannel`` of one WebSocket session."""

    def __init__(self, socket: web.WebSocketResponse, protocol: str) -> None:
        self._socket = socket
        self._inbound = wschannels.Inbound(protocol)
        self._events: asyncio.Queue[ExecEvent | None] = asyncio.Queue(INBOUND)
        self.finished = False

    async def read(self, log: Any) -> None:
        """The client's messages into the event queue; None once the client is gone."""
        async for message in self._socket:
            if message.type == aiohttp.WSMsgType.BINARY:
                for event in self._inbound.feed(message.data):
                    await self._events.put(event)
            elif message.type == aiohttp.WSMsgType.ERROR:
                log.info("exec client connection failed", error=str(self._socket.exception()))
                break
        await self._events.put(None)

    async def receive(self) -> ExecEvent | None:
        event = await self._events.get()
        if event is None:
            self._events.put_nowait(None)  # every later call hears it too
        return event

    async def send_stdout(self, data: bytes) -> None:
        await self._send(wschannels.STDOUT, data)

    async def send_stderr(self, data: bytes) -> None:
        await self._send(wschannels.STDERR, data)

    async def finish(self, status: dict[str, Any]) -> None:
        if self.finished:
            return
        self.finished = True
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._socket.send_bytes(wschannels.frame(wschannels.ERROR, json.dumps(status).encode()))
            await self._socket.close()

    async def _send(self, channel: int, data: bytes) -> None:
        if self.finished or self._socket.closed:
            return
        try:
            await self._socket.send_bytes(wschannels.frame(channel, data))
        except (ConnectionError, RuntimeError) as exc:
            _log.debug("exec client gone while writing", error=str(exc))
