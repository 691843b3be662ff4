"""Prometheus metrics of the kubelet, in the text exposition format.

A handful of counters, gauges and one latency histogram do not justify a
client library: each metric renders itself. Label values are escaped as the
format requires. ``KubeletMetrics`` names everything the kubelet exports for one cluster;
``render_clusters`` renders those of several, each series labelled ``cluster``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels, extra: tuple[tuple[str, str], ...] = ()) -> str:
    pairs = labels + extra
    if not pairs:
        return ""
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in pairs) + "}"


@dataclass
class Counter:
    name: str
    help: str
    values: dict[Labels, float] = field(default_factory=dict)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        self.values[key] = self.values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        return self.values.get(tuple(sorted(labels.items())), 0.0)

    def render(self, extra: Labels = (), *, header: bool = True) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"] if header else []
        lines += [
            f"{self.name}{_labels(extra + key)} {value:g}" for key, value in sorted(self.values.items())
        ]
        return lines


@dataclass
class Gauge:
    """A gauge read at scrape time from a callback returning {labels: value}."""

    name: str
    help: str
    read: Callable[[], dict[Labels, float]]

    def render(self, extra: Labels = (), *, header: bool = True) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} gauge"] if header else []
        lines += [
            f"{self.name}{_labels(extra + key)} {value:g}" for key, value in sorted(self.read().items())
        ]
        return lines


_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass
class Histogram:
    name: str
    help: str
    buckets: tuple[float, ...] = _BUCKETS
    series: dict[Labels, list[float]] = field(default_factory=dict)

    def observe(self, seconds: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        # Per series: one count per bucket, then +Inf count, then the sum.
        row = self.series.setdefault(key, [0.0] * (len(self.buckets) + 2))
        for index, bound in enumerate(self.buckets):
            if seconds <= bound:
                row[index] += 1
        row[-2] += 1
        row[-1] += seconds

    @contextmanager
    def time(self, **labels: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.observe(time.perf_counter() - start, **labels)

    def count(self, **labels: str) -> int:
        row = self.series.get(tuple(sorted(labels.items())))
        return int(row[-2]) if row else 0

    def render(self, extra: Labels = (), *, header: bool = True) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"] if header else []
        for bare, row in sorted(self.series.items()):
            key = extra + bare
            for index, bound in enumerate(self.buckets):
                lines.append(f"{self.name}_bucket{_labels(key, (('le', f'{bound:g}'),))} {row[index]:g}")
            lines.append(f"{self.name}_bucket{_labels(key, (('le', '+Inf'),))} {row[-2]:g}")
            lines.append(f"{self.name}_count{_labels(key)} {row[-2]:g}")
            lines.append(f"{self.name}_sum{_labels(key)} {row[-1]:g}")
        return lines


class KubeletMetrics:
    """Every metric of one kubelet process."""

    def __init__(self, pods_by_phase: Callable[[], dict[str, int]]) -> None:
        self.submissions = Counter("wlmvk_kubelet_job_submissions_total", "Slurm jobs submitted, by result.")
        self.wlm_calls = Histogram("wlmvk_kubelet_wlm_call_seconds", "Latency of red-box calls, by method.")
        self.wlm_errors = Counter(
            "wlmvk_kubelet_wlm_call_errors_total", "red-box calls that failed, by method."
        )
        self.watch_restarts = Counter(
            "wlmvk_kubelet_watch_restarts_total", "Pod watch relists and reconnects."
        )
        self.status_writes = Counter("wlmvk_kubelet_pod_status_writes_total", "Pod status patches.")
        self.status_ticks = Counter("wlmvk_kubelet_status_ticks_total", "Batched job state queries.")
        self.node_status_writes = Counter(
            "wlmvk_kubelet_node_status_writes_total",
            "Node status patches, by reason (registered, changed, heartbeat).",
        )
        self.lease_renewals = Counter("wlmvk_kubelet_node_lease_renewals_total", "Node Lease renewals.")
        self.lease_lateness = Histogram(
            "wlmvk_kubelet_node_lease_renewal_lateness_seconds",
            "From a node Lease renewal's due time to its answer.",
        )

        def phases() -> dict[Labels, float]:
            return {(("phase", phase),): float(count) for phase, count in pods_by_phase().items()}

        self.pods = Gauge("wlmvk_kubelet_pods", "Pods on this kubelet's nodes, by phase.", phases)

    def all(self) -> tuple[Counter | Gauge | Histogram, ...]:
        return (
            self.pods,
            self.submissions,
            self.wlm_calls,
            self.wlm_errors,
            self.watch_restarts,
            self.status_writes,
            self.status_ticks,
            self.node_status_writes,
            self.lease_renewals,
            self.lease_lateness,
        )

    def render(self) -> str:
        lines: list[str] = []
        for metric in self.all():
            lines += metric.render()
        return "\n".join(lines) + "\n"


def render_clusters(clusters: list[tuple[str, KubeletMetrics]]) -> str:
    """The metrics of a kubelet serving several clusters: each series labelled with its cluster."""
    lines: list[str] = []
    for index in range(len(clusters[0][1].all())):
        for position, (name, metrics) in enumerate(clusters):
            lines += metrics.all()[index].render((("cluster", name),), header=position == 0)
    return "\n".join(lines) + "\n"
