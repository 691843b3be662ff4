"""What a pod says about its step, read from its status once.

The kubelets (ours for job pods, the host kubelet for staging pods) report
through the pod status; this module reads the few facts reconciliation
needs from it, tolerating every absent field.
"""

from __future__ import annotations

from dataclasses import dataclass

from wlmvk.core import names
from wlmvk.kube import objects
from wlmvk.kube.bodies import Body


@dataclass(frozen=True)
class PodView:
    name: str
    phase: str
    node: str = ""
    job_id: str = ""
    unschedulable: str = ""  # the scheduler's message while the pod cannot be placed
    started_at: str = ""
    finished_at: str = ""
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    deleting: bool = False
    annotations: tuple[tuple[str, str], ...] = ()

    @property
    def done(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def annotation(self, key: str) -> str:
        return dict(self.annotations).get(key, "")

    def explain(self) -> str:
        """A sentence for the user about why the pod ended as it did."""
        parts = []
        if self.exit_code is not None:
            parts.append(f"exit code {self.exit_code}")
        if self.reason:
            parts.append(self.reason)
        text = ", ".join(parts)
        if self.message:
            text = f"{text}: {self.message}" if text else self.message
        return text or f"pod {self.phase.lower()}"


def view(pod: Body) -> PodView:
    status = objects.status(pod)
    annotations = objects.annotations(pod)
    unschedulable = ""
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            unschedulable = str(condition.get("message") or condition.get("reason") or "Unschedulable")
    started = finished = ""
    exit_code: int | None = None
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    statuses = status.get("containerStatuses") or []
    if statuses:
        state = statuses[0].get("state") or {}
        running = state.get("running") or {}
        terminated = state.get("terminated") or {}
        waiting = state.get("waiting") or {}
        if waiting.get("reason"):
            reason = str(waiting["reason"])
            message = str(waiting.get("message") or message)
        started = str(terminated.get("startedAt") or running.get("startedAt") or "")
        if terminated:
            finished = str(terminated.get("finishedAt") or "")
            if terminated.get("exitCode") is not None:
                exit_code = int(terminated["exitCode"])
            reason = str(terminated.get("reason") or reason)
            message = str(terminated.get("message") or message).strip()
    return PodView(
        name=objects.name(pod),
        phase=str(status.get("phase") or "Pending"),
        node=objects.node_name(pod),
        job_id=str(annotations.get(names.ANNOTATION_JOB_ID, "")),
        unschedulable=unschedulable,
        started_at=started,
        finished_at=finished,
        exit_code=exit_code,
        reason=reason,
        message=message,
        deleting=objects.deleting(pod),
        annotations=tuple(sorted((str(k), str(v)) for k, v in annotations.items())),
    )


def cancelled(pod: PodView) -> bool:
    """The WLM job was cancelled (scancel), as the kubelet reports it."""
    return pod.reason == names.EndReason.CANCELLED
