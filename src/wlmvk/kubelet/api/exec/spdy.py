"""kubectl exec over SPDY/3.1: the upgrade, the client's streams, an ``ExecChannel`` on them.

This is what kube-apiserver v1.36 speaks to a kubelet for ``pods/exec``
unless the Node declares ``ExtendWebSocketsToKubelet`` (see ``spdyframes`` for the
evidence): ``POST /exec/...`` with ``Upgrade: SPDY/3.1``, a version picked
from ``X-Stream-Protocol-Version`` (``remotecommand.negotiate``), ``101``,
then one stream per channel opened by the client. As the kubelet does, the
command starts only once every expected stream is open (``STREAM_CREATION_TIMEOUT``,
the kubelet's 30 s, else the connection ends) and ends with the status on
the error stream, FIN on every stream the server writes, and GOAWAY.

aiohttp does not switch protocols for ``Upgrade: SPDY/3.1`` (only
``websocket``), so the session installs its own payload parser on the
connection before answering 101, as aiohttp's ``WebSocketResponse`` does:
every byte after the request's head then reaches the SPDY decoder, and the
101 response's writer (no length, no chunking) carries the frames out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any, cast

import structlog
from aiohttp import web

from wlmvk.core.errors import WlmvkError
from wlmvk.kubelet.api.exec import remotecommand, spdyframes, spdyheaders
from wlmvk.kubelet.api.exec.requests import (
    ExecHandler,
    ExecRequest,
    Resize,
    StdinClosed,
    StdinData,
    exit_status,
)

_log = structlog.get_logger(__name__)

STREAM_CREATION_TIMEOUT = 30.0
"""How long the client has to open its streams (the kubelet's DefaultStreamCreationTimeout)."""

CLOSE_GRACE = 2.0
"""After GOAWAY, how long the client has to close the connection before it is closed under it."""

IDLE_TIMEOUT = 4 * 3600.0
"""A connection with no frame either way this long is closed and the command told its client left
(the kubelet's ``--streaming-connection-idle-timeout`` default; spdystream counts frames both ways).
The apiserver's translator pings every 5 s, so only a client gone without a word reaches it."""

MAX_DATA_FRAME = 32 * 1024
STDIN_HIGH_WATER = 1 << 20
"""Stdin bytes received and not yet read by the command beyond which reading pauses."""

Event = StdinData | StdinClosed | Resize | None


def is_spdy_upgrade(request: web.BaseRequest) -> bool:
    """Whether the request asks for SPDY/3.1 (the kubelet's test: the words appear in both headers)."""
    connection = ",".join(request.headers.getall("Connection", ())).lower()
    upgrade = ",".join(request.headers.getall("Upgrade", ())).lower()
    return "upgrade" in connection and "spdy/3.1" in upgrade


async def serve(request: web.Request, exec_request: ExecRequest, handler: ExecHandler) -> web.StreamResponse:
    """Upgrade the request to SPDY, run ``handler`` on its streams, end the session."""
    version = remotecommand.negotiate(request.headers.getall(remotecommand.VERSION_HEADER, ()))
    if isinstance(version, remotecommand.Refusal):
        refused = web.Response(status=version.status, text=version.message + "\n")
        for name, value in version.headers:
            refused.headers.add(name, value)
        return refused
    session = _Session(version, remotecommand.expected_streams(version, exec_request))
    request.protocol.set_parser(cast(Any, session))
    request.protocol.keep_alive(False)
    response = web.StreamResponse(
        status=101,
        headers={"Connection": "Upgrade", "Upgrade": "SPDY/3.1", remotecommand.VERSION_HEADER: version},
    )
    response.force_close()
    await response.prepare(request)
    session.attach(response, request)
    log = _log.bind(pod=f"{exec_request.namespace}/{exec_request.pod}", protocol=version)
    try:
        await session.run(exec_request, handler, log)
    finally:
        session.close()
    return response


@dataclass
class _Stream:
    kind: str
    stream_id: int
    closed_by_us: bool = False


@dataclass
class _Session:
    """One upgraded connection: decodes what arrives, writes frames in order, offers the channel."""

    version: str
    expected: frozenset[str]
    decoder: spdyframes.FrameDecoder = field(default_factory=spdyframes.FrameDecoder)
    encoder: spdyframes.FrameEncoder = field(default_factory=spdyframes.FrameEncoder)
    streams: dict[str, _Stream] = field(default_factory=dict)
    last_stream_id: int = 0
    events: deque[Event] = field(default_factory=deque)
    buffered: int = 0
    paused: bool = False
    gone: bool = False
    finished: bool = False

    def __post_init__(self) -> None:
        self._arrived = asyncio.Event()
        self._ready = asyncio.Event()
        self._eof = asyncio.Event()
        self._inbound: deque[spdyframes.Frame | spdyheaders.SpdyError | None] = deque()
        self._inbound_ready = asyncio.Event()
        self._write_lock = asyncio.Lock()
        self._response: web.StreamResponse | None = None
        self._request: web.Request | None = None
        self._resize = remotecommand.ResizeDecoder()
        self._last_frame = asyncio.get_running_loop().time()

    # aiohttp's payload parser interface (what ``RequestHandler.set_parser`` feeds).

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self._last_frame = asyncio.get_running_loop().time()
        try:
            self._inbound.extend(self.decoder.feed(data))
        except spdyheaders.SpdyError as exc:
            self._inbound.append(exc)
        self._inbound_ready.set()
        return False, b""

    def feed_eof(self) -> None:
        self._inbound.append(None)
        self._inbound_ready.set()

    # The session.

    def attach(self, response: web.StreamResponse, request: web.Request) -> None:
        self._response, self._request = response, request

    async def run(self, exec_request: ExecRequest, handler: ExecHandler, log: Any) -> None:
        reader = asyncio.create_task(self._read(log))
        watchdog = asyncio.create_task(self._watch_idle(log))
        try:
            try:
                await asyncio.wait_for(self._ready.wait(), STREAM_CREATION_TIMEOUT)
            except TimeoutError:
                log.warning("exec client did not open its streams", opened=sorted(self.streams))
                return
            if not remotecommand.error_stream_kept(self.version):
                await self._send(
                    spdyframes.RstStream(
                        self.streams[remotecommand.ERROR].stream_id, spdyframes.RstStatus.CANCEL
                    )
                )
            channel = SpdyExecChannel(self)
            try:
                await handler(exec_request, channel)
            except WlmvkError as exc:
                log.info("exec failed", error=exc.message)
                await channel.finish(exit_status(None, exc.message))
            except Exception as exc:
                # One session's bug ends that session with the kubelet's words for it, not silently.
                log.exception("exec handler crashed")
                await channel.finish(exit_status(None, f"error executing command in container: {exc}"))
            if not self.finished:
                await channel.finish(exit_status(None, "the exec session ended without an exit status"))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._eof.wait(), CLOSE_GRACE)
        finally:
            for task in (reader, watchdog):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _watch_idle(self, log: Any) -> None:
        loop = asyncio.get_running_loop()
        while (left := self._last_frame + IDLE_TIMEOUT - loop.time()) > 0:
            await asyncio.sleep(left)
        log.info("exec connection idle, closing it", idle_seconds=IDLE_TIMEOUT)
        await self._send(spdyframes.GoAway(self.last_stream_id, spdyframes.GoAwayStatus.OK))
        self._client_gone()
        self.close()

    def close(self) -> None:
        transport = self._request.transport if self._request is not None else None
        if transport is not None:
            transport.close()

    async def _read(self, log: Any) -> None:
        while True:
            await self._inbound_ready.wait()
            self._inbound_ready.clear()
            while self._inbound:
                item = self._inbound.popleft()
                if item is None:
                    self._client_gone()
                    self._eof.set()
                    return
                if isinstance(item, spdyheaders.SpdyError):
                    log.info("exec client broke the SPDY protocol", error=str(item))
                    with contextlib.suppress(ConnectionError, RuntimeError):
                        await self._send(
                            spdyframes.GoAway(self.last_stream_id, spdyframes.GoAwayStatus.PROTOCOL_ERROR)
                        )
                    self._client_gone()
                    self.close()
                    return
                await self._on_frame(item)

    async def _on_frame(self, frame: spdyframes.Frame) -> None:
        match frame:
            case spdyframes.SynStream(stream_id, headers):
                await self._on_open(stream_id, headers)
            case spdyframes.Data(stream_id, data, fin):
                self._on_data(stream_id, data, fin)
            case spdyframes.RstStream(stream_id, _):
                kind = self._kind_of(stream_id)
                if kind == remotecommand.STDIN:
                    self._push(StdinClosed())
                if kind is not None:
                    self.streams[kind].closed_by_us = True
            case spdyframes.Ping(ping_id) if ping_id % 2 == 1:
                await self._send(frame)
            case spdyframes.GoAway():
                self._client_gone()
            case _:
                pass  # SETTINGS, WINDOW_UPDATE (no flow control: see spdy), replies to our nothing

    async def _on_open(self, stream_id: int, headers: spdyheaders.Headers) -> None:
        if stream_id % 2 == 0 or stream_id <= self.last_stream_id:
            await self._send(spdyframes.RstStream(stream_id, spdyframes.RstStatus.PROTOCOL_ERROR))
            return
        self.last_stream_id = stream_id
        kinds = spdyheaders.header_values(headers, remotecommand.STREAM_TYPE_HEADER)
        await self._send(spdyframes.SynReply(stream_id))
        if kinds and kinds[0] in self.expected and not self._ready.is_set():
            self.streams[kinds[0]] = _Stream(kinds[0], stream_id)
            if self.expected <= self.streams.keys():
                self._ready.set()

    def _on_data(self, stream_id: int, data: bytes, fin: bool) -> None:
        kind = self._kind_of(stream_id)
        if kind == remotecommand.STDIN:
            if data:
                self._push(StdinData(data))
            if fin:
                self._push(StdinClosed())
        elif kind == remotecommand.RESIZE:
            for size in self._resize.feed(data):
                self._push(size)

    def _kind_of(self, stream_id: int) -> str | None:
        return next((kind for kind, stream in self.streams.items() if stream.stream_id == stream_id), None)

    def _push(self, event: Event) -> None:
        self.events.append(event)
        if isinstance(event, StdinData):
            self.buffered += len(event.data)
            if self.buffered > STDIN_HIGH_WATER and not self.paused and self._request is not None:
                transport = self._request.transport
                if transport is not None:
                    transport.pause_reading()
                    self.paused = True
        self._arrived.set()

    def _client_gone(self) -> None:
        if not self.gone:
            self.gone = True
            self._push(None)

    async def next_event(self) -> Event:
        while not self.events:
            if self.gone:
                return None
            self._arrived.clear()
            await self._arrived.wait()
        event = self.events.popleft()
        if isinstance(event, StdinData):
            self.buffered -= len(event.data)
            if self.paused and self.buffered <= STDIN_HIGH_WATER // 2 and self._request is not None:
                transport = self._request.transport
                if transport is not None:
                    transport.resume_reading()
                self.paused = False
        if event is None:
            self.events.append(None)  # every later receive() sees the client gone too
        return event

    async def write(self, kind: str, data: bytes, *, fin: bool = False) -> None:
        stream = self.streams.get(kind)
        if stream is None or stream.closed_by_us or self.gone:
            return
        for start in range(0, max(len(data), 1), MAX_DATA_FRAME):
            chunk = data[start : start + MAX_DATA_FRAME]
            last = start + MAX_DATA_FRAME >= len(data)
            if not chunk and not (fin and last):
                continue
            await self._send(spdyframes.Data(stream.stream_id, chunk, fin=fin and last))
        if fin:
            stream.closed_by_us = True

    async def _send(self, frame: spdyframes.Frame) -> None:
        if self._response is None:
            return
        async with self._write_lock:
            with contextlib.suppress(ConnectionError):
                await self._response.write(self.encoder.encode(frame))
                self._last_frame = asyncio.get_running_loop().time()

    async def end(self, status: dict[str, Any]) -> None:
        if self.finished:
            return
        self.finished = True
        for kind in (remotecommand.STDOUT, remotecommand.STDERR, remotecommand.STDIN):
            await self.write(kind, b"", fin=True)
        if remotecommand.error_stream_kept(self.version):
            await self.write(
                remotecommand.ERROR, remotecommand.status_payload(self.version, status), fin=True
            )
        await self._send(spdyframes.GoAway(self.last_stream_id, spdyframes.GoAwayStatus.OK))


class SpdyExecChannel:
    """The ``ExecChannel`` of one SPDY session."""

    def __init__(self, session: _Session) -> None:
        self._session = session

    async def receive(self) -> StdinData | StdinClosed | Resize | None:
        return await self._session.next_event()

    async def send_stdout(self, data: bytes) -> None:
        await self._session.write(remotecommand.STDOUT, data)

    async def send_stderr(self, data: bytes) -> None:
        # With a tty the client opens no stderr stream (the kubelet drops it too): nothing is sent.
        await self._session.write(remotecommand.STDERR, data)

    async def finish(self, status: dict[str, Any]) -> None:
        await self._session.end(status)
