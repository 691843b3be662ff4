"""The GPUs a node's pods hold: only jobs Slurm runs now count, per node and extended resource."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.kubelet.pods.held import gpus_held


@dataclass(frozen=True)
class Served:
    pod: dict[str, Any]
    node: str
    state: JobState | None


def served(node: str, status: JobStatus | None, limits: dict[str, str], containers: int = 1) -> Served:
    container = {"name": "c", "resources": {"limits": limits}}
    pod = {"spec": {"containers": [container] * containers}}
    return Served(pod, node, None if status is None else JobState(JobId("1"), status))


def test_running_jobs_hold_their_gpus_per_node_and_resource() -> None:
    records = [
        served("n1", JobStatus.RUNNING, {"nvidia.com/gpu": "2"}),
        served("n1", JobStatus.CONFIGURING, {"nvidia.com/gpu": "1"}),
        served("n1", JobStatus.COMPLETING, {"nvidia.com/mig-1g.10gb": "1"}),
        served("n2", JobStatus.SUSPENDED, {"nvidia.com/gpu.tesla": "3"}),
    ]
    assert gpus_held(records, {}) == {
        "n1": {"nvidia.com/gpu": 3, "nvidia.com/mig-1g.10gb": 1},
        "n2": {"nvidia.com/gpu.tesla": 3},
    }


def test_pending_ended_unknown_and_unreadable_requests_hold_none() -> None:
    records = [
        served("n1", JobStatus.PENDING, {"nvidia.com/gpu": "2"}),
        served("n1", JobStatus.COMPLETED, {"nvidia.com/gpu": "2"}),
        served("n1", JobStatus.FAILED, {"nvidia.com/gpu": "2"}),
        served("n1", None, {"nvidia.com/gpu": "2"}),
        served("n1", JobStatus.RUNNING, {"nvidia.com/gpu": "1", "nvidia.com/mig-1g.10gb": "1"}),
        served("n1", JobStatus.RUNNING, {"nvidia.com/gpu": "0.5"}),
        served("n1", JobStatus.RUNNING, {"cpu": "2"}),
        served("n1", JobStatus.RUNNING, {"nvidia.com/gpu": "1"}, containers=2),
    ]
    assert gpus_held(records, {}) == {}
