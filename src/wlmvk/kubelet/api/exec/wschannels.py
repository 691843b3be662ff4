"""The kubelet's remote command protocol over WebSocket (v5/v4.channel.k8s.io): pure rules.

Read in k8s.io/apimachinery's ``wsstream`` and client-go's WebSocket executor
(``tools/remotecommand/websocket.go``):

- Negotiation: the client offers subprotocols in ``Sec-WebSocket-Protocol``
  (kubectl: v5, v4, v3, v2.channel.k8s.io); the first of the client's that the
  server serves wins. Served here: ``v5.channel.k8s.io`` and ``v4.channel.k8s.io``.
  None in common is 400 before the upgrade.
- Every message is binary: one channel byte, then the data. Channels: 0 stdin,
  1 stdout, 2 stderr, 3 error (the final ``metav1.Status`` as JSON), 4 resize
  (``{"Width":w,"Height":h}``). v5 adds 255, "close": its one data byte names
  the channel the sender closed (0: end of stdin). A message on any other
  channel is ignored, as client-go ignores one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wlmvk.kubelet.api.exec.remotecommand import ResizeDecoder
from wlmvk.kubelet.api.exec.requests import ExecEvent, StdinClosed, StdinData

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
SERVED = (V5, V4)
PROTOCOL_HEADER = "Sec-WebSocket-Protocol"

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str


def negotiate(offered: Sequence[str]) -> str | Refusal:
    """The subprotocol to speak, from the request's ``Sec-WebSocket-Protocol`` values."""
    wanted = [word.strip() for value in offered for word in value.split(",") if word.strip()]
    for protocol in wanted:
        if protocol in SERVED:
            return protocol
    return Refusal(
        400,
        f"unable to upgrade: the client offers the WebSocket subprotocols {wanted},"
        f" the kubelet serves {list(SERVED)}",
    )


def frame(channel: int, data: bytes) -> bytes:
    return bytes((channel,)) + data


class Inbound:
    """The client's messages of one session -> exec events, in order."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self._sizes = ResizeDecoder()
        self._stdin_closed = False

    def feed(self, message: bytes) -> list[ExecEvent]:
        if not message:
            return []
        channel, data = message[0], message[1:]
        if channel == STDIN and data and not self._stdin_closed:
            return [StdinData(data)]
        if channel == RESIZE:
            return list(self._sizes.feed(data))
        if (
            channel == CLOSE
            and self.protocol == V5
            and data[:1] == bytes((STDIN,))
            and not self._stdin_closed
        ):
            self._stdin_closed = True
            return [StdinClosed()]
        return []
