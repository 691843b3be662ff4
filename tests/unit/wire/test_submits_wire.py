"""SubmitJob read and written from bytes (wire.submits): what the message classes read and write.

The reference is the generated ``SubmitJobRequest``: what any protobuf client (the original
red-box's, the Go contract's) writes and reads, so red-box and the client must match its bytes.
"""

from __future__ import annotations

import dataclasses

import pytest
from grpclib.const import Cardinality, Handler

from wlmvk._proto import api
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.wire import submits

SPECS = [
    JobSpec(script=""),
    JobSpec(script="#!/bin/sh\ntrue\n", partition="debug", idempotency_key="0f1e2d3c-uid"),
    JobSpec(
        script="#!/bin/bash\n#SBATCH --time=5\necho 'ü ∂ 日本'\n" + "x" * 70_000,
        partition="gpu",
        idempotency_key="k",
        name="job ü",
        working_dir="/home/u/work",
        std_out="%j.out",
        std_err="%j.err",
        env={"A": "1", "EMPTY": "", "": "no name", "UNICODE": "日本", "LONG": "v" * 300},
    ),
]


# The message's names for JobSpec's fields where they differ (proto/wlm.proto).
_MESSAGE_NAMES = {"name": "job_name"}


def generated(spec: JobSpec) -> api.SubmitJobRequest:
    """The generated message a protobuf client sends for ``spec``, field for field."""
    values = {_MESSAGE_NAMES.get(f.name, f.name): getattr(spec, f.name) for f in dataclasses.fields(spec)}
    return api.SubmitJobRequest(**{**values, "env": dict(spec.env)})


def generated_reading(data: bytes) -> JobSpec:
    """The job the generated message reads from ``data``."""
    wire = api.SubmitJobRequest().parse(data)
    return JobSpec(
        **{f.name: getattr(wire, _MESSAGE_NAMES.get(f.name, f.name)) for f in dataclasses.fields(JobSpec)}
    )


@pytest.mark.parametrize("spec", SPECS)
def test_a_request_reads_as_the_message_classes_read_it(spec: JobSpec) -> None:
    wire = generated(spec)
    wire.client_id = "the original's client id"
    data = bytes(wire)
    assert submits.read_spec(data) == generated_reading(data) == spec


@pytest.mark.parametrize(
    "spec",
    [
        *SPECS,
        JobSpec(script="s", env={"K": "", "": "v", "Z": "z", "A": "a"}),
        JobSpec(script="", partition="p", env={"": ""}),
        JobSpec(script="s", std_err="e", working_dir="w"),
    ],
)
def test_a_request_is_written_as_the_message_classes_write_it(spec: JobSpec) -> None:
    written = submits.write_spec(spec)
    assert written == bytes(generated(spec))
    assert submits.SubmitRequest(spec).SerializeToString() == written
    assert generated_reading(written) == spec


def test_unknown_fields_are_skipped_and_a_repeated_field_keeps_its_last_value() -> None:
    data = bytes(generated(SPECS[1]))
    unknown = b"\x50\x96\x01" + b"\x5a\x02hi" + b"\x65\x00\x00\x00\x00" + b"\x69" + bytes(8)
    again = b"\x12\x03gpu" + b"\x4a\x06\x0a\x01A\x12\x01x" + b"\x4a\x06\x0a\x01A\x12\x01y"
    data = unknown + data + unknown + again
    read = submits.read_spec(data)
    assert read == generated_reading(data)
    assert (read.partition, read.script, dict(read.env)) == ("gpu", SPECS[1].script, {"A": "y"})


def test_a_map_entry_without_key_or_value_reads_as_empty_text() -> None:
    data = b"\x4a\x00" + b"\x4a\x03\x0a\x01K"
    assert submits.read_spec(data) == generated_reading(data)
    assert dict(submits.read_spec(data).env) == {"": "", "K": ""}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"\x0a\x02\xff\xfe", "utf-8"),  # a script that is not UTF-8
        (b"\x08\x05", "field 1: wire type 0"),  # the script as a number
        (b"\x0a\x05ab", "truncated"),
        (b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "varint"),
        (b"\x00\x01", "field number 0"),
        (b"\x0b\x0c", "wire type 3"),  # a group
        (b"\x4a\x03\x0a\x01", "truncated"),  # a map entry cut short
        (b"\x48\x01", "field 9: wire type 0"),
    ],
)
def test_a_request_the_message_classes_refuse_is_refused(data: bytes, says: str) -> None:
    with pytest.raises(RuntimeError):
        api.SubmitJobRequest().parse(data)
    with pytest.raises(ValueError, match=says):
        submits.read_spec(data)


@pytest.mark.parametrize("job_id", [0, 1, 127, 128, 300_000, 2**31, 2**40, 2**63 - 1, -1])
def test_the_answer_is_the_message_classes_answer(job_id: int) -> None:
    expected = bytes(api.SubmitJobResponse(job_id=job_id))
    assert submits.SubmitReply(JobId(job_id)).SerializeToString() == expected
    assert api.SubmitJobResponse().parse(expected).job_id == job_id


@pytest.mark.parametrize("job_id", [0, 1, 127, 128, 300_000, 2**31, 2**40, 2**63 - 1, -1, -(2**63)])
def test_the_answer_reads_as_the_message_classes_read_it(job_id: int) -> None:
    data = bytes(api.SubmitJobResponse(job_id=job_id))
    assert submits.read_job_id(data) == submits.SubmitReply.FromString(data).job_id == job_id
    unknown = b"\x12\x02hi" + b"\x18\x07"
    again = b"\x08\x05"
    assert submits.read_job_id(unknown + data + unknown) == job_id
    assert submits.read_job_id(data + again) == api.SubmitJobResponse().parse(data + again).job_id == 5


@pytest.mark.parametrize(
    ("data", "says"),
    [(b"\x0a\x01x", "field 1: wire type 2"), (b"\x08", "varint"), (b"\x08\x80", "varint")],
)
def test_an_answer_the_message_classes_refuse_is_refused(data: bytes, says: str) -> None:
    with pytest.raises(RuntimeError, match="does not match"):
        api.SubmitJobResponse().parse(data)
    with pytest.raises(ValueError, match=says):
        submits.read_job_id(data)


def test_only_submit_job_is_read_here() -> None:
    async def func(stream: object) -> None: ...

    mapping = {
        submits.SUBMIT_JOB: Handler(
            func, Cardinality.UNARY_UNARY, api.SubmitJobRequest, api.SubmitJobResponse
        ),
        "/api.WorkloadManager/CancelJob": Handler(
            func, Cardinality.UNARY_UNARY, api.CancelJobRequest, api.CancelJobResponse
        ),
    }
    handled = submits.handlers(mapping)
    assert handled[submits.SUBMIT_JOB] == Handler(
        func, Cardinality.UNARY_UNARY, submits.SubmitRequest, submits.SubmitReply
    )
    assert handled["/api.WorkloadManager/CancelJob"] == mapping["/api.WorkloadManager/CancelJob"]
    assert submits.SubmitRequest.FromString(bytes(generated(SPECS[2]))).spec == SPECS[2]
