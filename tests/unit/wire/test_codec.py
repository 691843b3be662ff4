"""core values survive the wire, and old servers' answers read sensibly."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from wlmvk._proto import api
from wlmvk.core.jobs import (
    ContainerJobSpec,
    ContainerOptions,
    Feature,
    JobId,
    JobState,
    JobStatus,
    PartitionResources,
)
from wlmvk.wire import codec

T0 = datetime(2026, 12, 2, 14, 43, 30, tzinfo=UTC)


@pytest.mark.parametrize("status", list(JobStatus))
def test_every_status_round_trips(status: JobStatus) -> None:
    assert codec.status_from_wire(codec.status_to_wire(status)) is status


def test_state_round_trip_through_bytes() -> None:
    state = JobState(
        job_id=JobId(12),
        status=JobStatus.FAILED,
        reason="NonZeroExitCode",
        exit_code=3,
        signal=0,
        submit_time=T0,
        start_time=T0,
        end_time=T0,
        std_out="/w/o",
        std_err="/w/e",
        working_dir="/w",
        partition="debug",
        node_list="vm",
        name="n",
        idempotency_key="k",
    )
    wire = api.JobState().parse(bytes(codec.state_to_wire(state)))
    assert codec.state_from_wire(wire) == state


def test_unset_times_and_exit_code_of_a_running_job() -> None:
    state = JobState(job_id=JobId(1), status=JobStatus.RUNNING)
    back = codec.state_from_wire(api.JobState().parse(bytes(codec.state_to_wire(state))))
    assert back == state
    assert back.start_time is None
    assert back.exit_code is None


def test_original_job_info() -> None:
    info = api.JobInfo(id="5", exit_code="0:15", status=api.JobStatus.CANCELLED, std_out="/w/o")
    state = codec.state_from_job_info(info)
    assert (state.job_id, state.status, state.exit_code, state.signal) == (5, JobStatus.CANCELLED, 0, 15)
    running = codec.state_from_job_info(api.JobInfo(id="6", exit_code="0:0", status=api.JobStatus.UNKNOWN))
    assert running.exit_code is None


def test_container_specs_round_trip() -> None:
    container = ContainerJobSpec(
        image="docker://x", nodes=2, options=ContainerOptions(binds=("/a",), ipc=True), account="a", qos="q"
    )
    wire = api.SubmitJobContainerRequest().parse(bytes(codec.container_spec_to_wire(container)))
    assert codec.container_spec_from_wire(wire) == container


def test_resources_unlimited_wall_time_old_and_new() -> None:
    res = PartitionResources(
        name="u", nodes=1, cpu_per_node=2, mem_per_node=100, wall_time=None, features=(Feature("avx2"),)
    )
    wire = codec.resources_to_wire(res)
    assert wire.wall_time == codec.UNLIMITED_WALL_TIME
    assert wire.wall_time_unlimited
    assert codec.resources_from_wire("u", wire) == res
    original = api.ResourcesResponse(nodes=1, cpu_per_node=2, mem_per_node=-1, wall_time=0)
    old = codec.resources_from_wire("u", original)
    assert old.wall_time is None
    assert old.mem_per_node == -1, "no MaxMemPerNode: no limit known, not 0 MB"
