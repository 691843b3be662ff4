"""A pod's status as the kubelet reports it, from the states of its containers (pure).

The phase follows the kubelet's ``getPhase``: Pending while init containers
have not all succeeded or a container has never started; Running while a
container runs or will be restarted; once all have stopped for good,
Succeeded if every one exited 0, else Failed. The conditions are the
kubelet's five (PodReadyToStartContainers, Initialized, ContainersReady,
Ready, and the scheduler's PodScheduled kept as it is); containers without
probes are ready while they run. ``qosClass`` is the API server's (set at
creation, immutable) and never written here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wlmvk.kube.bodies import Body
from wlmvk_dev.apiserver.objects import timestamps

COMPLETED = "Completed"
ERROR = "Error"
START_ERROR = "StartError"


@dataclass
class ContainerState:
    """What the runtime knows about one container of a pod (mutable, owned by its runner)."""

    name: str
    image: str = ""
    container_id: str = ""
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    restart_count: int = 0
    last_terminated: Body | None = None
    will_restart: bool = False
    """Terminated, and the restart policy will start it again (after a back-off)."""

    @property
    def running(self) -> bool:
        return self.started_at is not None and self.exit_code is None

    @property
    def terminated(self) -> bool:
        return self.exit_code is not None

    def terminated_state(self) -> Body:
        state: Body = {
            "exitCode": self.exit_code,
            "reason": self.reason,
            "startedAt": _time(self.started_at),
            "finishedAt": _time(self.finished_at),
            "containerID": self.container_id,
        }
        if self.message:
            state["message"] = self.message
        return state

    def status(self) -> Body:
        """The ``containerStatuses`` item."""
        if self.terminated and not self.will_restart:
            state: Body = {"terminated": self.terminated_state()}
        elif self.running:
            state = {"running": {"startedAt": _time(self.started_at)}}
        else:
            waiting: Body = {"reason": self.waiting_reason}
            if self.waiting_message:
                waiting["message"] = self.waiting_message
            state = {"waiting": waiting}
        body: Body = {
            "name": self.name,
            "image": self.image,
            "imageID": "",
            "ready": self.running,
            "started": self.running,
            "restartCount": self.restart_count,
            "state": state,
            "lastState": {"terminated": self.last_terminated} if self.last_terminated else {},
        }
        if self.container_id:
            body["containerID"] = self.container_id
        return body


def phase(init: Sequence[ContainerState], containers: Sequence[ContainerState], restart_policy: str) -> str:
    """The kubelet's pod phase (its ``getPhase``).

    A container that failed is restarted unless the policy is Never, so with Always or
    OnFailure a failure leaves the pod Pending (an init container) or Running, even in the
    moment between the container's end and its restart's back-off.
    """
    for state in init:
        if state.terminated and state.exit_code != 0 and restart_policy == "Never":
            return "Failed"
    if any(not (s.terminated and s.exit_code == 0) for s in init):
        return "Pending"
    running = stopped = succeeded = waiting = 0
    for state in containers:
        if state.running:
            running += 1
        elif state.terminated:
            stopped += 1
            succeeded += state.exit_code == 0
        elif state.last_terminated is not None:
            stopped += 1
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if restart_policy == "Always":
        return "Running"
    if stopped and succeeded == stopped:
        return "Succeeded"
    return "Failed" if restart_policy == "Never" else "Running"


def conditions(
    previous: Iterable[Mapping[str, Any]],
    *,
    sandbox_ready: bool,
    init: Sequence[ContainerState],
    containers: Sequence[ContainerState],
    pod_phase: str,
    now: datetime,
) -> list[Body]:
    """The pod's conditions; lastTransitionTime kept while a condition's status stays."""
    done = pod_phase in ("Succeeded", "Failed")
    initialized = all(s.terminated and s.exit_code == 0 for s in init)
    unready = [s.name for s in containers if not s.running]
    wanted: list[tuple[str, bool, str, str]] = [
        ("PodReadyToStartContainers", sandbox_ready and not done, "", ""),
        (
            "Initialized",
            initialized,
            "" if initialized else "ContainersNotInitialized",
            "" if initialized else f"containers with incomplete status: [{' '.join(_unfinished(init))}]",
        ),
    ]
    for kind in ("ContainersReady", "Ready"):
        if done:
            wanted.append((kind, False, "PodCompleted", ""))
        elif unready:
            message = f"containers with unready status: [{' '.join(unready)}]"
            wanted.append((kind, False, "ContainersNotReady", message))
        else:
            wanted.append((kind, True, "", ""))
    old = {c.get("type"): c for c in previous}
    result = []
    for kind, ok, reason, message in wanted:
        status = "True" if ok else "False"
        before = old.get(kind)
        since = before.get("lastTransitionTime") if before and before.get("status") == status else None
        condition: Body = {"type": kind, "status": status, "lastProbeTime": None}
        condition["lastTransitionTime"] = since or _time(now)
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        result.append(condition)
    scheduled = old.get("PodScheduled")
    if scheduled is not None:
        result.insert(0, dict(scheduled))
    return result


def pod_status(
    pod: Mapping[str, Any],
    *,
    init: Sequence[ContainerState],
    containers: Sequence[ContainerState],
    sandbox_ready: bool,
    host_ip: str,
    start_time: datetime,
    now: datetime,
    failure: tuple[str, str] | None = None,
) -> Body:
    """The whole ``status`` the kubelet writes for ``pod``; ``failure`` (reason, message) fails it."""
    restart_policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    old = pod.get("status") or {}
    pod_phase = "Failed" if failure is not None else phase(init, containers, restart_policy)
    status: Body = {
        "phase": pod_phase,
        "conditions": conditions(
            old.get("conditions") or [],
            sandbox_ready=sandbox_ready,
            init=init,
            containers=containers,
            pod_phase=pod_phase,
            now=now,
        ),
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": host_ip,
        "podIPs": [{"ip": host_ip}],
        "startTime": _time(start_time),
        "containerStatuses": [s.status() for s in containers],
    }
    if init:
        status["initContainerStatuses"] = [s.status() for s in init]
    if failure is not None:
        status["reason"], status["message"] = failure
    return status


def is_finished(pod: Mapping[str, Any]) -> bool:
    """Succeeded or Failed: the phases a pod never leaves."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def terminated_reason(exit_code: int) -> str:
    return COMPLETED if exit_code == 0 else ERROR


def _unfinished(init: Sequence[ContainerState]) -> list[str]:
    return [s.name for s in init if not (s.terminated and s.exit_code == 0)]


def _time(moment: datetime | None) -> str | None:
    return timestamps.format_time(moment) if moment is not None else None
