"""JobStates in bytes (wire.states): the same bytes as the message classes, decoded once per change."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.redboxclient.test_client import serve, stop
from wlmvk._proto import api
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redboxclient.client import RedBoxClient
from wlmvk.wire import codec
from wlmvk.wire import states as wire_states
from wlmvk.wire.states import EncodedStates, StatesDecoder, StatesEncoder, frame, split

STATES = [
    JobState(job_id=JobId(7), status=JobStatus.PENDING, reason="JobHeldUser", idempotency_key="uid-7"),
    JobState(
        job_id=JobId(300_000),
        status=JobStatus.FAILED,
        exit_code=3,
        submit_time=datetime(2026, 12, 3, 16, 0, tzinfo=UTC),
        std_out="/work/a" * 40,
        name="x",
    ),
    JobState(job_id=JobId(9), status=JobStatus.COMPLETED, exit_code=0),
]


def test_the_encoding_is_the_message_classes_encoding() -> None:
    expected = bytes(api.JobStatesResponse(states=[codec.state_to_wire(s) for s in STATES]))
    assert StatesEncoder().encode(STATES) == expected
    assert split(expected) == [bytes(codec.state_to_wire(s)) for s in STATES]


def test_decoding_gives_the_states_back_and_skips_unknown_fields() -> None:
    data = frame(bytes(codec.state_to_wire(s)) for s in STATES)
    unknown = b"\x10\x96\x01" + b"\x1a\x02hi" + b"\x25\x00\x00\x00\x00" + b"\x29" + bytes(8)
    assert StatesDecoder().decode(unknown + data) == STATES


WHEN = datetime(2026, 12, 5, 19, 0, 1, 123456, tzinfo=UTC)
EVERY_FIELD = [
    JobState(job_id=JobId(0), status=JobStatus.COMPLETED, exit_code=0),
    JobState(job_id=JobId(2**40), status=JobStatus.COMPLETED, exit_code=0, end_time=WHEN),
    *(
        JobState(job_id=JobId(100 + n), status=status, exit_code=n if status.terminal else None)
        for n, status in enumerate(JobStatus)
    ),
    JobState(job_id=JobId(5), status=JobStatus.FAILED, exit_code=-1, signal=9, reason="NonZeroExitCode"),
    JobState(job_id=JobId(6), status=JobStatus.CANCELLED, exit_code=2**31 - 1, signal=15),
    JobState(
        job_id=JobId(24110042),
        status=JobStatus.RUNNING,
        reason="None",
        submit_time=datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=UTC),
        start_time=WHEN,
        end_time=WHEN + timedelta(days=400, microseconds=1),
        std_out="/home/ü/slurm-%j.out",
        std_err="/home/ü/err",
        working_dir="/work/日本",
        partition="debug",
        node_list="node[01-04]",
        name="a" * 300,
        idempotency_key="5c1b4a2e-0d7e-4b9a-9b1e-2f7f0c3c9a11",
    ),
]


@pytest.mark.parametrize("state", EVERY_FIELD, ids=lambda s: f"{s.job_id}-{s.status.name}")
def test_a_state_is_written_and_read_as_the_message_classes_do(state: JobState) -> None:
    expected = bytes(codec.state_to_wire(state))
    assert wire_states.write_state(state) == expected
    assert wire_states.read_state(expected) == codec.state_from_wire(api.JobState().parse(expected))
    assert wire_states.read_state(expected) == state


def test_a_status_this_client_does_not_know_reads_unknown() -> None:
    piece = b"\x08\x07\x10\x63"  # job 7, status 99
    assert wire_states.read_state(piece) == JobState(job_id=JobId(7), status=JobStatus.UNKNOWN)
    assert codec.state_from_wire(api.JobState().parse(piece)).status is JobStatus.UNKNOWN


@pytest.mark.parametrize(
    ("piece", "message"),
    [
        (b"\x0a\x01x", "field 1: wire type 2, not a varint"),
        (b"\x4a\x02\xff\xfe", "can't decode"),
        (b"\x30\x01", "field 6: wire type 0, not a string or message"),
        (b"\x32\x02\x0a\x00", "Timestamp field 1: wire type 2, not a varint"),
    ],
)
def test_a_piece_with_a_field_of_the_wrong_kind_is_refused(piece: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        wire_states.read_state(piece)


def test_a_truncated_answer_is_refused() -> None:
    data = StatesEncoder().encode(STATES)
    with pytest.raises(ValueError, match="truncated"):
        split(data[:-3])


def test_only_changed_states_are_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[int] = []
    real = wire_states.read_state

    def counting(piece: bytes) -> JobState:
        state = real(piece)
        decoded.append(state.job_id)
        return state

    monkeypatch.setattr(wire_states, "read_state", counting)
    encoder, decoder = StatesEncoder(), StatesDecoder()
    assert decoder.decode(encoder.encode(STATES)) == STATES
    assert sorted(decoded) == [7, 9, 300_000]
    decoded.clear()
    changed = [STATES[0], replace(STATES[1], status=JobStatus.CANCELLED), STATES[2]]
    assert decoder.decode(encoder.encode(changed)) == changed
    assert decoded == [300_000]


class StatesRedBox(api.WorkloadManagerBase):  # type: ignore[misc]
    async def workload_info(self, request: api.WorkloadInfoRequest) -> api.WorkloadInfoResponse:
        return api.WorkloadInfoResponse(name="slurm", version="22.05.8", extensions=["JobStates"])

    async def job_states(self, request: api.JobStatesRequest) -> api.JobStatesResponse:
        return EncodedStates(StatesEncoder().encode(s for s in STATES if s.job_id in request.job_ids))


async def test_over_grpc_the_client_reads_what_red_box_framed(socket_path: str) -> None:
    server = await serve(StatesRedBox(), socket_path)
    client = RedBoxClient(socket_path)
    try:
        assert await client.states([JobId(9), JobId(7)]) == {JobId(7): STATES[0], JobId(9): STATES[2]}
    finally:
        await client.close()
        await stop(server)
