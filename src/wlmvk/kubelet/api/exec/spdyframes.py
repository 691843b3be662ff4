"""SPDY/3.1 framing: the multiplexing kube-apiserver speaks to a kubelet for ``pods/exec``.

What kube-apiserver v1.36.3 sends a kubelet for exec (read in its source and
captured from the real binary, tests/fixtures/spdy_captured/):

- kubectl v1.36 opens a WebSocket (``v5.channel.k8s.io``) to the apiserver.
  The apiserver passes that WebSocket on to the kubelet only when the Node
  lists ``ExtendWebSocketsToKubelet`` in ``status.declaredFeatures`` (gate
  ``ExtendWebSocketsToKubelet``, beta and on in v1.36; ``ExecREST.Connect``
  in pkg/registry/core/pod/rest/subresources.go). A real v1.36 kubelet
  declares it (its gate is on; component-helpers' nodedeclaredfeatures) and
  translates the WebSocket to SPDY for its runtime itself; ours declare it too
  on a v1.36 server (``wlmvk.kube.version.declared_features``; the kubelet's
  websocket transport serves it), unless ``--no-websockets-to-kubelet``.
  Without the declaration the apiserver's StreamTranslator (gate
  ``TranslateStreamCloseWebsocketRequests``, on since v1.30) ends the
  WebSocket itself and dials the kubelet with SPDY:
  ``POST /exec/<ns>/<pod>/<container>?command=..&error=1&input=1&output=1&tty=1``
  with ``Connection: Upgrade``, ``Upgrade: SPDY/3.1`` and five
  ``X-Stream-Protocol-Version`` lines: v5, v4, v3, v2.channel.k8s.io and
  channel.k8s.io. A client speaking SPDY itself (an older kubectl,
  ``KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false``, or kubectl falling back after
  a failed WebSocket) is proxied as is, with the same headers.
- The kubelet answers ``101`` with ``X-Stream-Protocol-Version: v4.channel.k8s.io``
  (it serves v4 down to v1 over SPDY, never v5), and the client opens one
  stream per channel, each ``SYN_STREAM`` carrying a ``streamtype`` header
  (error, stdin, stdout, stderr, resize), one at a time: it waits for each
  ``SYN_REPLY`` before opening the next.

This module is the wire format only (draft-mbelshe-httpbis-spdy-00 and the
SPDY/3.1 changes): frames as values, an encoder and an incremental decoder,
each holding the header compression context of its direction for the
connection's life, as the spec requires (``spdyheaders``). Flow control is not applied:
moby/spdystream, the SPDY of every Kubernetes peer, neither sends
WINDOW_UPDATE nor waits for one, so the frames are parsed and otherwise
ignored. Pure: no I/O here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from wlmvk.kubelet.api.exec.spdyheaders import (
    MAX_HEADER_BLOCK,
    HeaderCompressor,
    HeaderDecompressor,
    Headers,
    SpdyError,
    u32,
)

VERSION = 3
MAX_LENGTH = (1 << 24) - 1
"""The largest payload a frame's 24-bit length field can state."""

FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02
FLAG_CLEAR_SETTINGS = 0x01


class FrameType(IntEnum):
    SYN_STREAM = 1
    SYN_REPLY = 2
    RST_STREAM = 3
    SETTINGS = 4
    PING = 6
    GOAWAY = 7
    HEADERS = 8
    WINDOW_UPDATE = 9


class RstStatus(IntEnum):
    PROTOCOL_ERROR = 1
    INVALID_STREAM = 2
    REFUSED_STREAM = 3
    UNSUPPORTED_VERSION = 4
    CANCEL = 5
    INTERNAL_ERROR = 6
    FLOW_CONTROL_ERROR = 7
    STREAM_IN_USE = 8
    STREAM_ALREADY_CLOSED = 9
    INVALID_CREDENTIALS = 10
    FRAME_TOO_LARGE = 11


