"""core.errors -> gRPC status, in one place.

Every rpc body runs inside ``answering()``: the project's errors become
``GRPCError`` with the status a client can act on (and Slurm's words in the
message); anything unexpected is logged with its traceback and answered
INTERNAL, so red-box keeps serving.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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
}


def to_grpc(exc: errors.WlmvkError) -> GRPCError:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return GRPCError(STATUS[cls], exc.message)
    return GRPCError(Status.INTERNAL, exc.message)


@contextmanager
def answering(rpc: str) -> Iterator[None]:
    try:
        yield
    except GRPCError:
        raise
    except errors.WlmvkError as exc:
        _log.info("rpc refused", rpc=rpc, error=type(exc).__name__, message=exc.message)
        raise to_grpc(exc) from exc
    except Exception as exc:
        _log.exception("rpc failed", rpc=rpc)
        raise GRPCError(Status.INTERNAL, f"{rpc}: {type(exc).__name__}: {exc}") from exc
