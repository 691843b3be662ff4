"""red-box's gRPC server: grpclib's, with room for as many streams on a connection as clients open.

A kubelet talks to red-box over one connection: every ``kubectl logs -f`` it serves is a TailFile
stream and every ``kubectl exec`` an Exec stream, open for as long as the user watches. h2, under
grpclib, advertises MAX_CONCURRENT_STREAMS = 100 by default, and a client over the limit waits for a
stream to close: with 100 follows open, the kubelet's next call (the status tick's WorkloadInfo, a
submission, the 101st follow) waited until one ended, and timed out. grpc-go's servers, which the
original red-box was, advertise no limit. ``STREAMS`` is ours: far above any node's follows, still
a bound on what one connection may hold.

grpclib has no setting for it; the connection's first SETTINGS frame (sent as the connection is
made) carries it here, as grpclib itself sends its window size (``H2Protocol.connection_made``).
Its calls are accepted by ``answers.Answering``: a unary call's answer leaves in one write.
"""

from __future__ import annotations

from asyncio import BaseTransport
from typing import Any

from grpclib.protocol import H2Protocol
from grpclib.server import Server
from h2.settings import SettingCodes

from wlmvk.redbox.answers import Answering

STREAMS = 10_000
"""Concurrent streams red-box accepts on one client connection."""


class _RoomyProtocol(H2Protocol):
    def connection_made(self, transport: BaseTransport) -> None:
        super().connection_made(transport)
        # The Connection's h2 state: grpclib keeps it private, with no setter for this setting.
        self.connection._connection.update_settings({SettingCodes.MAX_CONCURRENT_STREAMS: STREAMS})
        self.connection.flush()


class Listener(Server):
    """``grpclib.server.Server`` whose connections take ``STREAMS`` concurrent streams and answer
    unary calls in one write."""

    def _protocol_factory(self) -> H2Protocol:
        protocol: Any = super()._protocol_factory()
        protocol.__class__ = _RoomyProtocol  # the same object, made by grpclib with its handler
        protocol.handler.__class__ = Answering
        return protocol  # type: ignore[no-any-return]
