"""Reading many jobs' usage in slices: the running steps listed by ``squeue -s``, the sstat calls
planned over them, and the answers combined (captured from Slurm 22.05: job 305139 running three
``srun --overlap`` steps, 305140 spinning in its batch script, 305141 held, 9999991 unknown;
``squeue --local -s -h -o %i -j 305139,305140,305141,9999991`` and ``sstat -a -n --parsable2 -o
JobID,TRESUsageInTot -j 305140,305139.0,305139.batch,305139.2,305141``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage
from wlmvk.redbox.slurm.cli import slices
from wlmvk.redbox.slurm.cli import sstat as stats
from wlmvk.redbox.slurm.cli.releases import Release
from wlmvk.redbox.slurm.cli.slices import Answered, Slice

SLURM_22_05 = Release(22, 5, 8)
CAPTURED = Path(__file__).resolve().parents[4] / "fixtures" / "slurm_captured"
AT = datetime(2026, 12, 3, 20, 10, tzinfo=UTC)
THREE, SPIN, HELD, UNKNOWN = JobId(305139), JobId(305140), JobId(305141), JobId(9999991)


def test_the_captured_listing_gives_the_running_steps_of_the_ids_asked() -> None:
    output = (CAPTURED / "squeue_steps.txt").read_text()
    assert slices.running_steps(output, [THREE, SPIN, HELD, UNKNOWN]) == {
        THREE: ["305139.0", "305139.1", "305139.2", "305139.batch"],
        SPIN: ["305140.batch"],
    }
    assert slices.running_steps(output, [SPIN]) == {SPIN: ["305140.batch"]}, "only the ids asked"
    assert slices.running_steps(output, []) == {}


@pytest.mark.parametrize(
    "line",
    ["307674_1.batch", "305139", "305139.", "x.0", "305139.0 extra", "|305139.0", "305139_[1-2].0"],
)
def test_rows_that_name_no_step_of_an_id_asked_are_left_out(line: str) -> None:
    assert slices.running_steps(line, [JobId(305139), JobId(307673)]) == {}


def test_an_array_is_listed_under_its_id_and_asked_whole() -> None:
    # Captured: array 351443 (sbatch's answer) with tasks _1 (job 351444) and _2 (job 351443)
    # running ``srun sleep``; sstat -a of the array's id reads both tasks, each under its own id.
    array = JobId(351443)
    listing = slices.running_steps((CAPTURED / "squeue_steps_array.txt").read_text(), [array])
    assert listing == {array: ["351443_2.0", "351443_2.batch", "351443_1.0", "351443_1.batch"]}
    assert slices.plan(listing, per_slice=2) == [Slice(whole=(array,))], "never split"
    rows = stats.step_rows((CAPTURED / "sstat_array.txt").read_text())
    usage = slices.combine([Answered(Slice(whole=(array,)), rows)], sampled=AT).usages
    assert usage[array] == JobUsage(array, timedelta(0), (10796 + 1652) * 1024, AT, 2), (
        "the task whose id it is"
    )


def test_the_captured_slice_mixes_a_whole_job_and_single_steps() -> None:
    part = Slice(whole=(SPIN, HELD), steps=("305139.0", "305139.batch", "305139.2"))
    assert part.targets() == ["305140", "305141", "305139.0", "305139.batch", "305139.2"]
    rows = stats.step_rows((CAPTURED / "sstat_slice.txt").read_text())
    combined = slices.combine([Answered(part, rows)], sampled=AT)
    assert combined.usages == {
        SPIN: JobUsage(SPIN, timedelta(0), 3160 * 1024, AT, 1),
        THREE: JobUsage(THREE, timedelta(0), (3112 + 28668 + 3176) * 1024, AT, 3),
    }
    assert (combined.unanswered, combined.reason) == (frozenset(), "")
    assert "305141" in (CAPTURED / "sstat_slice.stderr").read_text(), "the held job: stderr only"


def steps(job: int, count: int) -> list[str]:
    return [f"{job}.{i}" for i in range(count - 1)] + [f"{job}.batch"]


def test_jobs_that_fit_are_asked_whole_and_packed_up_to_the_slice_size() -> None:
    listing = {JobId(1): steps(1, 2), JobId(2): steps(2, 1), JobId(3): steps(3, 2), JobId(4): steps(4, 3)}
    assert slices.plan(listing, per_slice=3) == [
        Slice(whole=(JobId(1), JobId(2))),
        Slice(whole=(JobId(3),)),
        Slice(whole=(JobId(4),)),
    ]
    assert slices.plan(listing, per_slice=100) == [Slice(whole=(JobId(1), JobId(2), JobId(3), JobId(4)))]


def test_a_job_with_more_steps_than_a_slice_is_split_step_by_step() -> None:
    listing = {JobId(1): steps(1, 1), JobId(7): steps(7, 5), JobId(8): steps(8, 2)}
    assert slices.plan(listing, per_slice=2) == [
        Slice(whole=(JobId(1),), steps=("7.0",)),
        Slice(steps=("7.1", "7.2")),
        Slice(steps=("7.3", "7.batch")),
        Slice(whole=(JobId(8),)),
    ]


def test_every_step_is_in_exactly_one_slice_and_no_slice_is_too_big() -> None:
    listing = {JobId(j): steps(j, (j * 7) % 11 + 1) for j in range(1, 60)}
    for per_slice in (1, 2, 5, 25):
        plan = slices.plan(listing, per_slice=per_slice)
        asked: list[str] = []
        for part in plan:
            size = sum(len(listing[j]) for j in part.whole) + len(part.steps)
            assert 1 <= size <= per_slice
            asked += [s for j in part.whole for s in listing[j]] + list(part.steps)
        assert sorted(asked) == sorted(s for job_steps in listing.values() for s in job_steps)


def test_no_steps_no_slices_and_a_slice_holds_at_least_one_step() -> None:
    assert slices.plan({}, per_slice=25) == []
    with pytest.raises(ValueError, match="at least 1"):
        slices.plan({JobId(1): ["1.batch"]}, per_slice=0)


def row(job: int, step: str, cpu: float, memory: int = 1024) -> stats.StepUsage:
    return stats.StepUsage(JobId(job), step, timedelta(seconds=cpu), memory)


def test_a_failed_slice_loses_its_own_jobs_and_a_split_job_it_held_part_of() -> None:
    first = Slice(whole=(JobId(1),), steps=("7.0",))
    second = Slice(steps=("7.1", "7.batch"))
    third = Slice(whole=(JobId(8), JobId(9)))
    combined = slices.combine(
        [
            Answered(first, [row(1, "batch", 5), row(7, "0", 3)]),
            Answered(second, failure="sstat: no answer within the budget of 7 s (killed)"),
            Answered(third, [row(8, "batch", 2), row(8, "0", 1, 2048), row(9, "batch", 4)]),
        ],
        sampled=AT,
    )
    assert combined.usages == {
        JobId(1): JobUsage(JobId(1), timedelta(seconds=5), 1024, AT, 1),
        JobId(8): JobUsage(JobId(8), timedelta(seconds=3), 3072, AT, 2),
        JobId(9): JobUsage(JobId(9), timedelta(seconds=4), 1024, AT, 1),
    }, "job 7 lost a slice: a sum of part of its steps would be too low"
    assert combined.unanswered == {JobId(7)}
    assert combined.reason == "sstat: no answer within the budget of 7 s (killed)"


def test_the_reasons_of_several_failed_slices_are_named_once_each() -> None:
    failures = [
        "sstat: no answer within the budget of 7 s (not started)",
        "sstat: boom",
        "sstat: no answer within the budget of 7 s (not started)",
    ]
    parts = [Slice(whole=(JobId(i),)) for i in range(3)]
    combined = slices.combine(
        [Answered(p, failure=f) for p, f in zip(parts, failures, strict=True)], sampled=AT
    )
    assert combined.usages == {}
    assert combined.unanswered == {JobId(0), JobId(1), JobId(2)}
    assert combined.reason == "sstat: no answer within the budget of 7 s (not started); sstat: boom"


def test_a_job_whose_step_a_slice_could_not_read_is_unanswered_not_underreported() -> None:
    part = Slice(whole=(JobId(305139), JobId(305140)))
    output = (CAPTURED / "sstat_step_stopped.txt").read_text()
    stderr = (CAPTURED / "sstat_step_stopped.stderr").read_text()
    combined = slices.combine(
        [Answered(part, stats.step_rows(output), unreadable=stats.unreadable(stderr, release=SLURM_22_05))],
        sampled=AT,
    )
    assert combined.usages == {SPIN: JobUsage(SPIN, timedelta(0), 3160 * 1024, AT, 1)}
    assert combined.unanswered == {THREE}
    assert (
        combined.reason
        == "sstat: problem getting step_layout for StepId=305139.0: Communication connection failure"
    )
