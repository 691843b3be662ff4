"""Job state -> pod status: pure functions of values.

Slurm's state decides the pod's phase, its four conditions and the state
of its one container; the original's "Job finished" reason for a completed
job is kept, so ``kubectl get pods`` reads as it did. Times come from the
job (submit, start, end), so the same state always gives the same status
and a status write is needed only when something a user can see changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from wlmvk.core.jobs import JobId, JobState, JobStatus
from wlmvk.core.names import EndReason, EventType
from wlmvk.kube import times
from wlmvk.kube.bodies import Body

PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
TERMINAL_PHASES = frozenset({SUCCEEDED, FAILED})

FINISHED_REASON = EndReason.JOB_FINISHED
IMAGE_USED = "wlm.sylabs.io/ImageUsed"
"""A plain pod's condition, False when its image does not run (no Apptainer or Singularity there)."""
NO_CONTAINER_RUNTIME = "NoContainerRuntime"

# Slurm's terminal states -> the container's terminated reason, and the exit code
# to report when Slurm gives none (128 + signal, as a shell would).
_TERMINATED: dict[JobStatus, tuple[EndReason, int]] = {
    JobStatus.COMPLETED: (EndReason.JOB_FINISHED, 0),
    JobStatus.FAILED: (EndReason.ERROR, 1),
    JobStatus.CANCELLED: (EndReason.CANCELLED, 143),
    JobStatus.TIMEOUT: (EndReason.TIMEOUT, 143),
    JobStatus.OUT_OF_MEMORY: (EndReason.OUT_OF_MEMORY, 137),
    JobStatus.NODE_FAIL: (EndReason.NODE_FAIL, 1),
    JobStatus.PREEMPTED: (EndReason.PREEMPTED, 143),
    JobStatus.BOOT_FAIL: (EndReason.BOOT_FAIL, 1),
    JobStatus.DEADLINE: (EndReason.DEADLINE_EXCEEDED, 1),
    JobStatus.NOT_FOUND: (EndReason.JOB_LOST, 1),
}
_PENDING_STATES = frozenset({JobStatus.PENDING, JobStatus.REQUEUED, JobStatus.CONFIGURING})
_RUNNING_STATES = frozenset({JobStatus.RUNNING, JobStatus.COMPLETING, JobStatus.SUSPENDED})


@dataclass(frozen=True)
class PodFacts:
    """What the status needs to know of the pod besides the job."""

    container: str
    image: str = ""
    host_ip: str = "127.0.0.1"
    created: str = ""
    image_unused: str = ""
    """Why the pod's image does not run ("" when it does): the ``IMAGE_USED`` condition's message."""


def _time(moment: datetime | None) -> str | None:
    return times.rfc3339(moment) if moment else None


def phase_of(status: JobStatus) -> str | None:
    """The pod phase of a Slurm state; None for UNKNOWN (leave the pod as it is)."""
    if status in _PENDING_STATES:
        return PENDING
    if status in _RUNNING_STATES:
        return RUNNING
    if status is JobStatus.COMPLETED:
        return SUCCEEDED
    if status in _TERMINATED:
        return FAILED
    return None


def over(status: JobStatus) -> bool:
    """True once the pod's job will not change: Slurm finished it, or it is gone (NOT_FOUND: never
    seen, or left Slurm before its end was seen; no later answer will come for it)."""
    return phase_of(status) in TERMINAL_PHASES


def exit_code_of(state: JobState) -> int:
    """The container exit code of a finished job."""
    if state.exit_code:
        return state.exit_code
    if state.status is JobStatus.COMPLETED:
        return 0
    if state.signal:
        return 128 + state.signal
    return _TERMINATED.get(state.status, ("", 1))[1]


def pod_status(state: JobState, facts: PodFacts) -> Body | None:
    """The full pod status for ``state``; None when the state says nothing (UNKNOWN)."""
    phase = phase_of(state.status)
    if phase is None:
        return None
    submitted = _time(state.submit_time) or facts.created or None
    started = _time(state.start_time)
    finished = _time(state.end_time) or started or submitted
    job = f"Slurm job {state.job_id}"
    ready = phase == RUNNING and state.status is not JobStatus.SUSPENDED
    container: Body = {
        "name": facts.container,
        "image": facts.image,
        "imageID": "",
        "containerID": f"slurm://{state.job_id}",
        "restartCount": 0,
        "ready": ready,
        "started": phase == RUNNING,
    }
    status: Body = {"phase": phase}
    if phase == PENDING:
        reason = state.reason if state.reason and state.reason != "None" else "Pending"
        container["state"] = {"waiting": {"reason": reason, "message": f"{job} is {state.status.value}"}}
        ready_since = submitted
    elif phase == RUNNING:
        container["state"] = {"running": {"startedAt": started or submitted}}
        ready_since = started or submitted
    else:
        reason, _ = _TERMINATED[state.status]
        terminated: Body = {
            "exitCode": exit_code_of(state),
            "reason": reason,
            "message": _ending(state),
            "startedAt": started or submitted,
            "finishedAt": finished,
            "containerID": f"slurm://{state.job_id}",
        }
        if state.signal:
            terminated["signal"] = state.signal
        container["state"] = {"terminated": terminated}
        ready_since = finished
        status["message"] = _ending(state)
    status["conditions"] = [
        _condition("PodScheduled", True, submitted),
        _condition("Initialized", True, submitted),
        _condition("ContainersReady", ready, ready_since),
        _condition("Ready", ready, ready_since),
    ]
    if facts.image_unused:
        unused = _condition(IMAGE_USED, False, submitted, NO_CONTAINER_RUNTIME)
        status["conditions"].append({**unused, "message": facts.image_unused})
    status["containerStatuses"] = [container]
    status["hostIP"] = facts.host_ip
    status["hostIPs"] = [{"ip": facts.host_ip}]
    status["podIP"] = facts.host_ip
    status["podIPs"] = [{"ip": facts.host_ip}]
    status["startTime"] = submitted
    return status


