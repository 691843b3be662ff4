"""Cumulative CPU counters that never go back (pure): steps ending, jobs ending, samples missing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from wlmvk.core.jobs import JobId
from wlmvk.core.usage import JobUsage
from wlmvk.kubelet.api.stats.ledger import CpuLedger
from wlmvk.kubelet.api.stats.summary import PodJob

AT = datetime(2026, 12, 3, 15, 0, tzinfo=UTC)


def pod(job: int, node: str = "n1") -> PodJob:
    return PodJob("default", f"p{job}", f"u{job}", node, "job", JobId(job), AT)


def cpu(**seconds: float) -> dict[JobId, JobUsage]:
    return {
        JobId(int(k[1:])): JobUsage(JobId(int(k[1:])), timedelta(seconds=v), 1, AT)
        for k, v in seconds.items()
    }


def test_a_job_counter_rises_and_never_falls_when_a_step_ends() -> None:
    ledger = CpuLedger().advance([pod(1)], cpu(j1=10))
    ledger = ledger.advance([pod(1)], cpu(j1=25))
    assert ledger.job_seconds(JobId(1)) == 25
    ledger = ledger.advance([pod(1)], cpu(j1=4))  # an srun step ended: its time left sstat's sum
    assert ledger.job_seconds(JobId(1)) == 25
    ledger = ledger.advance([pod(1)], cpu(j1=30))
    assert ledger.job_seconds(JobId(1)) == 30


def test_a_job_that_stops_running_is_retired_onto_its_node() -> None:
    ledger = CpuLedger().advance([pod(1), pod(2, "n2"), pod(3)], cpu(j1=10, j2=7, j3=1))
    assert ledger.node_seconds(["n1"]) == 11
    ledger = ledger.advance([pod(3)], cpu(j3=2))
    assert ledger.job_seconds(JobId(1)) is None
    assert ledger.retired == {"n1": 10, "n2": 7}
    assert ledger.node_seconds(["n1"]) == 12
    assert ledger.node_seconds(["n2"]) == 7
    assert ledger.node_seconds(["n1", "n2"]) == 19
    assert ledger.node_seconds(["n3"]) == 0


def test_a_running_job_sstat_missed_keeps_its_figure() -> None:
    ledger = CpuLedger().advance([pod(1)], cpu(j1=10))
    ledger = ledger.advance([pod(1)], {})
    assert ledger.job_seconds(JobId(1)) == 10
    assert ledger.node_seconds(["n1"]) == 10


def test_a_job_without_a_sample_yet_has_no_figure() -> None:
    ledger = CpuLedger().advance([pod(1)], {})
    assert ledger.job_seconds(JobId(1)) is None
    assert ledger.node_seconds(["n1"]) == 0


def test_the_ledger_is_a_value() -> None:
    before = CpuLedger().advance([pod(1)], cpu(j1=10))
    before.advance([], {})
    assert before.job_seconds(JobId(1)) == 10
