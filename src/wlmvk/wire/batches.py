"""SubmitJobs' request and answer read and written from their bytes, as ``wire.submits`` does SubmitJob's.

SubmitJobs carries several jobs in one call: a ``SubmitJobsRequest`` is field 1
repeated, each a ``SubmitJobRequest`` whose bytes ``submits`` reads and writes;
a ``SubmitJobsResponse`` is field 1 repeated, each a ``SubmitJobsResult``: the
job id (field 1), the gRPC status SubmitJob would have answered (field 2, 0
when submitted) and its message (field 3). A test holds the bytes equal to the
generated message classes'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grpclib.const import Handler

from wlmvk._proto import api
from wlmvk.core.jobs import JobSpec
from wlmvk.wire import protowire, submits

SUBMIT_JOBS = "/api.WorkloadManager/SubmitJobs"
_ITEM = bytes([1 << 3 | protowire.BYTES])


@dataclass(frozen=True)
class Outcome:
    """One job's answer: its id when submitted (``status`` 0), else a gRPC status and message."""

    job_id: int = 0
    status: int = 0
    message: str = ""


def write_specs(specs: Sequence[JobSpec]) -> bytes:
    """The bytes of the ``SubmitJobsRequest`` for ``specs``."""
    return b"".join(protowire.delimited(_ITEM, submits.write_spec(spec)) for spec in specs)


def read_specs(data: bytes) -> list[JobSpec]:
    """The jobs a ``SubmitJobsRequest``'s bytes ask for, in order (unknown fields skipped)."""
    items = (protowire.as_bytes("SubmitJobsRequest", n, k, v) for n, k, v in protowire.fields(data) if n == 1)
    return [submits.read_spec(item) for item in items]


def write_outcomes(outcomes: Sequence[Outcome]) -> bytes:
    """The bytes of the ``SubmitJobsResponse`` for ``outcomes`` (zeros and empty strings left out)."""
    parts = []
    for outcome in outcomes:
        fields = b""
        if outcome.job_id:
            fields += b"\x08" + protowire.varint(outcome.job_id)
        if outcome.status:
            fields += b"\x10" + protowire.varint(outcome.status)
        if outcome.message:
            fields += protowire.delimited(b"\x1a", outcome.message.encode())
        parts.append(protowire.delimited(_ITEM, fields))
    return b"".join(parts)


def read_outcomes(data: bytes) -> list[Outcome]:
    """The answers of a ``SubmitJobsResponse``'s bytes, in order."""
    outcomes = []
    for number, kind, value in protowire.fields(data):
        if number != 1:
            continue
        job_id, status, message = 0, 0, ""
        result = protowire.as_bytes("SubmitJobsResponse", number, kind, value)
        for part, part_kind, part_value in protowire.fields(result):
            field = ("SubmitJobsResult", part, part_kind, part_value)
            if part == 1:
                job_id = protowire.signed(protowire.as_varint(*field), 64)
            elif part == 2:
                status = protowire.signed(protowire.as_varint(*field), 32)
            elif part == 3:
                message = protowire.as_bytes(*field).decode()
        outcomes.append(Outcome(job_id, status, message))
    return outcomes


class SubmitJobsRequest:
    """SubmitJobs' request as grpclib reads it on red-box's side and writes it on the client's: jobs."""

    __slots__ = ("specs",)

    def __init__(self, specs: Sequence[JobSpec]) -> None:
        self.specs = list(specs)

    @classmethod
    def FromString(cls, data: bytes) -> SubmitJobsRequest:  # the protobuf name grpclib calls
        return cls(read_specs(data))

    def SerializeToString(self) -> bytes:  # the protobuf name grpclib calls
        return write_specs(self.specs)


class SubmitJobsReply:
    """SubmitJobs' answer as grpclib writes it on red-box's side and reads it on the client's."""

    __slots__ = ("outcomes",)

    def __init__(self, outcomes: Sequence[Outcome]) -> None:
        self.outcomes = list(outcomes)

    def SerializeToString(self) -> bytes:  # the protobuf name grpclib calls
        return write_outcomes(self.outcomes)

    @classmethod
    def FromString(cls, data: bytes) -> SubmitJobsReply:  # the protobuf name grpclib calls
        return cls(read_outcomes(data))


async def ask(request: SubmitJobsRequest, stub: Any) -> SubmitJobsReply:
    """SubmitJobs through a client ``stub`` (``api.WorkloadManagerStub``), read and written here."""
    reply: SubmitJobsReply = await stub._unary_unary(SUBMIT_JOBS, request, SubmitJobsReply)
    return reply


def handlers(mapping: dict[str, Handler]) -> dict[str, Handler]:
    """The generated handlers with SubmitJobs' request and reply read and written here."""
    handler = mapping.get(SUBMIT_JOBS)
    if handler is None:
        return mapping
    if handler.request_type is not api.SubmitJobsRequest:
        raise TypeError(f"{SUBMIT_JOBS} takes {handler.request_type}, not the SubmitJobsRequest read here")
    replaced = handler._replace(request_type=SubmitJobsRequest, reply_type=SubmitJobsReply)
    return mapping | {SUBMIT_JOBS: replaced}
