"""gRPC and connection failures -> core.errors, in one place, for the red-box client.

A missing socket, a refused connection, a dropped stream or a deadline
mean "red-box is not there right now" (``Unavailable``). Status codes map
to what the caller should do. An original red-box answers every failure
with UNKNOWN and Slurm's text; the text is read for the two cases that
matter (an unknown job id, a rejected batch script).
"""

from __future__ import annotations

import asyncio

from grpclib import GRPCError
from grpclib.const import Status
from grpclib.exceptions import ProtocolError, StreamTerminatedError

from wlmvk.core import errors, fences

CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    StreamTerminatedError,
    ProtocolError,
    asyncio.TimeoutError,
    EOFError,
)
CALL_ERRORS: tuple[type[BaseException], ...] = (*CONNECTION_ERRORS, AttributeError)
"""What a call may raise on a lost connection (AttributeError: see ``dead_connection``)."""

_BY_STATUS: dict[Status, type[errors.WlmvkError]] = {
    Status.UNAVAILABLE: errors.Unavailable,
    Status.DEADLINE_EXCEEDED: errors.Unavailable,
    Status.CANCELLED: errors.Unavailable,
    Status.RESOURCE_EXHAUSTED: errors.LimitReached,  # an Unavailable: retried by callers that retry those
    Status.NOT_FOUND: errors.NotFound,
    Status.INVALID_ARGUMENT: errors.InvalidInput,
    Status.OUT_OF_RANGE: errors.InvalidInput,
    Status.PERMISSION_DENIED: errors.InvalidInput,
    Status.FAILED_PRECONDITION: errors.FailedPrecondition,
    Status.UNIMPLEMENTED: errors.Unsupported,
    Status.ABORTED: errors.Conflict,
    Status.ALREADY_EXISTS: errors.Conflict,
}


def dead_connection(exc: BaseException) -> bool:
    """grpclib closes a connection by deleting its transport: a call that picks such a connection
    (the peer hung up between two calls) fails with this AttributeError, a connection error."""
    return isinstance(exc, AttributeError) and "_transport" in str(exc)


def from_grpc(exc: GRPCError, rpc: str) -> errors.WlmvkError:
    message = exc.message or exc.status.name
    text = f"{rpc}: {message}"
    if exc.status is Status.FAILED_PRECONDITION and fences.refused(message):
        return errors.Unavailable(text)  # deposed: nothing was done; retrying is the new holder's job
    cls = _BY_STATUS.get(exc.status)
    if cls is not None:
        return cls(text)
    if "Invalid job id" in message:
        return errors.NotFound(text)
    if "sbatch: error" in message or "Batch job submission failed" in message:
        return errors.InvalidInput(text)
    return errors.Unavailable(text)


def from_connection(exc: BaseException, rpc: str, socket_path: str) -> errors.Unavailable:
    if isinstance(exc, FileNotFoundError):
        return errors.Unavailable(f"{rpc}: red-box socket {socket_path} does not exist")
    if isinstance(exc, ConnectionRefusedError):
        return errors.Unavailable(f"{rpc}: nothing listens on {socket_path}")
    if isinstance(exc, asyncio.TimeoutError):
        return errors.Unavailable(f"{rpc}: red-box did not answer in time")
    return errors.Unavailable(f"{rpc}: connection to red-box at {socket_path} failed: {exc!r}")


def translate(exc: BaseException, rpc: str, socket_path: str) -> errors.WlmvkError | None:
    """The project error for ``exc``, or None when it is not a failure of the call."""
    if isinstance(exc, GRPCError):
        return from_grpc(exc, rpc)
    if isinstance(exc, CONNECTION_ERRORS) or dead_connection(exc):
        return from_connection(exc, rpc, socket_path)
    return None
