"""The job state crossing from kubelet to operator: the reason the kubelet writes is the one the
operator reads, as a typed value (``core.names.EndReason``), not a word looked for in a string."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.core.names import EndReason
from wlmvk.kubelet.pods import status as pod_status
from wlmvk.operator.observed import cancelled, view

FACTS = pod_status.PodFacts(container="job")
AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def pod_for(state: JobState) -> dict[str, object]:
    status = pod_status.pod_status(state, FACTS)
    assert status is not None
    return {"metadata": {"name": "sj-job"}, "status": status}


@pytest.mark.parametrize("status", [s for s in JobStatus if pod_status.over(s)])
def test_the_operator_sees_cancelled_exactly_when_slurm_cancelled_the_job(status: JobStatus) -> None:
    state = JobState(JobId(7), status, submit_time=AT, start_time=AT, end_time=AT)
    assert cancelled(view(pod_for(state))) is (status is JobStatus.CANCELLED)


def test_a_deleted_pod_reads_as_cancelled() -> None:
    body = pod_status.deleted_status(JobId(7), FACTS, now=AT, state=None)
    assert cancelled(view({"metadata": {"name": "sj-job"}, "status": body}))


@pytest.mark.parametrize("reason", ["CancelledByPolicy", "NotCancelled", "cancelled"])
def test_a_reason_that_only_contains_the_word_is_not_a_cancel(reason: str) -> None:
    pod = {
        "metadata": {"name": "sj-job"},
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"state": {"terminated": {"exitCode": 1, "reason": reason}}}],
        },
    }
    assert not cancelled(view(pod))


def test_every_end_reason_is_one_word_a_user_can_read() -> None:
    assert EndReason.CANCELLED == "Cancelled"
    assert EndReason.JOB_FINISHED == "Job finished"  # the original's, kept for kubectl get pods
    assert len(set(EndReason)) == len(list(EndReason))