def held_status(reason: str, message: str, facts: PodFacts, *, now: datetime) -> Body:
    """A pod whose job a limit of Slurm's refused for now: Pending, the limit on its container."""
    at = facts.created or times.rfc3339(now)
    container = _not_started(facts, {"waiting": {"reason": reason, "message": message}})
    return {
        "phase": PENDING,
        "conditions": [
            _condition("PodScheduled", True, at),
            _condition("Initialized", True, at),
            _condition("ContainersReady", False, at, reason),
            _condition("Ready", False, at, reason),
        ],
        "containerStatuses": [container],
        "hostIP": facts.host_ip,
        "hostIPs": [{"ip": facts.host_ip}],
    }


def rejected_status(reason: str, message: str, facts: PodFacts, *, now: datetime) -> Body:
    """A pod that could not become a job: Failed, with the reason on the pod and its container."""
    at = times.rfc3339(now)
    return {
        "phase": FAILED,
        "reason": reason,
        "message": message,
        "conditions": [
            _condition("PodScheduled", True, at),
            _condition("Initialized", False, at, reason),
            _condition("ContainersReady", False, at, reason),
            _condition("Ready", False, at, reason),
        ],
        "containerStatuses": _never_started(facts, exit_code=126, reason=reason, at=at, message=message),
        "hostIP": facts.host_ip,
        "hostIPs": [{"ip": facts.host_ip}],
        "startTime": at,
    }


def deleted_status(job_id: JobId | None, facts: PodFacts, *, now: datetime, state: JobState | None) -> Body:
    """The terminated status written before a deleted pod is removed."""
    if state is not None and over(state.status):
        result = pod_status(state, facts)
        if result is not None:
            return result
    at = times.rfc3339(now)
    what = f"Slurm job {job_id} cancelled" if job_id else "no Slurm job was submitted"
    return {
        "phase": FAILED,
        "reason": "Deleted",
        "message": f"pod deleted: {what}",
        "containerStatuses": _never_started(facts, exit_code=143, reason=EndReason.CANCELLED.value, at=at),
    }


def _never_started(
    facts: PodFacts, *, exit_code: int, reason: str, at: str, message: str | None = None
) -> list[Body]:
    """The container of a pod ended with no job state to show: terminated at ``at``, no container ID."""
    terminated: Body = {"exitCode": exit_code, "reason": reason, "startedAt": at, "finishedAt": at}
    if message is not None:
        terminated["message"] = message
    return [_not_started(facts, {"terminated": terminated})]


def _not_started(facts: PodFacts, state: Body) -> Body:
    """The container of a pod whose job never ran (yet), in ``state``."""
    return {
        "name": facts.container,
        "image": facts.image,
        "imageID": "",
        "restartCount": 0,
        "ready": False,
        "started": False,
        "state": state,
    }


@dataclass(frozen=True)
class Transition:
    """An Event to post: ``type`` Normal/Warning, CamelCase ``reason``, and a message."""

    type: EventType
    reason: str
    message: str


def transitions(before: JobState | None, after: JobState) -> list[Transition]:
    """The Events that moving from ``before`` to ``after`` deserves (none for no visible change)."""
    old = phase_of(before.status) if before else None
    new = phase_of(after.status)
    if new is None or new == old:
        return []
    job = f"Slurm job {after.job_id}"
    if new == PENDING:
        if before is None:
            return []  # the "Submitted" (or "Adopted") Event already said so
        reason = after.reason if after.reason and after.reason != "None" else "queued"
        return [Transition(EventType.NORMAL, "Pending", f"{job} is pending ({reason})")]
    if new == RUNNING:
        where = f" on {after.node_list}" if after.node_list else ""
        return [Transition(EventType.NORMAL, "Started", f"{job} started{where}")]
    if new == SUCCEEDED:
        return [Transition(EventType.NORMAL, "Completed", f"{job} completed (exit code 0)")]
    return [Transition(EventType.WARNING, _TERMINATED[after.status][0].replace(" ", ""), _ending(after))]


def _ending(state: JobState) -> str:
    detail = f"exit code {exit_code_of(state)}"
    if state.reason and state.reason != "None":
        detail += f", {state.reason}"
    return f"Slurm job {state.job_id} {state.status.value} ({detail})"


def _condition(kind: str, value: bool, since: str | None, reason: str = "") -> Body:
    condition: Body = {"type": kind, "status": "True" if value else "False", "lastProbeTime": None}
    if since:
        condition["lastTransitionTime"] = since
    if reason:
        condition["reason"] = reason
    return condition
