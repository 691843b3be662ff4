"""``scontrol -o show ...`` and ``scontrol show config`` -> key/value records (pure).

Releases add and rename keys (24.11: ExclusiveTopo, MaxCPUsPerSocket,
ResumeAfterTime, ReqTRES/AllocTRES, no TRES/Power/CapWatts; 26.05:
Exclusive for ExclusiveUser, SuspendTime, SubmitLine): a record is read
whole, and red-box reads only keys every release prints alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from wlmvk.redbox.slurm.cli import outputs, values

# A key of a ``scontrol -o`` record: a word (with / : _ .) right before '='.
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:.]*)=")


def scontrol_record(line: str) -> dict[str, str]:
    """One ``scontrol show ... -o`` line -> {key: value}.

    Values may contain spaces (``OS=Linux 6.1 #1 SMP``) and ``=``
    (``TRES=cpu=2,mem=16000M``): a value runs until the next `` Key=``.
    A key named twice keeps its last value: Slurm prints what a user typed
    (JobName, SubmitLine) before the paths and states it sets itself.
    """
    record: dict[str, str] = {}
    matches = list(_KEY.finditer(line))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(line)
        record[match.group(1)] = line[match.end() : end].strip()
    return record


def scontrol_records(output: str) -> list[dict[str, str]]:
    """``scontrol show job|partition|node -o``: one record per non-empty line."""
    return [scontrol_record(line) for line in output.splitlines() if line.strip()]


JOB_INFO_KEYS = (
    "JobId",
    "UserId",
    "JobName",
    "ExitCode",
    "JobState",
    "SubmitTime",
    "StartTime",
    "EndTime",
    "RunTime",
    "TimeLimit",
    "WorkDir",
    "StdOut",
    "StdErr",
    "Partition",
    "NodeList",
    "BatchHost",
    "NumNodes",
    "ArrayJobId",
    "Reason",
    "Comment",
)
"""The ``scontrol show job`` keys that the original JobInfo carries."""


def job_info_fields(record: Mapping[str, str]) -> dict[str, str]:
    """JOB_INFO_KEYS of one job record, blanks normalised, StdOut and StdErr the files the job writes.

    scontrol expands only some patterns of a path up to 24.11 (captured: ``%x`` and ``%u``
    on 22.05, not ``%N`` nor ``%4j``), and StdErr is empty on 26.05 when the job did not
    set it, where the job writes its errors to stdout's file (as 22.05 said): both are
    read by ``outputs``' rule, which leaves an expanded path as it is.
    """
    fields = {key: values.text(record.get(key, "")) for key in JOB_INFO_KEYS}
    job = output_job(record)
    fields["StdOut"], fields["StdErr"] = outputs.paths(fields["StdOut"], fields["StdErr"], job)
    return fields


def output_job(record: Mapping[str, str]) -> outputs.Job:
    """What the patterns of a job record's paths may name."""
    task = values.text(record.get("ArrayTaskId", ""))
    return outputs.Job(
        job_id=int(record.get("JobId", "0") or 0),
        working_dir=values.text(record.get("WorkDir", "")),
        user=record.get("UserId", "").partition("(")[0],
        name=record.get("JobName", ""),
        batch_host=values.text(record.get("BatchHost", "")),
        array_job_id=int(values.text(record.get("ArrayJobId", "")) or 0),
        array_task_id=int(task) if task.isdigit() else None,
    )


def slurm_version(output: str) -> str:
    """``sinfo -V`` -> ``22.05.8`` (the original kept the trailing newline; we do not)."""
    words = output.split()
    return words[1] if len(words) > 1 else output.strip()


def config_value(output: str, key: str) -> str:
    """One value of ``scontrol show config`` (``Key = value`` lines)."""
    for line in output.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == key:
            return value.strip()
    return ""