class GoAwayStatus(IntEnum):
    OK = 0
    PROTOCOL_ERROR = 1
    INTERNAL_ERROR = 2


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: Headers
    associated_to: int = 0
    priority: int = 0
    slot: int = 0
    fin: bool = False
    unidirectional: bool = False


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: Headers = ()
    fin: bool = False


@dataclass(frozen=True)
class HeadersFrame:
    stream_id: int
    headers: Headers
    fin: bool = False


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Setting:
    id: int
    value: int
    flags: int = 0


@dataclass(frozen=True)
class Settings:
    entries: tuple[Setting, ...] = ()
    clear: bool = False


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_good_stream_id: int
    status: int = GoAwayStatus.OK


@dataclass(frozen=True)
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass(frozen=True)
class Data:
    stream_id: int
    data: bytes
    fin: bool = False


Frame = SynStream | SynReply | HeadersFrame | RstStream | Settings | Ping | GoAway | WindowUpdate | Data


class FrameEncoder:
    """Frames to bytes for one connection's sending direction."""

    def __init__(self) -> None:
        self._headers = HeaderCompressor()

    def encode(self, frame: Frame) -> bytes:
        match frame:
            case Data(stream_id, data, fin):
                _check_stream_id(stream_id)
                return struct.pack(">II", stream_id, _flags_length(FLAG_FIN if fin else 0, len(data))) + data
            case SynStream():
                _check_stream_id(frame.stream_id)
                flags = (FLAG_FIN if frame.fin else 0) | (FLAG_UNIDIRECTIONAL if frame.unidirectional else 0)
                head = struct.pack(
                    ">IIBB", frame.stream_id, frame.associated_to, (frame.priority & 7) << 5, frame.slot
                )
                return _control(FrameType.SYN_STREAM, flags, head + self._headers.compress(frame.headers))
            case SynReply(stream_id, headers, fin):
                _check_stream_id(stream_id)
                block = self._headers.compress(headers)
                return _control(
                    FrameType.SYN_REPLY, FLAG_FIN if fin else 0, struct.pack(">I", stream_id) + block
                )
            case HeadersFrame(stream_id, headers, fin):
                _check_stream_id(stream_id)
                block = self._headers.compress(headers)
                return _control(
                    FrameType.HEADERS, FLAG_FIN if fin else 0, struct.pack(">I", stream_id) + block
                )
            case RstStream(stream_id, status):
                _check_stream_id(stream_id)
                return _control(FrameType.RST_STREAM, 0, struct.pack(">II", stream_id, status))
            case Settings(entries, clear):
                body = struct.pack(">I", len(entries)) + b"".join(
                    struct.pack(">II", (entry.flags << 24) | entry.id, entry.value) for entry in entries
                )
                return _control(FrameType.SETTINGS, FLAG_CLEAR_SETTINGS if clear else 0, body)
            case Ping(ping_id):
                return _control(FrameType.PING, 0, struct.pack(">I", ping_id))
            case GoAway(last_good, status):
                return _control(FrameType.GOAWAY, 0, struct.pack(">II", last_good, status))
            case WindowUpdate(stream_id, delta):
                return _control(FrameType.WINDOW_UPDATE, 0, struct.pack(">II", stream_id, delta))
        raise TypeError(f"not a SPDY frame: {frame!r}")


