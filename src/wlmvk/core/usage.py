"""What a running job has used so far: the value red-box reads from Slurm and the kubelet serves.

Slurm's job accounting (``jobacct_gather``) keeps, per running step, the CPU
time of its processes and their resident memory; ``sstat`` reads it from the
nodes. A job's usage is the sum over its running steps, the batch step
included: a script's own loop runs in the batch step, an ``srun`` in a
numbered one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from wlmvk.core.jobs import JobId


@dataclass(frozen=True)
class JobUsage:
    """CPU time and memory of one running job at ``sampled``."""

    job_id: JobId
    cpu_time: timedelta
    memory_bytes: int
    sampled: datetime
    steps: int = 1


@dataclass(frozen=True)
class UsageSample:
    """One JobUsage answer: the jobs read, and the running jobs that could not be read this time.

    A job in ``unanswered`` still runs, but its slice of the reading failed or ran out of
    time: its last figures stay valid (with their own ``sampled``), it did not stop. A job in
    neither has no running step.
    """

    usages: Mapping[JobId, JobUsage]
    unanswered: frozenset[JobId] = frozenset()
    reason: str = ""
