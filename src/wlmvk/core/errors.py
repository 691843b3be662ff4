"""The project's error hierarchy, classified by what the caller should do.

Every layer raises these; each edge maps them once: to a gRPC status in
red-box, to an HTTP code in the kubelet API, to a Kubernetes condition and
Event in the kubelet and operator. Library errors are chained with ``from``.
"""

from __future__ import annotations


class WlmvkError(Exception):
    """Base of every error the project raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(WlmvkError):
    """The request is wrong and retrying it unchanged will fail again."""


class NotFound(WlmvkError):
    """The job, partition, file or object does not exist."""


class Conflict(WlmvkError):
    """The request races another change; re-read and retry."""


class FailedPrecondition(WlmvkError):
    """The system is not in a state that allows the request (e.g. no runtime)."""


class Unavailable(WlmvkError):
    """A dependency (Slurm, red-box, the API server) is down or timed out; retry later."""


class Unsupported(WlmvkError):
    """The peer does not implement this operation (e.g. an original red-box)."""


class LimitReached(Unavailable):
    """A limit of the WLM's refuses the work for now (Slurm's QoS or association ``MaxSubmitJobs``):
    nothing was made, and the same request may pass once other work ends. Retry later, slowly."""
