"""``sacct`` -> the states of jobs from accounting, and the steps of one job (pure).

``sacct -P`` prints its fields alike on 22.05, 24.11 and 26.05, the exit
code always as ``code:signal``. It has no output paths on 22.05, so a state
read here carries none (red-box keeps the paths it saw in squeue).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from wlmvk.core.jobs import JobId, JobStatus
from wlmvk.redbox.slurm.cli import arrays, exits, rows, values

FIELDS = (
    "JobID",
    "State",
    "Reason",
    "ExitCode",
    "Comment",
    "Partition",
    "NodeList",
    "Submit",
    "Start",
    "End",
    "WorkDir",
    "JobName",
)
FORMAT = ",".join(FIELDS)

# sacct's names of the squeue fields it has (it has no STDOUT/STDERR).
_AS_SQUEUE = {
    "ExitCode": "exit_code",
    "Submit": "SubmitTime",
    "Start": "StartTime",
    "End": "EndTime",
    "JobName": "Name",
}


def sacct_rows(output: str, *, sep: str = rows.SEP) -> rows.Rows:
    """Parse ``sacct -X -n --parsable2 --delimiter=SEP -o FORMAT``: one allocation per row.

    Job steps (``12.batch``) are skipped should they appear; the rows of an array's
    tasks (``12_3``) or a heterogeneous job's components (``12+0``) make one state.
    """
    found, skipped = rows.split_rows(output, len(FIELDS), sep, trailing=False)
    names = [_AS_SQUEUE.get(name, name) for name in FIELDS]
    groups: dict[JobId, list[arrays.Task]] = {}
    for text, fields in found:
        row = dict(zip(names, fields, strict=True))
        if "." in row["JobID"]:
            continue
        try:
            state = rows.job_state(row, exits.pair)
        except ValueError:
            skipped.append(text)
            continue
        groups.setdefault(state.job_id, []).append(arrays.task(state, row["JobID"]))
    return rows.Rows([arrays.combine(tasks) for tasks in groups.values()], tuple(skipped))


@dataclass(frozen=True)
class StepRecord:
    """One line of ``sacct -p -n -o start,end,exitcode,state,jobid,jobname``."""

    id: str
    name: str
    exit_code: int
    status: JobStatus
    start_time: datetime | None
    end_time: datetime | None


def sacct_steps(output: str) -> list[StepRecord]:
    """Parse the original red-box's JobSteps query (``-p`` leaves a trailing ``|``)."""
    steps = []
    for line in output.splitlines():
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) < 6:
            raise ValueError(f"sacct step line has {len(fields)} fields: {line!r}")
        start, end, exit_code, state, job_id, name = fields[:6]
        steps.append(
            StepRecord(
                id=job_id,
                name=name,
                exit_code=exits.pair(exit_code)[0],
                status=values.job_status(state),
                start_time=values.timestamp(start),
                end_time=values.timestamp(end),
            )
        )
    return steps
