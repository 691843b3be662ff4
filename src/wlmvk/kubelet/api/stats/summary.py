"""The kubelet Summary API (``/stats/summary``) built from the jobs' usage, pure.

The real kubelet's Summary (``k8s.io/kubelet/pkg/apis/stats/v1alpha1``)
reports CPU as ``usageCoreNanoSeconds`` (cumulative) and ``usageNanoCores``
(a rate), and memory as ``workingSetBytes``, for the node, each pod and each
container. Here a pod is a Slurm job and its one container the job: the
cumulative CPU is the job's CPU time and the memory its resident memory, as
Slurm's accounting reads them (``core.usage``). The rate is taken between a
job's two last samples, or since the job started for its first one. Only
pods whose job has a running step appear: a pending or finished job uses
nothing.

One wlmvk kubelet serves every partition of its cluster on one address, and
a request proxied by the API server does not say which node it is for; so
the ``node`` block is the sum over every node this kubelet serves (named by
their names joined with commas when there are several). A consumer that
needs per-node figures sums the pods of each node, which the API server's
pod objects name (the in-memory API server's metrics stand-in does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage
from wlmvk.kube.times import rfc3339
from wlmvk.kubelet.api.stats.ledger import CpuLedger

_NANO = 1_000_000_000


@dataclass(frozen=True)
class PodJob:
    """A pod of this kubelet whose job runs."""

    namespace: str
    name: str
    uid: str
    node: str
    container: str
    job_id: JobId
    started: datetime | None
    holder: str = ""
    """The tenant user whose red-box holds the job ("" for the default red-box): its usage is read there."""


def nano_cores(now: JobUsage, before: JobUsage | None, started: datetime | None) -> int | None:
    """CPU use as a rate, in billionths of a core; None without a window to measure it over."""
    if before is not None and before.sampled < now.sampled and before.cpu_time <= now.cpu_time:
        spent, window = now.cpu_time - before.cpu_time, now.sampled - before.sampled
    elif started is not None and started < now.sampled:
        spent, window = now.cpu_time, now.sampled - started
    else:
        return None
    return round(spent.total_seconds() * _NANO / window.total_seconds())


def _cpu(at: datetime, core_seconds: float, rate: int | None) -> dict[str, Any]:
    cpu: dict[str, Any] = {"time": rfc3339(at), "usageCoreNanoSeconds": round(core_seconds * _NANO)}
    if rate is not None:
        cpu["usageNanoCores"] = rate
    return cpu


def _memory(at: datetime, resident: int) -> dict[str, Any]:
    return {"time": rfc3339(at), "workingSetBytes": resident, "rssBytes": resident, "usageBytes": resident}


def summary(
    *,
    nodes: Iterable[str],
    started: datetime,
    pods: Iterable[PodJob],
    usage: Mapping[JobId, JobUsage],
    previous: Mapping[JobId, JobUsage],
    now: datetime,
    ledger: CpuLedger | None = None,
) -> dict[str, Any]:
    """The Summary of the pods whose job ``usage`` reports; ``started`` is the kubelet's start.

    With a ``ledger``, the cumulative CPU figures (``usageCoreNanoSeconds``) are its counters,
    which never fall, as a kubelet's do: the node's includes its jobs that ended. Without one,
    the samples' own CPU times.
    """
    nodes = sorted(nodes)
    pod_stats: list[dict[str, Any]] = []
    total_cpu, total_memory, total_rate, rated = 0.0, 0, 0, False
    for pod in pods:
        sample = usage.get(pod.job_id)
        if sample is None:
            continue
        rate = nano_cores(sample, previous.get(pod.job_id), pod.started)
        counted = ledger.job_seconds(pod.job_id) if ledger is not None else None
        seconds = sample.cpu_time.total_seconds() if counted is None else counted
        cpu = _cpu(sample.sampled, seconds, rate)
        memory = _memory(sample.sampled, sample.memory_bytes)
        start = rfc3339(pod.started or sample.sampled)
        pod_stats.append(
            {
                "podRef": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                "startTime": start,
                "containers": [{"name": pod.container, "startTime": start, "cpu": cpu, "memory": memory}],
                "cpu": cpu,
                "memory": memory,
            }
        )
        total_cpu += seconds
        total_memory += sample.memory_bytes
        if rate is not None:
            total_rate, rated = total_rate + rate, True
    if ledger is not None:
        total_cpu = ledger.node_seconds(nodes)
    node = {
        "nodeName": ",".join(nodes),
        "startTime": rfc3339(started),
        "cpu": _cpu(now, total_cpu, total_rate if rated or not pod_stats else None),
        "memory": _memory(now, total_memory),
        "systemContainers": [],
    }
    return {"node": node, "pods": pod_stats}
