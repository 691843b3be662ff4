"""The kubelet's resource metrics (``/metrics/resource``) from the jobs' usage, pure.

metrics-server (v0.6 and later) no longer reads ``/stats/summary``: it
scrapes ``/metrics/resource`` on each node's address and kubelet port and
parses the Prometheus text the kubelet's resource collector writes
(``pkg/kubelet/metrics/collectors/resource_metrics.go``): per container
``container_cpu_usage_seconds_total`` (a counter, core-seconds),
``container_memory_working_set_bytes`` and ``container_start_time_seconds``,
labelled ``container``, ``namespace``, ``pod``; per pod the same CPU and
memory figures; for the node ``node_cpu_usage_seconds_total`` and
``node_memory_working_set_bytes`` without labels; ``resource_scrape_error``
1 when the figures could not be had (and nothing else then). Each usage
sample carries the millisecond timestamp of its measurement: metrics-server
takes CPU rates between the timestamps, so two scrapes of one sample give it
no window rather than a wrong one.

Here a pod's one container is its Slurm job: CPU the job's cumulative CPU
time from the ``CpuLedger`` (never decreasing), memory its resident memory.
One wlmvk kubelet serves several nodes on one address, so each virtual node
names its own path in the ``metrics.k8s.io/resource-metrics-path``
annotation, which metrics-server follows: ``/metrics/resource/<node>``
reports that node's pods and totals; ``/metrics/resource`` reports every
node this kubelet serves as one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage
from wlmvk.kubelet.api.stats.ledger import CpuLedger
from wlmvk.kubelet.api.stats.summary import PodJob

PATH = "/metrics/resource"
PATH_ANNOTATION = "metrics.k8s.io/resource-metrics-path"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_CPU = "Cumulative cpu time consumed by the {} in core-seconds"
_MEMORY = "Current working set of the {} in bytes"
# name: (type, help), in the order the kubelet's registry writes them (sorted by name).
_FAMILIES = {
    "container_cpu_usage_seconds_total": ("counter", _CPU.format("container")),
    "container_memory_working_set_bytes": ("gauge", _MEMORY.format("container")),
    "container_start_time_seconds": ("gauge", "Start time of the container since unix epoch in seconds"),
    "node_cpu_usage_seconds_total": ("counter", _CPU.format("node")),
    "node_memory_working_set_bytes": ("gauge", _MEMORY.format("node")),
    "pod_cpu_usage_seconds_total": ("counter", _CPU.format("pod")),
    "pod_memory_working_set_bytes": ("gauge", _MEMORY.format("pod")),
    "resource_scrape_error": (
        "gauge",
        "1 if there was an error while getting container metrics, 0 otherwise",
    ),
}


def node_path(node: str) -> str:
    """The path a virtual node's annotation gives metrics-server."""
    return f"{PATH}/{node}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in sorted(labels.items())) + "}"


def _millis(at: datetime) -> int:
    return round(at.timestamp() * 1000)


def render(
    *,
    nodes: Iterable[str],
    pods: Iterable[PodJob],
    usage: Mapping[JobId, JobUsage],
    ledger: CpuLedger,
    sampled: datetime,
    error: bool = False,
) -> str:
    """The text for ``nodes`` (their pods among ``pods``); ``sampled``: when ``usage`` was taken."""
    series: dict[str, list[str]] = {name: [] for name in _FAMILIES}

    def add(name: str, labels: str, value: float, at: datetime | None) -> None:
        stamp = f" {_millis(at)}" if at is not None else ""
        series[name].append(f"{name}{labels} {value!r}{stamp}")

    add("resource_scrape_error", "", int(error), None)
    if not error:
        wanted = set(nodes)
        memory = 0
        for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
            sample = usage.get(pod.job_id)
            cpu = ledger.job_seconds(pod.job_id)
            if pod.node not in wanted or sample is None or cpu is None:
                continue
            memory += sample.memory_bytes
            at = sample.sampled
            container = _labels(container=pod.container, namespace=pod.namespace, pod=pod.name)
            owner = _labels(namespace=pod.namespace, pod=pod.name)
            add("container_cpu_usage_seconds_total", container, cpu, at)
            add("container_memory_working_set_bytes", container, sample.memory_bytes, at)
            if pod.started is not None:
                add("container_start_time_seconds", container, pod.started.timestamp(), None)
            add("pod_cpu_usage_seconds_total", owner, cpu, at)
            add("pod_memory_working_set_bytes", owner, sample.memory_bytes, at)
        add("node_cpu_usage_seconds_total", "", ledger.node_seconds(wanted), sampled)
        add("node_memory_working_set_bytes", "", memory, sampled)
    lines: list[str] = []
    for name, (kind, help_text) in _FAMILIES.items():
        if series[name]:
            lines += [f"# HELP {name} [STABLE] {help_text}", f"# TYPE {name} {kind}", *series[name]]
    return "\n".join(lines) + "\n"
