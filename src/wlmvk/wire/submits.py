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

The client does the same from its side (``redboxclient.client``, about 0.3 ms of the
kubelet's CPU per pod as messages): ``write_spec`` writes the request's bytes
straight from the ``JobSpec``, and ``read_job_id`` reads the answer's one
varint. Both write and read exactly what the message classes do (empty
strings and map entries' empty keys and values left out, fields in number
order, the environment in its order).

The service hands grpclib these two classes as SubmitJob's request and
reply types (``handlers``), and the client hands them to its stub as the
request it sends and the answer it reads; every other rpc keeps the
generated messages.
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


# The same fields in the order the message classes write them; the client leaves client_id empty.
_WRITTEN = tuple((bytes([number << 3 | protowire.BYTES]), name) for number, name in _TEXTS.items() if name)
_ENV_KEY = bytes([_ENV << 3 | protowire.BYTES])


def write_spec(spec: JobSpec) -> bytes:
    """The bytes of the ``SubmitJobRequest`` for ``spec``, as the generated message writes them."""
    parts = []
    for key, name in _WRITTEN:
        text: str = getattr(spec, name)
        if text:
            parts.append(protowire.delimited(key, text.encode()))
    for name, value in spec.env.items():
        entry = (protowire.delimited(b"\x0a", name.encode()) if name else b"") + (
            protowire.delimited(b"\x12", value.encode()) if value else b""
        )
        parts.append(protowire.delimited(_ENV_KEY, entry))
    return b"".join(parts)


def read_job_id(data: bytes) -> JobId:
    """The job id of a ``SubmitJobResponse``'s bytes (its last field 1; unknown fields skipped)."""
    job_id = 0
    for number, kind, value in protowire.fields(data):
        if number == 1:
            job_id = protowire.signed(protowire.as_varint("SubmitJobResponse", number, kind, value), 64)
    return JobId(job_id)


def _text(number: int, kind: int, value: int | bytes) -> str:
    return protowire.as_bytes("SubmitJobRequest", number, kind, value).decode()


def read_spec(data: bytes) -> JobSpec:
    """The job a ``SubmitJobRequest``'s bytes ask for, as the generated message reads them."""
    texts = dict.fromkeys(_TEXTS.values(), "")
    env: dict[str, str] = {}
    for number, kind, value in protowire.fields(data):
        name = _TEXTS.get(number)
        if name is not None:
            texts[name] = _text(number, kind, value)
        elif number == _ENV:
            entry = {1: "", 2: ""}
            pair = protowire.as_bytes("SubmitJobRequest", number, kind, value)
            for part, part_kind, part_value in protowire.fields(pair):
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


class SubmitRequest:
    """SubmitJob's request as grpclib reads it on red-box's side and writes it on the client's: a job."""

    __slots__ = ("spec",)

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec

    @classmethod
    def FromString(cls, data: bytes) -> SubmitRequest:  # the protobuf name grpclib calls
        return cls(read_spec(data))

    def SerializeToString(self) -> bytes:  # the protobuf name grpclib calls
        return write_spec(self.spec)


class SubmitReply:
    """SubmitJob's answer as grpclib writes it on red-box's side and reads it on the client's: a job id."""

    __slots__ = ("job_id",)

    def __init__(self, job_id: JobId) -> None:
        self.job_id = job_id

    def SerializeToString(self) -> bytes:  # the protobuf name grpclib calls
        # proto3 leaves a zero out; job_id is field 1, wire type 0.
        return b"\x08" + protowire.varint(self.job_id) if self.job_id else b""

    @classmethod
    def FromString(cls, data: bytes) -> SubmitReply:  # the protobuf name grpclib calls
        return cls(read_job_id(data))


def handlers(mapping: dict[str, Handler]) -> dict[str, Handler]:
    """The generated handlers with SubmitJob's request and reply read and written here."""
    handler = mapping.get(SUBMIT_JOB)
    if handler is None:
        return mapping
    if handler.request_type is not api.SubmitJobRequest:
        raise TypeError(f"{SUBMIT_JOB} takes {handler.request_type}, not the SubmitJobRequest read here")
    return mapping | {SUBMIT_JOB: handler._replace(request_type=SubmitRequest, reply_type=SubmitReply)}
