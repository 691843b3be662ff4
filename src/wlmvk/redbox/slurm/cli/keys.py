"""The lookup by key's reading of Slurm: each job's id and the wlmvk key in its comment (pure).

red-box's index of idempotency keys (``redbox.jobs``) is rebuilt from every job of its user that
slurmctld holds (``squeue -t all``: finished and cancelled jobs too, until MinJobAge) and the
recent accounting, at most once a minute while keyed submissions arrive. After a burst that is
tens of thousands of rows; read as whole job states (fifteen fields, timestamps parsed, arrays
combined) a rebuild took red-box about 0.6 s of CPU in the middle of the submissions it serves,
and squeue and sacct formatted every field. The index needs two: these formats ask for them
alone. Rows are cut as ``rows`` cuts them (a comment with a newline spans lines); a job's id is
its leading id (an array's task and a het job's component are their job's, as ``arrays`` reads
them), and of two jobs with one key the newer is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from wlmvk.core.jobs import JobId
from wlmvk.redbox.slurm.cli import rows, values

SQUEUE_FORMAT = f"JobArrayID:{rows.SEP},Comment:{rows.SEP}"
"""``squeue -O``: the job id as sacct prints it (``12``, ``12_3``, ``12+0``), then the comment."""

SACCT_FORMAT = "JobID,Comment"
"""``sacct -o`` (with ``--parsable2 --delimiter=SEP``)."""


@dataclass(frozen=True)
class Keys:
    """Each key's newest job, and the raw text of every row without its two fields."""

    jobs: dict[str, JobId]
    skipped: tuple[str, ...] = ()


def squeue_keys(output: str) -> Keys:
    """Read ``squeue -h -O SQUEUE_FORMAT``."""
    return _keys(output, trailing=True)


def sacct_keys(output: str) -> Keys:
    """Read ``sacct -X -n --parsable2 --delimiter=SEP -o SACCT_FORMAT``."""
    return _keys(output, trailing=False)


def _keys(output: str, *, trailing: bool) -> Keys:
    found, skipped = rows.split_rows(output, 2, rows.SEP, trailing=trailing)
    jobs: dict[str, JobId] = {}
    for _, (job, comment) in found:
        key = values.idempotency_key(comment)
        if not key or "." in job:  # no key of ours; a step's row (sacct -X prints none)
            continue
        job_id = JobId(values.leading_id(job))  # a row opens with a job id (``rows``)
        if job_id >= jobs.get(key, 0):
            jobs[key] = job_id
    return Keys(jobs, tuple(skipped))
