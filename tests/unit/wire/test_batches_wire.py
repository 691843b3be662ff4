"""SubmitJobs read and written from bytes (wire.batches): what the message classes read and write."""

from __future__ import annotations

import pytest

from tests.unit.wire.test_submits_wire import SPECS, generated, generated_reading
from wlmvk._proto import api
from wlmvk.wire import batches
from wlmvk.wire.batches import Outcome

OUTCOMES = [
    Outcome(job_id=17),
    Outcome(status=3, message="SubmitJob: invalid partition name specified: ü"),
    Outcome(),
    Outcome(job_id=2**40, status=0, message=""),
    Outcome(status=14, message="slurmctld is down"),
]


def test_a_request_is_written_and_read_as_the_message_classes_do() -> None:
    written = batches.write_specs(SPECS)
    message = api.SubmitJobsRequest(jobs=[generated(spec) for spec in SPECS])
    assert written == bytes(message)
    assert batches.read_specs(bytes(message)) == SPECS
    parsed = api.SubmitJobsRequest().parse(written)
    assert [generated_reading(bytes(job)) for job in parsed.jobs] == SPECS


def test_an_empty_request_is_no_bytes_and_no_jobs() -> None:
    assert batches.write_specs([]) == b""
    assert batches.read_specs(b"") == []


def test_answers_are_written_and_read_as_the_message_classes_do() -> None:
    written = batches.write_outcomes(OUTCOMES)
    message = api.SubmitJobsResponse(
        results=[api.SubmitJobsResult(job_id=o.job_id, status=o.status, message=o.message) for o in OUTCOMES]
    )
    assert written == bytes(message)
    assert batches.read_outcomes(bytes(message)) == OUTCOMES
    assert batches.SubmitJobsReply.FromString(written).outcomes == OUTCOMES


def test_unknown_fields_are_skipped() -> None:
    unknown = b"\x50\x96\x01" + b"\x5a\x02hi"
    result = b"\x08\x11" + unknown + b"\x1a\x02no"
    data = unknown + b"\x0a" + bytes([len(result)]) + result + unknown
    assert batches.read_outcomes(data) == [Outcome(job_id=17, message="no")]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"\x08\x01", "SubmitJobsResponse field 1: wire type 0"),
        (b"\x0a\x02\x0a\x00", "SubmitJobsResult field 1: wire type 2, not a varint"),
        (b"\x0a\x02\x18\x01", "SubmitJobsResult field 3: wire type 0"),
    ],
)
def test_a_field_of_the_wrong_wire_type_is_refused(data: bytes, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        batches.read_outcomes(data)
