"""``squeue -O`` -> the state of each job Slurm still holds (pure).

The format is asked with a control character after every field
(``rows.SEP``) and read one job per row (``rows``). What differs between
releases is decided by the release red-box detected (``releases``): the exit
code's form, and whether squeue filled in an unset stdout itself (with the
wrong name for an array task). The output paths are read by ``outputs``' one rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from wlmvk.core.jobs import JobId
from wlmvk.redbox.slurm.cli import arrays, outputs, rows, values
from wlmvk.redbox.slurm.cli.releases import Release

FIELDS = (
    "JobArrayID",
    "State",
    "Reason",
    "exit_code",
    "Comment",
    "Partition",
    "NodeList",
    "SubmitTime",
    "StartTime",
    "EndTime",
    "WorkDir",
    "STDOUT",
    "STDERR",
    "UserID",
    "Name",
)
"""squeue -O fields, in order. JobArrayID prints a job id as sacct does (``12``, ``12_3``,
``12_[4-7%2]``, ``12+0``): a started array task or het component has a job id of its own, and is
read as its job's."""

FORMAT = ",".join(f"{name}:{rows.SEP}" for name in FIELDS)
"""The ``-O`` argument: each field with SEP as its suffix."""

_TASK = re.compile(r"\s*(\d+)_(\d+)\s*")
# A host list's first entry (up to a comma outside brackets), and a bracket of it (its first value).
_HOST_ENTRY = re.compile(r"(?:[^,\[]|\[[^\]]*\])*")
_RANGE = re.compile(r"\[([^\]\-,]*)[^\]]*\]")


def squeue_rows(output: str, *, release: Release, user: str) -> rows.Rows:
    """Parse ``squeue -h -t all -u USER -O FORMAT`` of ``release``: one job per row.

    ``user``: the name of the user whose jobs these are (``%u`` of their paths).
    """
    return owned_rows(output, release=release, name_of=lambda _uid: user)[0]


def owned_rows(
    output: str, *, release: Release, name_of: Callable[[str], str]
) -> tuple[rows.Rows, dict[JobId, str]]:
    """Parse ``squeue -h -t all -O FORMAT`` of any users' jobs: the rows, and each job's owner.

    ``name_of``: the user name of a row's UserID (``%u`` of its paths, and the owner answered).
    """
    found, skipped = rows.split_rows(output, len(FIELDS), rows.SEP, trailing=True)
    exit_of = release.squeue_exit()
    groups: dict[JobId, list[arrays.Task]] = {}
    owners: dict[JobId, str] = {}
    for text, fields in found:
        row = dict(zip(FIELDS, fields, strict=True))
        row["JobID"] = row["JobArrayID"]
        try:
            user = name_of(values.text(row["UserID"]))
            job = output_job(row, user=user)
            std_out, std_err = outputs.paths(*_set_paths(row, job, release), job)
            state = rows.job_state(row, exit_of, std_out=std_out, std_err=std_err)
        except ValueError:
            skipped.append(text)
            continue
        groups.setdefault(state.job_id, []).append(arrays.task(state, row["JobArrayID"]))
        owners[state.job_id] = user
    read = rows.Rows([arrays.combine(tasks) for tasks in groups.values()], tuple(skipped))
    return read, owners


def _set_paths(row: Mapping[str, str], job: outputs.Job, release: Release) -> tuple[str, str]:
    """The STDOUT and STDERR the job set, '' for unset.

    Where squeue fills in an unset stdout as ``<workdir>/slurm-<own job id>.out``, an array
    task's row names the task's own job id, which no pattern of the array could have given:
    that is Slurm's default, whose file is ``slurm-<array id>_<task>.out``.
    """
    std_out, std_err = values.text(row["STDOUT"]), values.text(row["STDERR"])
    if job.array_task_id is None or not release.squeue_fills_default_output():
        return std_out, std_err
    filled = re.escape(job.working_dir.rstrip("/")) + r"/slurm-\d+\.out"
    if not re.fullmatch(filled, std_out):
        return std_out, std_err
    return "", "" if std_err == std_out else std_err


def output_job(row: Mapping[str, str], *, user: str) -> outputs.Job:
    """What the patterns of one row's paths may name.

    An array task's row names the array's id and the task's index, not the task's own job id:
    ``%j`` of a task is read as the array's id.
    """
    array_id = row["JobArrayID"]
    job_id = values.leading_id(array_id)
    task = _TASK.fullmatch(array_id)
    return outputs.Job(
        job_id=job_id,
        working_dir=values.text(row["WorkDir"]),
        user=user,
        name=row["Name"],
        batch_host=first_host(values.text(row["NodeList"])),
        array_job_id=job_id if task else 0,
        array_task_id=int(task.group(2)) if task else None,
    )


def first_host(node_list: str) -> str:
    """The first node of a Slurm host list (``vm``, ``n[01-04,7]`` -> ``n01``, ``a,b`` -> ``a``):
    the batch host of a job's allocation."""
    entry = _HOST_ENTRY.match(node_list)
    return _RANGE.sub(r"\1", entry.group() if entry else "")
