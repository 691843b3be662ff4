"""SubmitJob's request and answer read and written from their bytes, without message objects.

Every pod costs red-box one SubmitJob. As betterproto message objects, reading
the request (a ``__setattr__`` and a ``__post_init__`` per field, then a
``__getattribute__`` per read) and building the answer cost red-box about
0.4 ms of CPU per job, as much as the rest of the submission's own work
(profiled with py-spy, ``bench/redbox_profile.py``). Here the request's bytes
become the ``JobSpec`` at once and the answer is its one varint. Both are
what the message classes read and write, field for field (a test compares
them): a field this reading does not know is skipped, as protobuf skips it;
one of a known number with another wire type, or a string that is not UTF-8,
is refused (the request does not decode: INVALID_ARGUMENT).

The service hands grpclib these two classes as SubmitJob's request and
reply types (``handlers``); every other rpc keeps the generated messages.
"""

from __future__ import annotations

from grpclib.const import Handler

from wlmvk._proto import api
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.wire import protowire

SUBMIT_JOB = "/api.WorkloadManager/SubmitJob"

# SubmitJobRequest's string fields by number (proto/wlm.proto); 3 is the original's client_id,
# which red-box reads nowhere.
_TEXTS = {1: "script", 2: "partition", 3: "", 4: "idempotency_key", 5: "name", 6: "working_dir",
          7: "std_out", 8: "std_err"}  # fmt: skip
_ENV = 9


def _text(number: int, kind: int, value: int | bytes) -> str:
    return _message(number, kind, value).decode()


def read_spec(data: bytes) -> JobSpec:
    """The job a ``SubmitJobRequest``'s bytes ask for (``codec.spec_from_wire`` of the message)."""
    texts = dict.fromkeys(_TEXTS.values(), "")
    env: dict[str, str] = {}
    for number, kind, value in protowire.fields(data):
        name = _TEXTS.get(number)
        if name is not None:
            texts[name] = _text(number, kind, value)
        elif number == _ENV:
            entry = {1: "", 2: ""}
            for part, part_kind, part_value in protowire.fields(_message(number, kind, value)):
                if part in entry:
                    entry[part] = _text(part, part_kind, part_value)
            env[entry[1]] = entry[2]
    return JobSpec(
        script=texts["script"],
        partition=texts["partition"],
        idempotency_key=texts["idempotency_key"],
        name=texts["name"],
        working_dir=texts["working_dir"],
        std_out=texts["std_out"],
        std_err=texts["std_err"],
        env=env,
    )


def _message(number: int, kind: int, value: int | bytes) -> bytes:
    if kind != protowire.BYTES or not isinstance(value, bytes):
        raise ValueError(f"SubmitJobRequest field {number}: wire type {kind}, not a string or message")
    return value


class SubmitRequest:
    """What grpclib decodes SubmitJob's request into: the job it asks for."""

    __slots__ = ("spec",)

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec

    @classmethod
    def FromString(cls, data: bytes) -> SubmitRequest:  # the protobuf name grpclib calls
        return cls(read_spec(data))


class SubmitReply:
    """What grpclib encodes as SubmitJob's answer: a ``SubmitJobResponse`` with this job id."""

    __slots__ = ("job_id",)

    def __init__(self, job_id: JobId) -> None:
        self.job_id = job_id

    def SerializeToString(self) -> bytes:  # the protobuf name grpclib calls
        # proto3 leaves a zero out; job_id is field 1, wire type 0.
        return b"\x08" + protowire.varint(self.job_id) if self.job_id else b""


def handlers(mapping: dict[str, Handler]) -> dict[str, Handler]:
    """The generated handlers with SubmitJob's request and reply read and written here."""
    handler = mapping.get(SUBMIT_JOB)
    if handler is None:
        return mapping
    if handler.request_type is not api.SubmitJobRequest:
        raise TypeError(f"{SUBMIT_JOB} takes {handler.request_type}, not the SubmitJobRequest read here")
    return mapping | {SUBMIT_JOB: handler._replace(request_type=SubmitRequest, reply_type=SubmitReply)}
