"""Job state -> pod status.

States are shaped as red-box reports them for the real Slurm (slurm-local.md: exit 3 ->
FAILED/NonZeroExitCode 3:0; scancel -> CANCELLED 0:15; time limit -> TIMEOUT 0:15).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.kubelet.pods import status
from wlmvk.kubelet.pods.status import PodFacts

FACTS = PodFacts(container="main", image="busybox", host_ip="10.1.2.3", created="2026-12-02T14:40:00Z")
SUBMIT = datetime(2026, 12, 2, 14, 43, 30, tzinfo=UTC)
START = datetime(2026, 12, 2, 14, 43, 31, tzinfo=UTC)
END = datetime(2026, 12, 2, 14, 43, 35, tzinfo=UTC)


def state(status_: JobStatus, **kw: object) -> JobState:
    base: dict[str, object] = {"job_id": JobId(12), "status": status_, "submit_time": SUBMIT}
    base.update(kw)
    return JobState(**base)  # type: ignore[arg-type]


def conditions(body: dict[str, object]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in body["conditions"]}  # type: ignore[attr-defined]


def container_state(body: dict[str, object]) -> dict[str, dict[str, object]]:
    return body["containerStatuses"][0]["state"]  # type: ignore[index,no-any-return]


def test_pending_shows_the_slurm_reason_as_waiting_reason() -> None:
    body = status.pod_status(state(JobStatus.PENDING, reason="Priority"), FACTS)
    assert body is not None
    assert body["phase"] == "Pending"
    assert container_state(body)["waiting"]["reason"] == "Priority"
    assert conditions(body) == {
        "PodScheduled": "True",
        "Initialized": "True",
        "ContainersReady": "False",
        "Ready": "False",
    }
    assert body["startTime"] == "2026-12-02T14:43:30Z"
    assert body["hostIP"] == body["podIP"] == "10.1.2.3"


def test_pending_without_reason() -> None:
    body = status.pod_status(state(JobStatus.PENDING, reason="None"), FACTS)
    assert body is not None
    assert container_state(body)["waiting"]["reason"] == "Pending"


def test_running_is_ready_with_start_time() -> None:
    body = status.pod_status(state(JobStatus.RUNNING, start_time=START, node_list="vm"), FACTS)
    assert body is not None
    assert body["phase"] == "Running"
    assert container_state(body)["running"]["startedAt"] == "2026-12-02T14:43:31Z"
    assert set(conditions(body).values()) == {"True"}
    assert body["containerStatuses"][0]["ready"] is True
    assert body["containerStatuses"][0]["containerID"] == "slurm://12"


def test_completed_reads_job_finished() -> None:
    body = status.pod_status(state(JobStatus.COMPLETED, exit_code=0, start_time=START, end_time=END), FACTS)
    assert body is not None
    assert body["phase"] == "Succeeded"
    terminated = container_state(body)["terminated"]
    assert terminated["reason"] == "Job finished"
    assert terminated["exitCode"] == 0
    assert terminated["finishedAt"] == "2026-12-02T14:43:35Z"
    assert conditions(body)["Ready"] == "False"


@pytest.mark.parametrize(
    ("slurm", "extra", "reason", "code"),
    [
        (JobStatus.FAILED, {"exit_code": 3, "reason": "NonZeroExitCode"}, "Error", 3),
        (JobStatus.CANCELLED, {"exit_code": 0, "signal": 15}, "Cancelled", 143),
        (JobStatus.CANCELLED, {}, "Cancelled", 143),
        (JobStatus.TIMEOUT, {"exit_code": 0, "signal": 15, "reason": "TimeLimit"}, "Timeout", 143),
        (JobStatus.OUT_OF_MEMORY, {}, "OutOfMemory", 137),
        (JobStatus.NODE_FAIL, {}, "NodeFail", 1),
        (JobStatus.PREEMPTED, {}, "Preempted", 143),
        (JobStatus.BOOT_FAIL, {}, "BootFail", 1),
        (JobStatus.DEADLINE, {}, "DeadlineExceeded", 1),
        (JobStatus.NOT_FOUND, {}, "JobLost", 1),
        (JobStatus.FAILED, {"exit_code": 0, "signal": 9}, "Error", 137),
    ],
)
def test_failures(slurm: JobStatus, extra: dict[str, object], reason: str, code: int) -> None:
    body = status.pod_status(state(slurm, start_time=START, end_time=END, **extra), FACTS)
    assert body is not None
    assert body["phase"] == "Failed"
    terminated = container_state(body)["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == (reason, code)
    assert "Slurm job 12" in body["message"]


@pytest.mark.parametrize(
    ("slurm", "phase"),
    [
        (JobStatus.REQUEUED, "Pending"),
        (JobStatus.CONFIGURING, "Pending"),
        (JobStatus.COMPLETING, "Running"),
        (JobStatus.SUSPENDED, "Running"),
        (JobStatus.UNKNOWN, None),
    ],
)
def test_other_phases(slurm: JobStatus, phase: str | None) -> None:
    assert status.phase_of(slurm) == phase


def test_suspended_is_running_but_not_ready() -> None:
    body = status.pod_status(state(JobStatus.SUSPENDED, start_time=START), FACTS)
    assert body is not None
    assert conditions(body)["Ready"] == "False"


def test_unknown_leaves_the_pod_alone() -> None:
    assert status.pod_status(state(JobStatus.UNKNOWN), FACTS) is None


def test_same_state_gives_the_same_status() -> None:
    one = status.pod_status(state(JobStatus.RUNNING, start_time=START), FACTS)
    two = status.pod_status(state(JobStatus.RUNNING, start_time=START), FACTS)
    assert one == two


def test_transitions_post_one_event_per_phase_change() -> None:
    pending = state(JobStatus.PENDING, reason="Resources")
    running = state(JobStatus.RUNNING, start_time=START, node_list="vm")
    done = state(JobStatus.COMPLETED, exit_code=0)
    failed = state(JobStatus.FAILED, exit_code=3, reason="NonZeroExitCode")
    assert status.transitions(None, pending) == []  # "Submitted" was posted at submission
    requeued = state(JobStatus.REQUEUED, reason="BeginTime")
    assert [t.reason for t in status.transitions(state(JobStatus.RUNNING), requeued)] == ["Pending"]
    assert status.transitions(pending, state(JobStatus.PENDING, reason="Priority")) == []
    started = status.transitions(pending, running)
    assert [(t.type, t.reason) for t in started] == [("Normal", "Started")]
    assert "on vm" in started[0].message
    assert [(t.type, t.reason) for t in status.transitions(running, done)] == [("Normal", "Completed")]
    failure = status.transitions(running, failed)
    assert [(t.type, t.reason) for t in failure] == [("Warning", "Error")]
    assert "exit code 3" in failure[0].message
    assert status.transitions(running, state(JobStatus.UNKNOWN)) == []


def test_rejected_status_is_failed_with_reason() -> None:
    body = status.rejected_status("UnsupportedPorts", "no ports", FACTS, now=END)
    assert body["phase"] == "Failed"
    assert body["reason"] == "UnsupportedPorts"
    assert body["containerStatuses"][0]["state"]["terminated"]["reason"] == "UnsupportedPorts"


def test_a_pod_ended_without_a_job_state_has_a_container_that_never_started() -> None:
    """Refused, or deleted with no final job state: one terminated container, no container ID."""

    def container(code: int, reason: str, **message: str) -> object:
        at = "2026-12-02T14:43:35Z"
        terminated = {"exitCode": code, "reason": reason, **message, "startedAt": at, "finishedAt": at}
        return [
            {
                "name": "main",
                "image": "busybox",
                "imageID": "",
                "restartCount": 0,
                "ready": False,
                "started": False,
                "state": {"terminated": terminated},
            }
        ]

    refused = status.rejected_status("UnsupportedPorts", "no ports", FACTS, now=END)
    assert refused["containerStatuses"] == container(126, "UnsupportedPorts", message="no ports")
    deleted = status.deleted_status(JobId(12), FACTS, now=END, state=None)
    assert (deleted["phase"], deleted["reason"], deleted["message"]) == (
        "Failed",
        "Deleted",
        "pod deleted: Slurm job 12 cancelled",
    )
    assert deleted["containerStatuses"] == container(143, "Cancelled")


def test_deleted_status_prefers_the_final_job_state() -> None:
    cancelled = state(JobStatus.CANCELLED, signal=15, start_time=START, end_time=END)
    body = status.deleted_status(JobId(12), FACTS, now=END, state=cancelled)
    assert body["containerStatuses"][0]["state"]["terminated"]["reason"] == "Cancelled"
    never = status.deleted_status(None, FACTS, now=END, state=None)
    assert never["phase"] == "Failed"
    assert "no Slurm job" in never["message"]


def test_a_lost_job_is_over_and_a_deleted_pod_says_so() -> None:
    lost = state(JobStatus.NOT_FOUND, reason="the job left Slurm before red-box saw it end")
    assert [s for s in JobStatus if status.over(s)] == [
        s for s in JobStatus if s.terminal or s is JobStatus.NOT_FOUND
    ]
    body = status.deleted_status(JobId(12), FACTS, now=END, state=lost)
    terminated = container_state(body)["terminated"]
    assert (body["phase"], terminated["reason"]) == ("Failed", "JobLost")
    assert "left Slurm before red-box saw it end" in terminated["message"]  # type: ignore[operator]


def test_a_pod_held_by_a_limit_is_pending_with_slurms_reason() -> None:
    body = status.held_status(
        "QOSMaxSubmitJobPerUserLimit", "Slurm refused the job for now: x", FACTS, now=START
    )
    assert body["phase"] == "Pending"
    waiting = body["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {"reason": "QOSMaxSubmitJobPerUserLimit", "message": "Slurm refused the job for now: x"}
    ready = next(c for c in body["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "QOSMaxSubmitJobPerUserLimit")
