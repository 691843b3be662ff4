"""The Summary API body built from usage samples (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage
from wlmvk.kubelet.api.stats import summary
from wlmvk.kubelet.api.stats.ledger import CpuLedger

T0 = datetime(2026, 12, 3, 15, 0, tzinfo=UTC)


def pod(name: str, job: int, node: str = "slurm-c-debug", started: datetime | None = T0) -> summary.PodJob:
    return summary.PodJob("default", name, f"uid-{name}", node, "job", JobId(job), started)


def usage(job: int, cpu: float, memory: int, at: datetime) -> JobUsage:
    return JobUsage(JobId(job), timedelta(seconds=cpu), memory, at)


def test_a_rate_between_two_samples_and_the_node_sum() -> None:
    now = T0 + timedelta(seconds=40)
    body = summary.summary(
        nodes=["slurm-c-debug", "slurm-c-cpu"],
        started=T0,
        pods=[pod("a", 1), pod("b", 2, "slurm-c-cpu"), pod("pending", 3)],
        usage={JobId(1): usage(1, 30, 2048, now), JobId(2): usage(2, 5, 1024, now)},
        previous={JobId(1): usage(1, 20, 1000, T0 + timedelta(seconds=20))},
        now=now,
    )
    stamp = "2026-12-03T15:00:40Z"
    a_cpu = {"time": stamp, "usageCoreNanoSeconds": 30_000_000_000, "usageNanoCores": 500_000_000}
    a_memory = {"time": stamp, "workingSetBytes": 2048, "rssBytes": 2048, "usageBytes": 2048}
    assert body["pods"][0] == {
        "podRef": {"name": "a", "namespace": "default", "uid": "uid-a"},
        "startTime": "2026-12-03T15:00:00Z",
        "containers": [
            {"name": "job", "startTime": "2026-12-03T15:00:00Z", "cpu": a_cpu, "memory": a_memory}
        ],
        "cpu": a_cpu,
        "memory": a_memory,
    }
    # b's first sample: its rate since the job started (5 s of CPU in 40 s)
    assert body["pods"][1]["cpu"]["usageNanoCores"] == 125_000_000
    assert [p["podRef"]["name"] for p in body["pods"]] == ["a", "b"]
    assert body["node"]["nodeName"] == "slurm-c-cpu,slurm-c-debug"
    assert body["node"]["cpu"] == {
        "time": stamp,
        "usageCoreNanoSeconds": 35_000_000_000,
        "usageNanoCores": 625_000_000,
    }
    assert body["node"]["memory"]["workingSetBytes"] == 3072


def test_no_rate_without_a_window() -> None:
    now = T0
    body = summary.summary(
        nodes=["n"],
        started=T0,
        pods=[pod("a", 1, started=None)],
        usage={JobId(1): usage(1, 0, 0, now)},
        previous={},
        now=now,
    )
    assert "usageNanoCores" not in body["pods"][0]["cpu"]
    assert "usageNanoCores" not in body["node"]["cpu"]


def test_a_sample_older_than_the_previous_one_is_not_a_window() -> None:
    later = usage(1, 10, 0, T0 + timedelta(seconds=10))
    assert summary.nano_cores(later, later, None) is None
    assert summary.nano_cores(later, usage(1, 12, 0, T0), None) is None  # CPU time went down


def test_no_pods_is_an_idle_node() -> None:
    body = summary.summary(nodes=["n"], started=T0, pods=[], usage={}, previous={}, now=T0)
    assert body["pods"] == []
    assert body["node"]["cpu"] == {
        "time": "2026-12-03T15:00:00Z",
        "usageCoreNanoSeconds": 0,
        "usageNanoCores": 0,
    }


def test_with_a_ledger_the_cpu_counters_never_fall() -> None:
    """A job whose srun step ended reports less CPU time, and a job that ended leaves the node's
    sum: with the ledger, the pod keeps its highest figure and the node keeps the ended job's."""
    at = T0 + timedelta(seconds=20)
    ledger = CpuLedger().advance(
        [pod("a", 1), pod("gone", 2)], {JobId(1): usage(1, 30, 1, T0), JobId(2): usage(2, 8, 1, T0)}
    )
    later = {JobId(1): usage(1, 12, 1, at)}  # a's step ended: sstat now sums less
    ledger = ledger.advance([pod("a", 1)], later)
    body = summary.summary(
        nodes=["slurm-c-debug"],
        started=T0,
        pods=[pod("a", 1)],
        usage=later,
        previous={},
        now=at,
        ledger=ledger,
    )
    assert body["pods"][0]["cpu"]["usageCoreNanoSeconds"] == 30_000_000_000
    assert body["node"]["cpu"]["usageCoreNanoSeconds"] == 38_000_000_000
    without = summary.summary(
        nodes=["slurm-c-debug"], started=T0, pods=[pod("a", 1)], usage=later, previous={}, now=at
    )
    assert without["node"]["cpu"]["usageCoreNanoSeconds"] == 12_000_000_000
