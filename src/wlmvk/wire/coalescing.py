"""gRPC over grpclib with each connection's writes of one loop turn sent as one.

grpclib writes every HTTP/2 frame group to the socket as soon as h2 makes
it: a unary answer is three writes (headers, the message, the trailers),
and at 16 calls in flight the answers of one loop turn are dozens. Each is
a ``send()`` of its own, and each can wake the client for a few bytes.
Here a connection's writes are gathered and sent together at the end of
the loop turn that made them (``call_soon``): the same bytes in the same
order, one ``send()`` per connection and turn. The client's side is the
same: a request is two writes (headers, then the message), and the kubelet
sends up to 16 at once on its one connection.

What grpclib does with its transport is unchanged otherwise: closing sends
what is gathered first; an abort drops it, as the socket's own buffer is
dropped. ``Server`` (red-box's) and ``Channel`` (the client's) are grpclib's
with this one difference (their ``_protocol_factory``, grpclib 0.4's, with
the transport wrapped).
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from grpclib import client, server
from grpclib.protocol import H2Protocol


class CoalescingTransport(asyncio.Transport):
    """A transport whose writes wait for the end of the loop turn and go out as one."""

    def __init__(self, transport: asyncio.Transport) -> None:
        super().__init__()
        self._transport = transport
        self._pending: list[bytes] = []
        self._loop = asyncio.get_running_loop()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self._send)
        self._pending.append(bytes(data))

    def _send(self) -> None:
        pending, self._pending = self._pending, []
        if pending and not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self._send()
        self._transport.close()

    def abort(self) -> None:
        self._pending = []
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()


class _Protocol(H2Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(CoalescingTransport(cast(asyncio.Transport, transport)))


class Server(server.Server):
    """grpclib's ``Server``, its connections' writes coalesced per loop turn."""

    def _protocol_factory(self) -> H2Protocol:
        self.__gc_step__()
        handler = server.Handler(self._mapping, self._codec, self._status_details_codec, self.__dispatch__)
        self._handlers.add(handler)
        return _Protocol(handler, self._config, self._h2_config)


class Channel(client.Channel):
    """grpclib's ``Channel``, its connection's writes coalesced per loop turn."""

    def _protocol_factory(self) -> H2Protocol:
        return _Protocol(client.Handler(), self._config, self._h2_config)
