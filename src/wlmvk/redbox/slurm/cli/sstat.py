"""``sstat`` output -> the usage of each running job (pure).

red-box runs ``sstat -a -n --parsable2 -o JobID,TRESUsageInTot -j ID,...``
for every running job at once. ``-a`` lists every step, the batch step too:
without it a job whose script does the work itself (no ``srun``) shows no
row at all (checked with Slurm 22.05). A row is ``<job>.<step>|<tres>``
where the TRES list holds ``cpu=`` (CPU time of the step's processes,
``[D-]HH:MM:SS`` with optional fractions, or ``MM:SS.mmm``) and ``mem=``
(resident memory summed over the step's tasks, now). A job without a
running step, an unknown id, or another user's job gives no row, only a
line on stderr: it is absent from the answer.

A step whose node does not answer is no row either: sstat waits for it
(MessageTimeout), names it on stderr (``problem getting step_layout for
StepId=<job>.<step>: <reason>``) and exits 0 with the other rows. Such a job's
rows would sum to less than it used, so ``unreadable`` names it instead
(sstat words the job ``job 12`` up to 25.05, ``JobId=12`` since: ``releases``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage
from wlmvk.redbox.slurm.cli.releases import Release

FIELDS = "JobID,TRESUsageInTot"

# sstat prints sizes of bytes scaled to a unit (1464K, 10.30M); a bare number
# is bytes. (A --mem size without a unit is MB: a different rule, core.memory.)
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)", re.IGNORECASE)
_UNIT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_STEP_ID = re.compile(r"(\d+)(?:_\d+)?(?:\+\d+)?\.(\w+)")
# sstat's errors about one step, or one job, that it could not read; the release says how it
# names the job (``releases.Release.sstat_job``).
_UNREADABLE = (
    r"problem getting step_layout for (?:StepId=)?(\d+)\.\S+?: .*"
    r"|couldn't get (?:steps|info) for {job}(\d+).*"
)


@dataclass(frozen=True)
class StepUsage:
    job_id: JobId
    step: str
    cpu_time: timedelta
    memory_bytes: int


def size_bytes(text: str) -> int | None:
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        return None
    return round(float(match.group(1)) * _UNIT[match.group(2).upper()])


def cpu_time(text: str) -> timedelta | None:
    """``[D-]HH:MM:SS[.fff]`` or ``MM:SS[.fff]`` -> timedelta."""
    text = text.strip()
    days = 0
    if "-" in text:
        day_text, _, text = text.partition("-")
        if not day_text.isdigit():
            return None
        days = int(day_text)
    parts = text.split(":")
    if not 2 <= len(parts) <= 3:
        return None
    try:
        seconds = float(parts[-1])
        numbers = [int(p) for p in parts[:-1]]
    except ValueError:
        return None
    hours, minutes = numbers if len(numbers) == 2 else [0, *numbers]
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def tres(text: str) -> dict[str, str]:
    """``cpu=00:00:01,mem=1464K,...`` -> {name: value}."""
    items = (item.partition("=") for item in text.split(",") if "=" in item)
    return {name.strip(): value.strip() for name, _, value in items}


def step_rows(output: str) -> list[StepUsage]:
    """The readable rows of ``sstat -a -n --parsable2 -o JobID,TRESUsageInTot``."""
    steps: list[StepUsage] = []
    for line in output.splitlines():
        job_text, _, tres_text = line.partition("|")
        match = _STEP_ID.fullmatch(job_text.strip())
        if match is None:
            continue
        values = tres(tres_text.rstrip("|"))
        cpu = cpu_time(values.get("cpu", ""))
        memory = size_bytes(values.get("mem", ""))
        if cpu is None or memory is None:
            continue
        steps.append(StepUsage(JobId(int(match.group(1))), match.group(2), cpu, memory))
    return steps


def job_usage(steps: Iterable[StepUsage], *, sampled: datetime) -> dict[JobId, JobUsage]:
    """Each job's steps summed: CPU time and resident memory add up across steps."""
    jobs: dict[JobId, JobUsage] = {}
    for step in steps:
        seen = jobs.get(step.job_id)
        if seen is None:
            jobs[step.job_id] = JobUsage(step.job_id, step.cpu_time, step.memory_bytes, sampled, 1)
        else:
            jobs[step.job_id] = JobUsage(
                step.job_id,
                seen.cpu_time + step.cpu_time,
                seen.memory_bytes + step.memory_bytes,
                sampled,
                seen.steps + 1,
            )
    return jobs


def unreadable(stderr: str, *, release: Release) -> dict[JobId, str]:
    """The jobs sstat's stderr says it could not read (a step that did not answer), with its words."""
    pattern = re.compile(_UNREADABLE.format(job=re.escape(release.sstat_job())))
    jobs: dict[JobId, str] = {}
    for line in stderr.splitlines():
        match = pattern.search(line)
        if match is not None:
            job = JobId(int(match.group(1) or match.group(2)))
            jobs.setdefault(job, "sstat: " + match.group(0))
    return jobs
