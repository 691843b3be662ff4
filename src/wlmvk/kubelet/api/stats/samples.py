"""The usage samples the kubelet serves, carried from one JobUsage answer to the next (pure).

red-box reads the running jobs' usage in slices, and a slice that fails or
runs out of time leaves its jobs unanswered: they still run, their figures
were simply not read this time. Such a job keeps its last sample, with that
sample's own time, for at most ``keep_for``: ``/metrics/resource`` then
repeats the old timestamp, so metrics-server (which takes rates between
timestamps) gets no new point rather than a wrong one, and the Summary's
``time`` shows the figure's age. It is never reported as zero. Past
``keep_for`` it is left out, as is every job the answer leaves out without
naming it unanswered (it has no running step).

The sample before a job's current one gives its CPU rate; a kept job keeps
its rate's two samples too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage, UsageSample


@dataclass(frozen=True)
class Samples:
    """Each running job's last sample served, and the one before it (for rates)."""

    current: Mapping[JobId, JobUsage] = field(default_factory=dict)
    previous: Mapping[JobId, JobUsage] = field(default_factory=dict)


def advance(before: Samples, answer: UsageSample, *, now: datetime, keep_for: timedelta) -> Samples:
    """The samples after ``answer``, taken at ``now``."""
    current = dict(answer.usages)
    previous = {
        job: old
        for job, old in before.current.items()
        if job in answer.usages and old.sampled < answer.usages[job].sampled
    }
    for job in answer.unanswered - answer.usages.keys():
        kept = before.current.get(job)
        if kept is None or now - kept.sampled > keep_for:
            continue
        current[job] = kept
        if job in before.previous:
            previous[job] = before.previous[job]
    return Samples(current, previous)
