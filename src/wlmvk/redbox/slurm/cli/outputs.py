"""Where a batch job's output goes: Slurm's file name patterns, expanded as Slurm expands them (pure).

A job's ``--output``/``--error`` may hold patterns (``out-%x-%j.log``) and
may be relative to its working directory. Slurm expands them when the job's
step opens the files, and its clients show them in different forms:
``squeue -O STDOUT`` printed a job's own path as given (the default
``<workdir>/slurm-<id>.out`` already filled in) up to 22.05, keeps the
pattern of the default (``<workdir>/slurm-%j.out``) on 24.11, and prints it
relative (``slurm-%j.out``) on 26.05; ``STDERR`` repeated stdout's path
when unset up to 22.05 and is ``(null)`` since. ``scontrol show job``
expands StdOut on every release, but costs a call per job.

So red-box reads squeue's paths on every release with this one rule:
stderr unset is stdout's path; stdout unset is Slurm's default
(``slurm-%j.out``, ``slurm-%A_%a.out`` for an array task); a relative path
is under the working directory; and the patterns are replaced as slurmstepd
does for the batch step: ``%%`` is ``%``, ``%j`` the job id, ``%A`` the
array's job id (the job id outside an array), ``%a`` the array task id,
``%u`` the user, ``%x`` the job name, ``%N`` the batch host, ``%s``
``batch``, ``%n`` and ``%t`` ``0``, a width between ``%`` and the letter
pads numbers with zeros (at most 10), any other ``%`` stays, and a path with
a backslash is taken as it stands, backslashes removed. An expanded path has
no ``%`` pattern left, so the rule gives the same answer whatever the form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NO_TASK = 4294967294
"""What Slurm writes for ``%a`` of a job that is not an array task (its NO_VAL)."""

_PATTERN = re.compile(r"%(?:%|(\d*)([AaJjNnstux]))")
_MAX_WIDTH = 10


@dataclass(frozen=True)
class Job:
    """What a pattern may name of one job (``%j`` ``%A`` ``%a`` ``%u`` ``%x`` ``%N``)."""

    job_id: int
    working_dir: str
    user: str = ""
    name: str = ""
    batch_host: str = ""
    array_job_id: int = 0
    array_task_id: int | None = None


def default(job: Job) -> str:
    """Slurm's output file when none was asked for."""
    return "slurm-%A_%a.out" if job.array_task_id is not None else "slurm-%j.out"


def expand(path: str, job: Job) -> str:
    """One output path of ``job``, as the file slurmstepd opens; '' stays ''."""
    if not path:
        return ""
    prefix = ""
    if not path.startswith("/") and job.working_dir:
        prefix = job.working_dir if job.working_dir.endswith("/") else job.working_dir + "/"
    if "\\" in path:
        return prefix + path.replace("\\", "")
    return prefix + _PATTERN.sub(lambda match: _value(match, job), path)


def paths(std_out: str, std_err: str, job: Job) -> tuple[str, str]:
    """squeue's STDOUT and STDERR (blank when unset) -> the two files the job writes."""
    out = std_out or default(job)
    return expand(out, job), expand(std_err or out, job)


def _value(match: re.Match[str], job: Job) -> str:
    width_text, letter = match.group(1), match.group(2)
    if letter is None:
        return "%"
    width = min(int(width_text or 0), _MAX_WIDTH)
    task = NO_TASK if job.array_task_id is None else job.array_task_id
    numbers = {
        "j": job.job_id,
        "J": job.job_id,
        "A": job.array_job_id or job.job_id,
        "a": task,
        "n": 0,
        "t": 0,
    }
    if letter in numbers:
        return f"{numbers[letter]:0{width}d}"
    texts = {"u": job.user, "x": job.name, "N": job.batch_host, "s": "batch"}
    return texts[letter]
