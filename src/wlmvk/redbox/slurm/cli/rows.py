"""Cutting a job listing (``squeue -O``, ``sacct --parsable2``) into one row per job (pure).

Slurm prints a job's name, comment and paths as given, newlines and all,
and no character is beyond what a user may give (NUL aside, which argv
cannot carry). So job rows are read one job at a time: a row starts at a
line opening with a job id and its separator, a line that does not is the
continuation of a field with a newline, and a row without exactly its
fields is skipped and reported (``Rows.skipped``), never the whole answer
failing. Only control characters in a field can break a row, and red-box
refuses them in what it submits (``scripts.check_texts``) and reads only
its own user's jobs. ``--json`` would be exact, but on 22.05 it ignores
``-j``/``-u``/``-t`` and prints about 3 KB per job of the whole cluster
(25 times the bytes and 9 times the time of ``-O`` for 300 jobs here).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.redbox.slurm.cli import values

SEP = "\x1f"
"""Field separator of the squeue -O and sacct formats (ASCII unit separator)."""

UNREADABLE_REASON = "Slurm's row of this job cannot be read (a control character in a name, comment or path)"


@dataclass(frozen=True)
class Rows:
    """The jobs read from one answer, and the raw text of every row that could not be read."""

    states: list[JobState]
    skipped: tuple[str, ...] = ()

    def unreadable(self) -> list[JobState]:
        """An UNKNOWN state for each job whose row was skipped and that no readable row answers."""
        read = {state.job_id for state in self.states}
        ids = dict.fromkeys(job_id for text in self.skipped if (job_id := _row_id(text)) not in read)
        return [
            JobState(job_id=job_id, status=JobStatus.UNKNOWN, reason=UNREADABLE_REASON)
            for job_id in ids
            if job_id is not None
        ]


def _row_id(text: str) -> JobId | None:
    match = re.match(r"\d+", text)
    return JobId(int(match.group())) if match else None


# A row opens with a job id (``12``, ``12_3``, ``12_[1-3%2]``, ``12+0``, ``12.batch``) and its separator.
_ROW_START = r"\d+(?:[_+.][^\n{sep}]*)?{sep}"


def split_rows(
    output: str, count: int, sep: str, *, trailing: bool
) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """Cut an answer into rows (their text and ``count`` fields); the rest is returned as skipped text.

    ``trailing``: every field, the last included, ends with ``sep`` (squeue -O).
    A line that does not open a row continues the row before it: a field
    with a newline spans lines.
    """
    start = re.compile(_ROW_START.format(sep=re.escape(sep)))
    texts: list[str] = []
    skipped: list[str] = []
    # The answer's own last newline ends the last row; one more belongs to a field.
    for line in output.removesuffix("\n").split("\n") if output else []:
        if start.match(line):
            texts.append(line)
        elif texts:
            texts[-1] += "\n" + line
        elif line.strip():
            skipped.append(line)
    rows = []
    for text in texts:
        fields = text.split(sep)
        # With ``trailing``, what follows the last separator must be nothing.
        if trailing and fields.pop() != "":
            skipped.append(text)
        elif len(fields) == count:
            rows.append((text, fields))
        else:
            skipped.append(text)
    return rows, skipped


def job_state(
    row: Mapping[str, str],
    exit_of: Callable[[str], tuple[int, int]],
    *,
    std_out: str = "",
    std_err: str = "",
) -> JobState:
    """One row, by squeue's field names, -> a JobState; ValueError when a value does not read."""
    status = values.job_status(row["State"])
    exit_code: int | None = None
    signal = 0
    if status.terminal:
        exit_code, signal = exit_of(row["exit_code"])
    return JobState(
        job_id=JobId(values.leading_id(row["JobID"])),
        status=status,
        reason=values.text(row["Reason"]),
        exit_code=exit_code,
        signal=signal,
        submit_time=values.timestamp(row["SubmitTime"]),
        start_time=values.timestamp(row["StartTime"]),
        # squeue shows the *expected* end of a job that still runs.
        end_time=values.timestamp(row["EndTime"]) if status.terminal else None,
        std_out=std_out,
        std_err=std_err,
        working_dir=values.text(row["WorkDir"]),
        partition=values.text(row["Partition"]),
        node_list=values.text(row["NodeList"]),
        name=row["Name"],
        idempotency_key=values.idempotency_key(row["Comment"]),
    )