class FrameDecoder:
    """Bytes to frames for one connection's receiving direction, fed as the bytes arrive.

    Control frames of an unknown type are skipped, as the spec asks.
    """

    def __init__(self, *, header_limit: int = MAX_HEADER_BLOCK) -> None:
        self._buffer = bytearray()
        self._headers = HeaderDecompressor(limit=header_limit)

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while len(self._buffer) >= 8:
            length = int.from_bytes(self._buffer[5:8], "big")
            if len(self._buffer) < 8 + length:
                break
            head, body = bytes(self._buffer[:8]), bytes(self._buffer[8 : 8 + length])
            del self._buffer[: 8 + length]
            frame = self._frame(head, body)
            if frame is not None:
                frames.append(frame)
        return frames

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buffer)

    def _frame(self, head: bytes, body: bytes) -> Frame | None:
        flags = head[4]
        if not head[0] & 0x80:
            stream_id = u32(head, 0)
            if stream_id == 0:
                raise SpdyError("DATA frame on stream 0")
            return Data(stream_id, body, fin=bool(flags & FLAG_FIN))
        version, kind = struct.unpack(">HH", head[:4])
        if version & 0x7FFF != VERSION:
            raise SpdyError(f"SPDY version {version & 0x7FFF}, this end speaks {VERSION}")
        try:
            known = FrameType(kind)
        except ValueError:
            return None
        try:
            return self._control(known, flags, body)
        except struct.error as exc:
            raise SpdyError(f"{known.name} frame of {len(body)} bytes is too short") from exc

    def _control(self, kind: FrameType, flags: int, body: bytes) -> Frame:
        fin = bool(flags & FLAG_FIN)
        match kind:
            case FrameType.SYN_STREAM:
                stream_id, associated, priority, slot = struct.unpack(">IIBB", body[:10])
                return SynStream(
                    _stream_id(stream_id),
                    self._headers.decompress(body[10:]),
                    associated_to=associated & 0x7FFFFFFF,
                    priority=priority >> 5,
                    slot=slot,
                    fin=fin,
                    unidirectional=bool(flags & FLAG_UNIDIRECTIONAL),
                )
            case FrameType.SYN_REPLY:
                return SynReply(_stream_id(u32(body, 0)), self._headers.decompress(body[4:]), fin=fin)
            case FrameType.HEADERS:
                return HeadersFrame(_stream_id(u32(body, 0)), self._headers.decompress(body[4:]), fin=fin)
            case FrameType.RST_STREAM:
                _exact(kind, body, 8)
                return RstStream(_stream_id(u32(body, 0)), u32(body, 4))
            case FrameType.SETTINGS:
                count = u32(body, 0)
                if count * 8 != len(body) - 4:
                    raise SpdyError(f"SETTINGS claims {count} entries in {len(body)} bytes")
                entries = tuple(
                    Setting(id=word & 0xFFFFFF, value=value, flags=word >> 24)
                    for word, value in struct.iter_unpack(">II", body[4:])
                )
                return Settings(entries, clear=bool(flags & FLAG_CLEAR_SETTINGS))
            case FrameType.PING:
                _exact(kind, body, 4)
                return Ping(u32(body, 0))
            case FrameType.GOAWAY:
                _exact(kind, body, 8)
                return GoAway(u32(body, 0) & 0x7FFFFFFF, u32(body, 4))
            case FrameType.WINDOW_UPDATE:
                _exact(kind, body, 8)
                return WindowUpdate(u32(body, 0) & 0x7FFFFFFF, u32(body, 4) & 0x7FFFFFFF)


def _control(kind: FrameType, flags: int, body: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, _flags_length(flags, len(body))) + body


def _flags_length(flags: int, length: int) -> int:
    if length > MAX_LENGTH:
        raise ValueError(f"a SPDY frame carries at most {MAX_LENGTH} bytes, not {length}")
    return (flags << 24) | length


def _check_stream_id(stream_id: int) -> None:
    if not 0 < stream_id <= 0x7FFFFFFF:
        raise ValueError(f"stream id {stream_id} is not in 1..2**31-1")


def _stream_id(word: int) -> int:
    stream_id = word & 0x7FFFFFFF
    if stream_id == 0:
        raise SpdyError("stream id 0 where a stream is needed")
    return stream_id


def _exact(kind: FrameType, body: bytes, size: int) -> None:
    if len(body) != size:
        raise SpdyError(f"{kind.name} frame of {len(body)} bytes, not {size}")
