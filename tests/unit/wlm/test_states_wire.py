"""JobStates in bytes (wire.states): the same bytes as the message classes, decoded once per change."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from tests.unit.wlm.test_client import serve, socket_path, stop  # noqa: F401 (fixture)
from wlmvk._proto import api
from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.wire import codec
from wlmvk.wire import states as wire_states
from wlmvk.wire.states import EncodedStates, StatesDecoder, StatesEncoder, frame, split
from wlmvk.wlm.client import RedBoxClient

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


def test_a_truncated_answer_is_refused() -> None:
    data = StatesEncoder().encode(STATES)
    with pytest.raises(ValueError, match="truncated"):
        split(data[:-3])


def test_only_changed_states_are_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[int] = []
    real = codec.state_from_wire

    def counting(wire: api.JobState) -> JobState:
        decoded.append(wire.job_id)
        return real(wire)

    monkeypatch.setattr(wire_states.codec, "state_from_wire", counting)
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


async def test_over_grpc_the_client_reads_what_red_box_framed(socket_path: str) -> None:  # noqa: F811
    server = await serve(StatesRedBox(), socket_path)
    client = RedBoxClient(socket_path)
    try:
        assert await client.states([JobId(9), JobId(7)]) == {JobId(7): STATES[0], JobId(9): STATES[2]}
    finally:
        await client.close()
        await stop(server)
