"""One state for a job that Slurm reports in several rows: an array (``--array``) or a heterogeneous job.

squeue and sacct print a row per started task (``12_3``), one for the tasks
still pending (``12_[4-7%2]``), and one per heterogeneous component (``12+0``). The job asked
about is the whole: it runs while any task runs, it failed when any task
did (the first failed task's exit code stands for it), and it completed
only when every task did. The counts of each state go into the reason,
so a pod's message tells how far the array got. Pure functions of values.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from wlmvk.core.jobs import JobState, JobStatus

REASON_PREFIX = "array of "
"""How a combined state's reason starts (red-box asks accounting about such a state: squeue
forgets each task MinJobAge after it ends, so its rows may lack a task that failed)."""

_RUNNING = frozenset({JobStatus.RUNNING, JobStatus.COMPLETING, JobStatus.SUSPENDED, JobStatus.CONFIGURING})


@dataclass(frozen=True)
class Task:
    """One row: the state it reads as, how many tasks it stands for (a pending range, several),
    and whether it is a part (a task or component) rather than a plain job."""

    state: JobState
    count: int = 1
    part: bool = False


def task(state: JobState, job_id: str) -> Task:
    """The row of ``state`` whose job id Slurm printed as ``job_id``."""
    return Task(state, tasks_in(job_id), part=bool(re.match(r"\s*\d+[_+]", job_id)))


def tasks_in(job_id: str) -> int:
    """Tasks one row stands for, by its job id: ``12_[0-3,7%2]`` -> 5; ``12_3``, ``12+0``, ``12`` -> 1."""
    _, sep, tasks = job_id.strip().partition("_")
    if not (sep and tasks.startswith("[") and tasks.endswith("]")):
        return 1
    total = 0
    for part in tasks[1:-1].split("%", 1)[0].split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?(?::(\d+))?", part.strip())
        if match is None:
            return 1
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        step = int(match.group(3) or 1)
        total += max(1, (last - first) // max(step, 1) + 1)
    return total


def combine(tasks: Sequence[Task]) -> JobState:
    """The state of the whole job from its rows (one row: that row's state, unchanged)."""
    if len(tasks) == 1 and not tasks[0].part:
        return tasks[0].state
    counts: Counter[JobStatus] = Counter()
    for task in tasks:
        counts[task.state.status] += task.count
    states = [t.state for t in tasks]
    first = states[0]
    starts = [s.start_time for s in states if s.start_time]
    unfinished = [s for s in states if not s.status.terminal]
    running = [s for s in unfinished if s.status in _RUNNING]
    failed = [s for s in states if s.status.terminal and s.status is not JobStatus.COMPLETED]
    if running:
        whole = replace(running[0], status=JobStatus.RUNNING)
    elif unfinished:
        whole = unfinished[0]
    else:
        # Every task ended: the first that failed speaks for the array, else it completed.
        whole = failed[0] if failed else replace(first, exit_code=0, signal=0)
        whole = replace(whole, end_time=max((s.end_time for s in states if s.end_time), default=None))
    summary = ", ".join(f"{counts[status]} {status.value.lower()}" for status in JobStatus if counts[status])
    reason = f"{REASON_PREFIX}{sum(counts.values())} tasks: {summary}"
    if whole.reason and whole.reason != "None" and not whole.status.terminal:
        reason += f"; {whole.reason}"
    return replace(
        whole,
        job_id=first.job_id,
        reason=reason,
        start_time=min(starts, default=None),
        submit_time=first.submit_time,
        idempotency_key=first.idempotency_key,
        name=first.name,
        partition=first.partition,
        working_dir=first.working_dir,
        std_out=first.std_out,
        std_err=first.std_err,
        node_list=",".join(dict.fromkeys(s.node_list for s in running if s.node_list)) or whole.node_list,
    )


def combined(state: JobState) -> bool:
    """True for a state ``combine`` made from several tasks."""
    return state.reason.startswith(REASON_PREFIX)
