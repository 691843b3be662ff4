"""Array and heterogeneous jobs read as one job, from squeue and sacct output captured on real Slurm.

Captured: ``sbatch --array=0-5%3`` of a script where task 1 sleeps and task 2 exits 3, and a
two-component heterogeneous job (pending); squeue with red-box's format while task 1 ran, after
the array ended (only task 5 was still in squeue), and sacct of both afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redbox.slurm.cli import arrays, sacct, squeue
from wlmvk.redbox.slurm.cli.releases import Release

SLURM_22_05 = Release(22, 5, 8)
CAPTURED = Path(__file__).resolve().parents[4] / "fixtures" / "slurm_captured"


def read(name: str) -> str:
    return (CAPTURED / name).read_text()


def by_id(states: list[JobState]) -> dict[int, JobState]:
    return {int(s.job_id): s for s in states}


@pytest.mark.parametrize(
    ("job_id", "count", "part"),
    [
        ("12", 1, False),
        ("12_3", 1, True),
        ("12+1", 1, True),
        ("12_[2-5%3]", 4, True),
        ("12_[0-3,7]", 5, True),
        ("12_[0-10:5]", 3, True),
    ],
)
def test_a_row_stands_for_its_tasks(job_id: str, count: int, part: bool) -> None:
    row = arrays.task(JobState(job_id=JobId(12), status=JobStatus.PENDING), job_id)
    assert (row.count, row.part) == (count, part)


def test_a_running_array_is_running_with_its_task_counts() -> None:
    rows = squeue.squeue_rows(read("squeue_arrays_running.txt"), release=SLURM_22_05, user="wlmvk")
    assert rows.skipped == ()
    states = by_id(rows.states)
    assert set(states) == {53481, 53484}
    array = states[53481]
    assert (array.status, array.idempotency_key, array.node_list) == (JobStatus.RUNNING, "key-array", "vm")
    assert array.reason == "array of 6 tasks: 4 pending, 1 running, 1 completed"
    het = states[53484]
    assert (het.status, het.reason) == (JobStatus.PENDING, "array of 2 tasks: 2 pending")


def test_a_lone_task_left_in_squeue_is_marked_as_part_of_an_array() -> None:
    (state,) = squeue.squeue_rows(read("squeue_arrays_ended.txt"), release=SLURM_22_05, user="wlmvk").states
    assert (state.job_id, state.status) == (53481, JobStatus.COMPLETED)
    assert arrays.combined(state), "red-box must ask accounting: squeue forgot the failed task"


def test_an_array_with_a_failed_task_failed() -> None:
    rows = sacct.sacct_rows(read("sacct_arrays.txt"))
    assert rows.skipped == ()
    states = by_id(rows.states)
    array = states[53481]
    assert (array.status, array.exit_code) == (JobStatus.FAILED, 3)
    assert array.reason == "array of 6 tasks: 5 completed, 1 failed"
    assert array.end_time is not None
    assert states[53484].status is JobStatus.PENDING


def test_an_array_whose_tasks_all_completed_completed() -> None:
    done = [
        arrays.task(JobState(job_id=JobId(7), status=JobStatus.COMPLETED, exit_code=0), f"7_{i}")
        for i in range(3)
    ]
    whole = arrays.combine(done)
    assert (whole.status, whole.exit_code, whole.reason) == (
        JobStatus.COMPLETED,
        0,
        "array of 3 tasks: 3 completed",
    )
