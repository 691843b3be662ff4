"""slurmrestd's job dump (``GET /jobs``) -> the state of each of one user's jobs, as squeue reads them (pure).

A conditional look (``GET /jobs?update_time=T``) that finds a change answers
with every job of the cluster: one RPC already paid, so red-box reads its own
user's jobs from it instead of running squeue (two RPCs). The reading must be
squeue's, field for field: the same ``JobState`` for the same job, arrays
combined by ``arrays``' one rule, paths read by ``outputs``' one rule, the key
by ``values``. A job record is given back in the row squeue would print
(``12``, ``12_3``, ``12_[4-7%2]``, ``12+0``) so that nothing here decides what
squeue's reading decides elsewhere.

Two OpenAPI versions: v0.0.38 (22.05) writes numbers bare (0 for an unset
time), the exit code as the raw wait status and the state as squeue's word;
v0.0.42 (24.11, 26.05) writes numbers as ``{"set", "infinite", "number"}``,
the exit code as ``{"return_code", "signal"}`` and the state as a list of its
base state and flags. A record that does not read as expected makes the
whole answer ``Inexact``: the caller runs squeue for it, nothing is guessed.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from wlmvk.core.jobs import JobId, JobState
from wlmvk.redbox.slurm.cli import arrays, exits, outputs, squeue, values


class Inexact(ValueError):
    """The dump does not give squeue's reading of some job: read squeue instead."""


@dataclass(frozen=True)
class Dump:
    """One user's jobs read from a dump, and how many jobs of the cluster it held."""

    states: list[JobState]
    total: int
    last_update: int | None = None
    """slurmctld's own second the dump was made in (v0.0.42; v0.0.38 does not carry it)."""
    owners: Mapping[JobId, str] = field(default_factory=dict)
    """Each job's owner by name (a dump read for every user: ``uid`` None)."""


# What squeue prints for a job state with flags (Slurm's job_state_string): the first flag
# of this list that is set names it, else the base state.
_FLAG_WORDS = (
    "COMPLETING",
    "STAGE_OUT",
    "CONFIGURING",
    "RESIZING",
    "REQUEUED",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
    "SPECIAL_EXIT",
    "STOPPED",
    "REVOKED",
    "RESV_DEL_HOLD",
    "SIGNALING",
)
# Flags that squeue's word never shows.
_SILENT_FLAGS = frozenset({"LAUNCH_FAILED", "UPDATE_DB", "RECONFIG_FAIL", "POWER_UP_NODE"})
_BASE_STATES = frozenset(
    {
        "PENDING",
        "RUNNING",
        "SUSPENDED",
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
    }
)


def read(body: bytes, *, uid: int | None, job_ids: Collection[JobId] | None = None) -> Dump:
    """A ``GET /jobs`` answer -> the states of the jobs of user ``uid`` (of ``job_ids`` only, when given;
    of every user for None, each job's owner named in ``owners``).

    Jobs are chosen by ``user_id`` (both versions carry it), as squeue's ``-u`` does: a user
    renamed, or a name that reads differently on this host, picks neither fewer nor other jobs.
    Raises ``Inexact`` when the answer is not a readable dump or a job of ``uid`` in it does not
    read as squeue's row would.
    """
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise Inexact(f"not JSON: {exc}") from exc
    jobs = document.get("jobs") if isinstance(document, dict) else None
    if not isinstance(jobs, list) or document.get("errors"):
        raise Inexact("no job list in the answer, or errors with it")
    wanted = None if job_ids is None else frozenset(int(i) for i in job_ids)
    groups: dict[JobId, list[tuple[tuple[str, str, int], arrays.Task]]] = {}
    owners: dict[JobId, str] = {}
    for record in jobs:
        try:
            owner = number(record["user_id"])
        except (TypeError, KeyError, ValueError):
            owner = None
        if owner is None:
            raise Inexact("a job record is not an object with a user id")
        if uid is not None and owner != uid:
            continue
        try:
            user = record["user_name"]
            if not isinstance(user, str):
                raise TypeError(f"user name {user!r}")
            row_id = row_job_id(record)
            job_id = JobId(values.leading_id(row_id))
            if wanted is not None and job_id not in wanted:
                continue
            state = job_state(record, row_id, user=user)
            order = (state.partition, state_word(record["job_state"]), -(number(record.get("priority")) or 0))
        except (ValueError, TypeError, KeyError) as exc:
            raise Inexact(f"job {record.get('job_id')}: {exc}") from exc
        groups.setdefault(job_id, []).append((order, arrays.task(state, row_id)))
        owners[job_id] = user
    states = [arrays.combine(_in_squeue_order(tasks)) for tasks in groups.values()]
    try:
        last_update = number(document.get("last_update"))
    except ValueError:
        last_update = None  # not slurmctld's second: the caller's margin applies
    return Dump(states, len(jobs), last_update or None, owners if uid is None else {})


def _in_squeue_order(tasks: list[tuple[tuple[str, str, int], arrays.Task]]) -> list[arrays.Task]:
    """An array's rows in the order squeue prints them: by partition, state word, priority
    (highest first), else as Slurm listed them. The first row gives the whole its paths
    (``arrays.combine``), so the order decides which task's ``%a`` a pattern shows."""
    return [task for _, task in sorted(tasks, key=lambda item: item[0])]


