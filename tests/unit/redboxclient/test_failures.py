"""gRPC and connection failures become the project's errors."""

from __future__ import annotations

import pytest
from grpclib import GRPCError
from grpclib.const import Status
from grpclib.exceptions import StreamTerminatedError

from wlmvk.core import errors
from wlmvk.redbox import answering
from wlmvk.redboxclient import failures


@pytest.mark.parametrize(
    ("status", "message", "error"),
    [
        (Status.UNAVAILABLE, "slurmctld down", errors.Unavailable),
        (Status.RESOURCE_EXHAUSTED, "QOSMaxSubmitJobPerUserLimit", errors.LimitReached),
        (Status.DEADLINE_EXCEEDED, None, errors.Unavailable),
        (Status.NOT_FOUND, "job 5", errors.NotFound),
        (Status.INVALID_ARGUMENT, "empty", errors.InvalidInput),
        (Status.FAILED_PRECONDITION, "no apptainer", errors.FailedPrecondition),
        (Status.UNIMPLEMENTED, None, errors.Unsupported),
        (Status.UNKNOWN, "slurm_load_jobs error: Invalid job id specified", errors.NotFound),
        (
            Status.UNKNOWN,
            "sbatch: error: Batch job submission failed: Invalid partition",
            errors.InvalidInput,
        ),
        (Status.INTERNAL, "boom", errors.Unavailable),
    ],
)
def test_statuses(status: Status, message: str | None, error: type[errors.WlmvkError]) -> None:
    found = failures.from_grpc(GRPCError(status, message), "Rpc")
    assert type(found) is error
    assert found.message.startswith("Rpc: ")


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (FileNotFoundError(), "does not exist"),
        (ConnectionRefusedError(), "nothing listens"),
        (StreamTerminatedError("Connection lost"), "failed"),
        (TimeoutError(), "in time"),
    ],
)
def test_connection_failures_are_unavailable(exc: BaseException, words: str) -> None:
    found = failures.translate(exc, "Rpc", "/x.sock")
    assert isinstance(found, errors.Unavailable)
    assert words in found.message
    assert failures.translate(ValueError(), "Rpc", "/x.sock") is None


def test_a_limit_reached_crosses_the_wire_as_itself() -> None:
    sent = answering.to_grpc(errors.LimitReached("sbatch: error: QOSMaxSubmitJobPerUserLimit"))
    assert sent.status is Status.RESOURCE_EXHAUSTED
    found = failures.from_grpc(sent, "SubmitJob")
    assert type(found) is errors.LimitReached
    assert isinstance(found, errors.Unavailable)  # callers that retry an unavailable red-box retry it too
