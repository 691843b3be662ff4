"""Request messages checked before an rpc sees them: INVALID_ARGUMENT, not UNKNOWN with a traceback.

The generated handlers would pass ``None`` on when a unary request brings no
message (an AttributeError in the rpc) or let a decoding error escape; both
were answered UNKNOWN with a traceback. ``checked`` wraps a generated handler
so that both are INVALID_ARGUMENT with what was wrong.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from grpclib import GRPCError
from grpclib.const import Cardinality, Handler, Status
from grpclib.exceptions import ProtocolError, StreamTerminatedError


class CheckedRequests:
    """A server stream whose request messages must decode, and a unary request must bring one."""

    def __init__(self, stream: Any, *, unary: bool) -> None:
        self._stream = stream
        self._unary = unary

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def recv_message(self) -> Any:
        try:
            message = await self._stream.recv_message()
        except (GRPCError, StreamTerminatedError, ProtocolError):
            raise
        except Exception as exc:
            raise GRPCError(Status.INVALID_ARGUMENT, f"the request message does not decode: {exc}") from exc
        if message is None and self._unary:
            raise GRPCError(Status.INVALID_ARGUMENT, "the request message is missing")
        return message

    async def __aiter__(self) -> AsyncIterator[Any]:
        while (message := await self.recv_message()) is not None:
            yield message


def checked(handler: Handler) -> Handler:
    """``handler`` with its request messages checked (``CheckedRequests``)."""
    unary = handler.cardinality in (Cardinality.UNARY_UNARY, Cardinality.UNARY_STREAM)
    func: Callable[[Any], Awaitable[None]] = handler.func

    async def handle(stream: Any) -> None:
        await func(CheckedRequests(stream, unary=unary))

    return handler._replace(func=handle)