def row_job_id(record: Mapping[str, Any]) -> str:
    """The job id squeue's JobArrayID prints for this record: ``12``, ``12_3``, ``12_[4-7%2]``, ``12+0``."""
    array_job = number(record["array_job_id"]) or 0
    if array_job:
        task = number(record["array_task_id"])
        if task is not None:
            return f"{array_job}_{task}"
        pending = _text(record["array_task_string"])
        if not pending:
            raise ValueError("an array record with neither a task id nor pending tasks")
        return f"{array_job}_[{pending}]"
    het_job = number(record.get("het_job_id", 0)) or 0
    if het_job:
        return f"{het_job}+{number(record['het_job_offset']) or 0}"
    job_id = number(record["job_id"])
    if not job_id:
        raise ValueError("no job id")
    return str(job_id)


def job_state(record: Mapping[str, Any], row_id: str, *, user: str) -> JobState:
    """One job record, whose squeue row id is ``row_id``, -> squeue's JobState of that row."""
    status = values.job_status(state_word(record["job_state"]))
    if status.name == "UNKNOWN":
        raise ValueError(f"job state {record['job_state']!r}")
    exit_code: int | None = None
    signal = 0
    if status.terminal:
        exit_code, signal = exit_pair(record["exit_code"])
    working_dir = values.text(_text(record["current_working_directory"]))
    node_list = values.text(_text(record["nodes"]))
    name = _text(record["name"])
    task = _task(row_id)
    job_id = values.leading_id(row_id)
    job = outputs.Job(
        job_id=job_id,
        working_dir=working_dir,
        user=user,
        name=name,
        batch_host=squeue.first_host(node_list),
        array_job_id=job_id if task is not None else 0,
        array_task_id=task,
    )
    std_out, std_err = outputs.paths(*_set_paths(record, job), job)
    return JobState(
        job_id=JobId(job_id),
        status=status,
        # squeue prints the job's own description of its state where it has one
        # (``RaisedSignal:9(Killed)`` from 24.11), else the reason's name (``RaisedSignal``).
        reason=values.text(_text(record["state_description"]) or _text(record["state_reason"])),
        exit_code=exit_code,
        signal=signal,
        submit_time=_time(record["submit_time"]),
        start_time=_time(record["start_time"]),
        end_time=_time(record["end_time"]) if status.terminal else None,
        std_out=std_out,
        std_err=std_err,
        working_dir=working_dir,
        partition=values.text(_text(record["partition"])),
        node_list=node_list,
        name=name,
        idempotency_key=values.idempotency_key(_text(record["comment"])),
    )


def _set_paths(record: Mapping[str, Any], job: outputs.Job) -> tuple[str, str]:
    """The paths the job set, '' for unset.

    slurmrestd fills in an unset stdout (and stderr) as ``<workdir>/slurm-<own job id>.out``
    from 24.11 on; for an array task that names the task's own job id, which no pattern of
    the array could have given: it is Slurm's default, whose file is ``slurm-<array id>_<task>.out``
    (squeue's filled paths of 22.05 are read by the same rule).
    """
    std_out = values.text(_text(record["standard_output"]))
    std_err = values.text(_text(record["standard_error"]))
    if job.array_task_id is None:
        return std_out, std_err
    filled = f"{job.working_dir.rstrip('/')}/slurm-{number(record['job_id'])}.out"
    if std_out != filled:
        return std_out, std_err
    return "", "" if std_err == std_out else std_err


def state_word(value: object) -> str:
    """A record's job state as squeue prints it: v0.0.38's word, or v0.0.42's list of base and flags."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not all(isinstance(word, str) for word in value):
        raise ValueError(f"job state {value!r}")
    unknown = [w for w in value if w not in _BASE_STATES and w not in _FLAG_WORDS and w not in _SILENT_FLAGS]
    bases = [w for w in value if w in _BASE_STATES]
    if unknown or len(bases) != 1:
        raise ValueError(f"job state {value!r}")
    return next((flag for flag in _FLAG_WORDS if flag in value), bases[0])


def exit_pair(value: object) -> tuple[int, int]:
    """A record's exit code -> (exit code, signal): v0.0.38's wait status, v0.0.42's object."""
    if isinstance(value, int) and not isinstance(value, bool):
        return exits.wait_status(str(value))
    if not isinstance(value, dict):
        raise ValueError(f"exit code {value!r}")
    code = number(value.get("return_code"))
    signal = value.get("signal") or {}
    signal_id = number(signal.get("id")) if isinstance(signal, dict) else None
    if code is None and signal_id is None:
        raise ValueError(f"exit code {value!r}")
    # A job killed by a signal has no return code: squeue prints 0 for it.
    return code or 0, signal_id or 0


def number(value: object) -> int | None:
    """A bare number (v0.0.38) or ``{"set", "infinite", "number"}`` (v0.0.42); None when unset or infinite."""
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, dict) and isinstance(value.get("number"), int):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        return int(value["number"])
    if value is None:
        return None
    raise ValueError(f"not a number: {value!r}")


def _time(value: object) -> datetime | None:
    # 0 and unset are squeue's N/A.
    seconds = number(value)
    return datetime.fromtimestamp(seconds, UTC) if seconds else None


def _text(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"not a text: {value!r}")
    return value


def _task(row_id: str) -> int | None:
    _, sep, task = row_id.partition("_")
    return int(task) if sep and task.isdigit() else None
