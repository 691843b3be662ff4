"""core.usage values <-> the JobUsage wire messages, both directions, pure."""

from __future__ import annotations

from datetime import timedelta

from wlmvk._proto import api
from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage, UsageSample
from wlmvk.wire.codec import EPOCH, time_from_wire


def usage_to_wire(usage: JobUsage) -> api.JobUsage:
    return api.JobUsage(
        job_id=usage.job_id,
        cpu_time=usage.cpu_time,
        memory_bytes=usage.memory_bytes,
        sampled=usage.sampled,
        steps=usage.steps,
    )


def usage_from_wire(wire: api.JobUsage) -> JobUsage:
    return JobUsage(
        job_id=JobId(wire.job_id),
        cpu_time=wire.cpu_time or timedelta(0),
        memory_bytes=wire.memory_bytes,
        sampled=time_from_wire(wire.sampled) or EPOCH,
        steps=wire.steps,
    )


def sample_to_wire(sample: UsageSample) -> api.JobUsageResponse:
    return api.JobUsageResponse(
        usages=[usage_to_wire(u) for u in sample.usages.values()],
        unanswered=sorted(sample.unanswered),
        unanswered_reason=sample.reason,
    )


def sample_from_wire(wire: api.JobUsageResponse) -> UsageSample:
    """An older red-box sends no ``unanswered``: every job is answered or absent."""
    usages = {JobId(w.job_id): usage_from_wire(w) for w in wire.usages}
    return UsageSample(usages, frozenset(JobId(i) for i in wire.unanswered), wire.unanswered_reason)
