"""Pod phase, conditions and container statuses as the kubelet reports them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from wlmvk_dev.apiserver.rules.qos import qos_class
from wlmvk_dev.hostnode.podstatus import ContainerState, phase, pod_status

T0 = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)


def running(name: str = "c") -> ContainerState:
    return ContainerState(name, "img", started_at=T0)


def exited(code: int, name: str = "c") -> ContainerState:
    reason = "Completed" if code == 0 else "Error"
    return ContainerState(
        name, "img", started_at=T0, finished_at=T0 + timedelta(seconds=1), exit_code=code, reason=reason
    )


def waiting(name: str = "c") -> ContainerState:
    return ContainerState(name, "img")


def backing_off(name: str = "c") -> ContainerState:
    state = ContainerState(name, "img", waiting_reason="CrashLoopBackOff", will_restart=True)
    state.last_terminated = exited(1).terminated_state()
    return state


@pytest.mark.parametrize(
    ("init", "containers", "policy", "expected"),
    [
        ([], [waiting()], "Never", "Pending"),
        ([], [running()], "Never", "Running"),
        ([], [exited(0)], "Never", "Succeeded"),
        ([], [exited(1)], "Never", "Failed"),
        ([], [exited(0), exited(2, "d")], "Never", "Failed"),
        ([], [exited(0), running("d")], "Never", "Running"),
        ([], [exited(0)], "OnFailure", "Succeeded"),
        ([], [backing_off()], "OnFailure", "Running"),
        # Ended, its restart not yet decided: the kubelet says Running, never Failed, meanwhile.
        ([], [exited(1)], "OnFailure", "Running"),
        ([], [exited(0), exited(2, "d")], "OnFailure", "Running"),
        ([], [backing_off()], "Always", "Running"),
        ([], [exited(0)], "Always", "Running"),
        ([running("i")], [waiting()], "Never", "Pending"),
        ([exited(1, "i")], [waiting()], "Never", "Failed"),
        ([exited(0, "i")], [running()], "Never", "Running"),
        ([backing_off("i")], [waiting()], "OnFailure", "Pending"),
        ([exited(1, "i")], [waiting()], "OnFailure", "Pending"),
        ([exited(1, "i")], [waiting()], "Always", "Pending"),
    ],
)
def test_phase(
    init: list[ContainerState], containers: list[ContainerState], policy: str, expected: str
) -> None:
    assert phase(init, containers, policy) == expected


def test_container_status_shapes() -> None:
    assert running().status()["state"] == {"running": {"startedAt": "2026-12-02T12:00:00Z"}}
    assert running().status()["ready"] is True
    done = exited(3).status()
    assert done["state"]["terminated"]["exitCode"] == 3
    assert done["state"]["terminated"]["reason"] == "Error"
    assert done["ready"] is False
    assert waiting().status()["state"] == {"waiting": {"reason": "ContainerCreating"}}
    again = backing_off().status()
    assert again["state"] == {"waiting": {"reason": "CrashLoopBackOff"}}
    assert again["lastState"]["terminated"]["exitCode"] == 1


def conditions_of(status: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {c["type"]: (c["status"], c.get("reason")) for c in status["conditions"]}


def test_running_pod_is_ready_and_keeps_pod_scheduled() -> None:
    pod = {
        "spec": {"restartPolicy": "Never"},
        "status": {"conditions": [{"type": "PodScheduled", "status": "True"}]},
    }
    status = pod_status(
        pod, init=[], containers=[running()], sandbox_ready=True, host_ip="10.1.1.1", start_time=T0, now=T0
    )
    assert status["phase"] == "Running"
    assert conditions_of(status) == {
        "PodScheduled": ("True", None),
        "PodReadyToStartContainers": ("True", None),
        "Initialized": ("True", None),
        "ContainersReady": ("True", None),
        "Ready": ("True", None),
    }
    assert (status["hostIP"], status["podIP"], status["startTime"]) == (
        "10.1.1.1",
        "10.1.1.1",
        "2026-12-02T12:00:00Z",
    )


def test_completed_pod_conditions() -> None:
    status = pod_status(
        {"spec": {"restartPolicy": "Never"}},
        init=[],
        containers=[exited(0)],
        sandbox_ready=True,
        host_ip="h",
        start_time=T0,
        now=T0,
    )
    assert status["phase"] == "Succeeded"
    assert conditions_of(status)["Ready"] == ("False", "PodCompleted")


def test_waiting_container_makes_pod_not_ready_with_its_name() -> None:
    status = pod_status(
        {"spec": {}},
        init=[],
        containers=[waiting("a")],
        sandbox_ready=False,
        host_ip="h",
        start_time=T0,
        now=T0,
    )
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["message"] == "containers with unready status: [a]"


def test_transition_time_is_kept_while_status_holds() -> None:
    pod: dict[str, Any] = {"spec": {}, "status": {}}
    first = pod_status(
        pod, init=[], containers=[running()], sandbox_ready=True, host_ip="h", start_time=T0, now=T0
    )
    pod["status"] = first
    later = pod_status(
        pod,
        init=[],
        containers=[running()],
        sandbox_ready=True,
        host_ip="h",
        start_time=T0,
        now=T0 + timedelta(1),
    )
    assert later["conditions"] == first["conditions"]


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "1"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}, "Burstable"),
    ],
)
def test_qos_class(resources: dict[str, Any], expected: str) -> None:
    assert qos_class({"spec": {"containers": [{"name": "c", "resources": resources}]}}) == expected
