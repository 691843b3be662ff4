"""The kubelet's remote command protocol over SPDY (v1 to v4.channel.k8s.io): pure rules.

Read in the kubelet's cri streaming server (k8s.io/cri-streaming
pkg/streaming/remotecommand, v0.36.3) and k8s.io/streaming's ``Handshake``:

- Negotiation: the client lists versions in ``X-Stream-Protocol-Version``
  (repeated or comma-separated); the first of the client's that the server
  serves wins. None listed is 400; none in common is 403 with the served
  versions in ``X-Accepted-Stream-Protocol-Versions``. Over SPDY the kubelet
  serves v4 down to v1 (v5 is WebSocket-only); the apiserver offers v5 first.
- Streams: the client opens ``error`` always, then ``stdin``, ``stdout``,
  ``stderr`` as asked, and ``resize`` with a tty from v3 on. A tty has no
  stderr: the kubelet drops it and the client never opens it.
- Final status on the error stream: v4 writes the ``metav1.Status`` as JSON
  (Success included); v2 and v3 write only a failure's message, as text.
  v1 resets its error stream once the streams are up, so it carries nothing.
- Resize: the client writes ``{"Width":w,"Height":h}`` objects back to back
  (Go's json.Encoder), field names matched without regard to case.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wlmvk.kubelet.api.exec.requests import ExecRequest, Resize

V4 = "v4.channel.k8s.io"
V3 = "v3.channel.k8s.io"
V2 = "v2.channel.k8s.io"
V1 = "channel.k8s.io"
SERVED = (V4, V3, V2, V1)
"""The versions the kubelet serves over SPDY, in its order of preference."""

VERSION_HEADER = "X-Stream-Protocol-Version"
ACCEPTED_HEADER = "X-Accepted-Stream-Protocol-Versions"

ERROR, STDIN, STDOUT, STDERR, RESIZE = "error", "stdin", "stdout", "stderr", "resize"
STREAM_TYPE_HEADER = "streamtype"


@dataclass(frozen=True)
class Refusal:
    """An upgrade refused before it starts: the HTTP status, the message, extra headers."""

    status: int
    message: str
    headers: tuple[tuple[str, str], ...] = ()


def negotiate(offered: Sequence[str]) -> str | Refusal:
    """The version to speak, from the request's ``X-Stream-Protocol-Version`` values."""
    wanted = [word.strip() for value in offered for word in value.split(",") if word.strip()]
    if not wanted:
        return Refusal(400, f"unable to upgrade: header {VERSION_HEADER} names no protocol")
    for version in wanted:
        if version in SERVED:
            return version
    return Refusal(
        403,
        f"unable to upgrade: unable to negotiate protocol: client supports {wanted},"
        f" server accepts {list(SERVED)}",
        tuple((ACCEPTED_HEADER, version) for version in SERVED),
    )


def expected_streams(version: str, request: ExecRequest) -> frozenset[str]:
    """The stream types the client opens for this request before the command starts."""
    streams = {ERROR}
    if request.stdin:
        streams.add(STDIN)
    if request.stdout:
        streams.add(STDOUT)
    if request.stderr and not request.tty:
        streams.add(STDERR)
    if request.tty and version in (V4, V3):
        streams.add(RESIZE)
    return frozenset(streams)


def status_payload(version: str, status: dict[str, Any]) -> bytes:
    """What the kubelet writes on the error stream for the final ``status`` (may be empty)."""
    if version == V4:
        return json.dumps(status, separators=(",", ":")).encode()
    if version == V1 or status.get("status") == "Success":
        return b""
    return str(status.get("message", "")).encode()


def error_stream_kept(version: str) -> bool:
    """False for v1, whose error stream the kubelet resets as soon as the streams are up."""
    return version != V1


class ResizeDecoder:
    """Terminal sizes from the resize stream's bytes, fed as they arrive.

    Like the kubelet's decoder it stops at the first value that is not a size
    object; what follows is ignored.
    """

    def __init__(self) -> None:
        self._buffer = ""
        self._broken = False
        self._json = json.JSONDecoder()

    def feed(self, data: bytes) -> list[Resize]:
        if self._broken:
            return []
        self._buffer += data.decode("utf-8", errors="replace")
        sizes: list[Resize] = []
        while self._buffer.lstrip():
            text = self._buffer.lstrip()
            try:
                value, end = self._json.raw_decode(text)
            except json.JSONDecodeError:
                if _may_continue(text):
                    self._buffer = text
                    return sizes
                self._broken = True
                return sizes
            self._buffer = text[end:]
            size = _size(value)
            if size is None:
                self._broken = True
                return sizes
            sizes.append(size)
        self._buffer = ""
        return sizes


def _may_continue(text: str) -> bool:
    """An object cut by the stream's chunking, not a bad one: it opens and has not closed."""
    return text.startswith("{") and "}" not in text


def _size(value: object) -> Resize | None:
    if not isinstance(value, dict):
        return None
    fields = {str(key).lower(): item for key, item in value.items()}
    width, height = fields.get("width", 0), fields.get("height", 0)
    if not all(
        isinstance(item, int) and not isinstance(item, bool) and 0 <= item < 1 << 16
        for item in (width, height)
    ):
        return None
    return Resize(width=width, height=height)
