"""Which ``sstat`` calls read the usage of many running jobs, and how their answers combine (pure).

sstat asks each running step's slurmd in turn, one step after the other, and
slurmd's answer costs more the more processes its node runs (with
``jobacct_gather/linux`` each step's reading walks the node's processes): on
this machine one ``sstat -a`` over 201 running steps of one node took 8-30 s
and more than red-box's 30 s timeout under load, so one call for every job
made every job's reading fail together. sstat also asks slurmctld once per
id for its steps, so an id with no running step costs a round trip for
nothing.

So red-box first lists the running steps of the ids asked (one ``squeue -s``,
one RPC for all), leaves out the ids without one, and cuts the steps into
slices of at most ``per_slice`` steps, each read by its own sstat process,
a few at a time and all within one deadline. A job whose steps fit in a
slice is named whole (``ID`` with ``-a``: one step list from slurmctld); a
job with more steps than a slice holds is named step by step (``ID.0``,
``ID.batch``; sstat accepts both kinds in one call), over as many slices as
it needs, and is answered only if all of them are: a sum over some of its
steps would report less CPU than it used. A slice that fails or runs out of
time loses only its own jobs, and a step that sstat could not read (its
node did not answer: sstat waits, names it on stderr and prints the rest)
loses its job: the answer names them as unanswered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage
from wlmvk.redbox.slurm.cli.sstat import StepUsage, job_usage

# squeue -s prints a step as <job>.<step>; an array task's as <array job>_<task>.<step>, named by
# the array's id (the id sbatch gave, which the pod holds) rather than the task's own.
_STEP = re.compile(r"(\d+)(_\d+)?\.(\w+)")

STEP_FORMAT = "%i"
"""``squeue -s -o`` format: the step id alone."""


@dataclass(frozen=True)
class Slice:
    """One sstat call: ``whole`` jobs with every step (``-a``), and single ``steps`` of split jobs."""

    whole: tuple[JobId, ...] = ()
    steps: tuple[str, ...] = ()

    def targets(self) -> list[str]:
        """The ``-j`` list."""
        return [str(job) for job in self.whole] + list(self.steps)

    def jobs(self) -> set[JobId]:
        return set(self.whole) | {JobId(int(step.partition(".")[0])) for step in self.steps}


def running_steps(output: str, asked: Iterable[JobId]) -> dict[JobId, list[str]]:
    """``squeue -s -h -o %i`` -> each asked job's running steps (``ID.N``, ``ID_T.N`` for an array
    task, under the array's id), in Slurm's order."""
    wanted = set(asked)
    steps: dict[JobId, list[str]] = {}
    for line in output.splitlines():
        match = _STEP.fullmatch(line.strip())
        if match is None or JobId(int(match.group(1))) not in wanted:
            continue
        steps.setdefault(JobId(int(match.group(1))), []).append(match.group(0))
    return steps


def plan(steps: Mapping[JobId, Sequence[str]], *, per_slice: int) -> list[Slice]:
    """Slices of at most ``per_slice`` steps each (a job with more is split), in the jobs' order."""
    if per_slice < 1:
        raise ValueError(f"per_slice must be at least 1, not {per_slice}")
    slices: list[Slice] = []
    whole: list[JobId] = []
    single: list[str] = []
    filled = 0

    def close() -> None:
        nonlocal whole, single, filled
        if whole or single:
            slices.append(Slice(tuple(whole), tuple(single)))
        whole, single, filled = [], [], 0

    for job, job_steps in steps.items():
        # An array is asked whole: sstat -a of the array's id reads its tasks, but it misreads a
        # task's step named ID_T.N. Its rows come back under each task's own id (``combine``).
        if len(job_steps) > per_slice and not any("_" in step for step in job_steps):
            for step in job_steps:
                if filled == per_slice:
                    close()
                single.append(step)
                filled += 1
            continue
        if filled + len(job_steps) > per_slice:
            close()
        whole.append(job)
        filled += len(job_steps)
    close()
    return slices


@dataclass(frozen=True)
class Answered:
    """What one slice's sstat gave: its readable rows and the jobs it names unreadable, or why it
    gave nothing."""

    slice: Slice
    rows: Sequence[StepUsage] = ()
    failure: str = ""
    unreadable: Mapping[JobId, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Combined:
    """The jobs answered in full, and the running jobs a failed slice left unanswered."""

    usages: dict[JobId, JobUsage]
    unanswered: frozenset[JobId]
    reason: str


def combine(answers: Iterable[Answered], *, sampled: datetime) -> Combined:
    """Every slice's rows summed per job, leaving out each job that a failed slice held or whose
    step a slice could not read."""
    rows: list[StepUsage] = []
    lost: set[JobId] = set()
    reasons: list[str] = []

    def lose(jobs: Iterable[JobId], reason: str) -> None:
        lost.update(jobs)
        if reason not in reasons:
            reasons.append(reason)

    for answer in answers:
        if answer.failure:
            lose(answer.slice.jobs(), answer.failure)
            continue
        rows += answer.rows
        for job, reason in answer.unreadable.items():
            lose([job], reason)
    usages = job_usage((row for row in rows if row.job_id not in lost), sampled=sampled)
    return Combined(usages, frozenset(lost), "; ".join(reasons))
