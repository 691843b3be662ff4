"""sstat output -> each running job's usage (captured from Slurm 22.05: sstat -a of a job running
``srun`` (batch + step 0), a job spinning in its batch script, a held job and an unknown id)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage
from wlmvk.redbox.slurm.cli import sstat as stats
from wlmvk.redbox.slurm.cli.releases import Release

SLURM_22_05 = Release(22, 5, 8)
CAPTURED = Path(__file__).resolve().parents[4] / "fixtures" / "slurm_captured"
AT = datetime(2026, 12, 3, 15, 0, tzinfo=UTC)


def test_captured_rows_sum_per_job_and_absent_jobs_stay_absent() -> None:
    output = (CAPTURED / "sstat_running.txt").read_text()
    usage = stats.job_usage(stats.step_rows(output), sampled=AT)
    assert usage == {
        JobId(37721): JobUsage(JobId(37721), timedelta(seconds=1), (10316 + 1496) * 1024, AT, 2),
        JobId(37724): JobUsage(JobId(37724), timedelta(seconds=1), 1532 * 1024, AT, 1),
    }
    # the held job and the unknown id were only named on stderr
    assert "37726" in (CAPTURED / "sstat_running.stderr").read_text()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("00:00:03", timedelta(seconds=3)),
        ("01:02:03", timedelta(hours=1, minutes=2, seconds=3)),
        ("2-01:02:03", timedelta(days=2, hours=1, minutes=2, seconds=3)),
        ("02:03.250", timedelta(minutes=2, seconds=3.25)),
        ("00:00:01.5", timedelta(seconds=1.5)),
        ("", None),
        ("12", None),
        ("x:00:01", None),
        ("a-00:00:01", None),
    ],
)
def test_cpu_time(text: str, expected: timedelta | None) -> None:
    assert stats.cpu_time(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1464K", 1464 * 1024), ("10.30M", round(10.30 * 1024**2)), ("2G", 2 * 1024**3), ("512", 512), ("0", 0)],
)
def test_sizes_are_bytes_scaled_by_their_unit(text: str, expected: int) -> None:
    assert stats.size_bytes(text) == expected


def test_unreadable_rows_are_left_out() -> None:
    output = "\n".join(
        [
            "12.batch|cpu=00:00:02,mem=1M",
            "garbage",
            "13.batch|cpu=,mem=1M",  # no CPU time: not a sample
            "14.batch|cpu=00:00:01",  # no memory
            "15_3.batch|cpu=00:00:04,mem=2K",  # an array task: its array job's id
            "",
        ]
    )
    usage = stats.job_usage(stats.step_rows(output), sampled=AT)
    assert usage == {
        JobId(12): JobUsage(JobId(12), timedelta(seconds=2), 1024**2, AT, 1),
        JobId(15): JobUsage(JobId(15), timedelta(seconds=4), 2048, AT, 1),
    }


def test_a_step_that_did_not_answer_makes_its_job_unreadable() -> None:
    # Captured with job 305139's step 0 slurmstepd stopped: sstat waited MessageTimeout (10 s),
    # named the step on stderr, exited 0 and printed the job's other steps.
    output = (CAPTURED / "sstat_step_stopped.txt").read_text()
    stderr = (CAPTURED / "sstat_step_stopped.stderr").read_text()
    assert [(r.job_id, r.step) for r in stats.step_rows(output)] == [
        (JobId(305139), "batch"),
        (JobId(305139), "1"),
        (JobId(305139), "2"),
        (JobId(305140), "batch"),
    ]
    assert stats.unreadable(stderr, release=SLURM_22_05) == {
        JobId(
            305139
        ): "sstat: problem getting step_layout for StepId=305139.0: Communication connection failure"
    }, "a held job (No steps running) is not unreadable: it is absent"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "sstat: error: problem getting step_layout for 12.3: Socket timed out",
            {JobId(12): "sstat: problem getting step_layout for 12.3: Socket timed out"},
        ),
        (
            "sstat: error: problem getting step_layout for StepId=12.batch: boom",
            {JobId(12): "sstat: problem getting step_layout for StepId=12.batch: boom"},
        ),
        ("sstat: error: couldn't get steps for job 44", {JobId(44): "sstat: couldn't get steps for job 44"}),
        ("sstat: error: couldn't get info for job 45", {JobId(45): "sstat: couldn't get info for job 45"}),
        ("sstat: error: No steps running for job 46", {}),
        ("sstat: error: slurm_receive_msgs: [[localhost]:6818] failed: Socket timed out", {}),
        ("", {}),
    ],
)
def test_unreadable_lines(line: str, expected: dict[JobId, str]) -> None:
    assert stats.unreadable(line, release=SLURM_22_05) == expected
