"""Cumulative CPU time that never goes back, per job and per node, from usage samples (pure).

Slurm's accounting gives a running job's CPU time as the sum over its
*running* steps (``core.usage``): when an ``srun`` step ends its CPU time
leaves the sum, and when the job ends it leaves the node's sum. A consumer
of cumulative counters (metrics-server takes a rate between two scrapes and
drops a point whose counter went down) needs counters that only rise, as a
real kubelet's cgroup counters do. So the ledger keeps, for each running
job, the highest CPU time seen, and, for each node, the CPU time of the jobs
that left it (``retired``): a node's counter is its retired time plus its
running jobs' counters. What a job spent between its last sample and its
end is not seen; the counters restart from zero with the kubelet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage

if TYPE_CHECKING:  # the Summary is built on the ledger; the ledger reads two fields of a PodJob
    from wlmvk.kubelet.api.stats.summary import PodJob


@dataclass(frozen=True)
class CpuLedger:
    """Each running job's node and highest CPU seconds seen; each node's retired CPU seconds."""

    jobs: Mapping[JobId, tuple[str, float]] = field(default_factory=dict)
    retired: Mapping[str, float] = field(default_factory=dict)

    def advance(self, pods: Iterable[PodJob], usage: Mapping[JobId, JobUsage]) -> CpuLedger:
        """The ledger after a sample: ``pods`` the pods running when ``usage`` was taken.

        A job whose pod no longer runs is retired onto its node; a running job
        absent from ``usage`` (sstat missed it this time) keeps its figure.
        """
        running = {pod.job_id: pod.node for pod in pods}
        jobs: dict[JobId, tuple[str, float]] = {}
        retired = dict(self.retired)
        for job_id, (node, seconds) in self.jobs.items():
            if job_id in running:
                jobs[job_id] = (node, seconds)
            else:
                retired[node] = retired.get(node, 0.0) + seconds
        for job_id, node in running.items():
            sample = usage.get(job_id)
            if sample is None:
                continue
            known = jobs.get(job_id, (node, 0.0))[1]
            jobs[job_id] = (node, max(known, sample.cpu_time.total_seconds()))
        return CpuLedger(jobs, retired)

    def job_seconds(self, job_id: JobId) -> float | None:
        entry = self.jobs.get(job_id)
        return entry[1] if entry is not None else None

    def node_seconds(self, nodes: Iterable[str]) -> float:
        """The CPU seconds of ``nodes`` together: retired and running."""
        wanted = set(nodes)
        running = sum(seconds for node, seconds in self.jobs.values() if node in wanted)
        return running + sum(seconds for node, seconds in self.retired.items() if node in wanted)
