"""core.errors -> gRPC status, in one place, and the per-request hook every rpc goes through.

Every rpc body runs inside ``answering()`` (by the ``unary`` and ``streaming``
decorators of the service's methods): the project's errors become
``GRPCError`` with the status a client can act on (and Slurm's words in the
message); anything unexpected is logged with its traceback and answered
INTERNAL, so red-box keeps serving. The file rpcs pass ``files=True``: there
an OSError is about the path the client named (a directory where a file was
meant, a full disk, no permission) and is answered INVALID_ARGUMENT with the
system's words.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from typing import Any, Protocol, TypeVar

import structlog
from grpclib import GRPCError
from grpclib.const import Status

from wlmvk.core import errors

_log = structlog.get_logger(__name__)

STATUS = {
    errors.InvalidInput: Status.INVALID_ARGUMENT,
    errors.NotFound: Status.NOT_FOUND,
    errors.FailedPrecondition: Status.FAILED_PRECONDITION,
    errors.Unavailable: Status.UNAVAILABLE,
    errors.Conflict: Status.ABORTED,
    errors.Unsupported: Status.UNIMPLEMENTED,
    errors.LimitReached: Status.RESOURCE_EXHAUSTED,
}


def to_grpc(exc: errors.WlmvkError) -> GRPCError:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return GRPCError(STATUS[cls], exc.message)
    return GRPCError(Status.INTERNAL, exc.message)


class Inflight:
    """Counts unary rpcs in progress, so that shutdown can let them finish."""

    def __init__(self) -> None:
        self.count = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def enter(self) -> None:
        self.count += 1
        self._idle.clear()

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0:
            self._idle.set()

    async def idle(self) -> None:
        await self._idle.wait()


@contextlib.contextmanager
def answering(
    rpc: str, inflight: Inflight | None = None, *, files: bool = False, **bind: object
) -> Iterator[None]:
    """Map errors to gRPC statuses, bind ``rpc`` (and e.g. job_id, partition) to log lines."""
    if inflight is not None:
        inflight.enter()
    # Bound and reset by token: structlog's bound_contextvars reads every bound variable first,
    # three times the cost, on every rpc.
    tokens = structlog.contextvars.bind_contextvars(rpc=rpc, **bind)
    try:
        yield
    except GRPCError:
        raise
    except errors.WlmvkError as exc:
        _log.info("rpc refused", rpc=rpc, error=type(exc).__name__, message=exc.message)
        raise to_grpc(exc) from exc
    except OSError as exc:
        if not files:
            _log.exception("rpc failed", rpc=rpc)
            raise GRPCError(Status.INTERNAL, f"{rpc}: {type(exc).__name__}: {exc}") from exc
        _log.info("rpc refused", rpc=rpc, error=type(exc).__name__, message=str(exc))
        where = f" ({exc.filename})" if exc.filename else ""
        raise GRPCError(Status.INVALID_ARGUMENT, f"{rpc}: {exc.strerror or exc}{where}") from exc
    except Exception as exc:
        _log.exception("rpc failed", rpc=rpc)
        raise GRPCError(Status.INTERNAL, f"{rpc}: {type(exc).__name__}: {exc}") from exc
    finally:
        structlog.contextvars.reset_contextvars(**tokens)
        if inflight is not None:
            inflight.leave()


class Serving(Protocol):
    inflight: Inflight


S = TypeVar("S", bound=Serving)
Q = TypeVar("Q")
R = TypeVar("R")
Bind = Callable[[Any], dict[str, object]]


def unary(
    rpc: str, *, files: bool = False, bind: Bind | None = None
) -> Callable[[Callable[[S, Q], Awaitable[R]]], Callable[[S, Q], Coroutine[Any, Any, R]]]:
    """The rpc method runs inside ``answering`` and counts as in flight.

    ``bind(request)`` names what the log lines of the call carry (a job id, a partition).
    """

    def wrap(method: Callable[[S, Q], Awaitable[R]]) -> Callable[[S, Q], Coroutine[Any, Any, R]]:
        @functools.wraps(method)
        async def run(self: S, request: Q) -> R:
            with answering(rpc, self.inflight, files=files, **(bind(request) if bind else {})):
                return await method(self, request)

        return run

    return wrap


def streaming(
    rpc: str, *, files: bool = False
) -> Callable[[Callable[[S, Q], AsyncIterator[R]]], Callable[[S, Q], AsyncIterator[R]]]:
    """The answer-streaming rpc method runs inside ``answering``; a stream does not hold shutdown."""

    def wrap(method: Callable[[S, Q], AsyncIterator[R]]) -> Callable[[S, Q], AsyncIterator[R]]:
        @functools.wraps(method)
        async def run(self: S, request: Q) -> AsyncIterator[R]:
            # Closed here when the client goes away, not when collected: a stream's finally
            # (e.g. StageOut stopping its packing thread) runs at once.
            items = method(self, request)
            try:
                with answering(rpc, files=files):
                    async for item in items:
                        yield item
            finally:
                close = getattr(items, "aclose", None)
                if close is not None:
                    await close()

        return run

    return wrap
