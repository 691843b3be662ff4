"""What kubectl get prints: pod STATUS, node STATUS/ROLES, ages, custom printer columns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from wlmvk_dev.apiserver.handlers.tables import (
    human_duration,
    node_roles,
    node_status,
    parse_time,
    pod_status,
    table,
)
from wlmvk_dev.apiserver.objects.resources import BUILTINS, GVR, NODES, PODS, ResourceInfo

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-0.6, "0s"),
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (120, "2m"),
        (185, "3m5s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (7 * 3600 + 60, "7h1m"),
        (47 * 3600, "47h"),
        (2 * 86400, "2d"),
        (3 * 86400 + 3600, "3d1h"),
        (30 * 86400, "30d"),
        (800 * 86400, "2y70d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration_matches_kubectl(seconds: float, shown: str) -> None:
    assert human_duration(seconds) == shown


def pod(
    *statuses: dict[str, Any], phase: str = "Running", deleting: bool = False, **status: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "creationTimestamp": "2026-12-02T11:55:00Z"}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-02T12:00:30Z"
    return {
        "metadata": meta,
        "spec": {"containers": [{"name": f"c{n}"} for n in range(max(1, len(statuses)))]},
        "status": {"phase": phase, "containerStatuses": list(statuses), **status},
    }


def term(reason: str = "", code: int = 0, signal: int = 0) -> dict[str, Any]:
    t: dict[str, Any] = {"exitCode": code}
    if reason:
        t["reason"] = reason
    if signal:
        t["signal"] = signal
    return {"name": "c", "ready": False, "restartCount": 0, "state": {"terminated": t}}


def running(ready: bool = True) -> dict[str, Any]:
    return {"name": "c", "ready": ready, "restartCount": 0, "state": {"running": {"startedAt": "x"}}}


@pytest.mark.parametrize(
    ("obj", "shown"),
    [
        (pod(phase="Pending"), "Pending"),
        (pod(running()), "Running"),
        (pod(term("Completed"), phase="Succeeded"), "Completed"),
        (pod(term("Job finished"), phase="Succeeded"), "Job finished"),
        (pod(term("Error", 1), phase="Failed"), "Error"),
        (pod(term(code=2), phase="Failed"), "ExitCode:2"),
        (pod(term(code=137, signal=9), phase="Failed"), "Signal:9"),
        (
            pod({"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}}, phase="Pending"),
            "ContainerCreating",
        ),
        (pod({"name": "c", "state": {"waiting": {}}}, phase="Pending"), "Pending"),
        (pod(running(), deleting=True), "Terminating"),
        (pod(term("Completed"), phase="Succeeded", deleting=True), "Completed"),
        (pod(phase="Failed", reason="DeadlineExceeded"), "DeadlineExceeded"),
        (pod(running(), term("Completed"), conditions=[{"type": "Ready", "status": "True"}]), "Running"),
        (pod(running(), term("Completed")), "NotReady"),
        (pod(phase="Running", reason="NodeLost", deleting=True), "Unknown"),
    ],
)
def test_pod_status_column(obj: dict[str, Any], shown: str) -> None:
    assert pod_status(obj) == shown


def test_init_container_states() -> None:
    base = pod(phase="Pending")
    base["spec"]["initContainers"] = [{"name": "i1"}, {"name": "i2"}]
    base["status"]["initContainerStatuses"] = [
        {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
        {"name": "i2", "state": {"running": {}}},
    ]
    assert pod_status(base) == "Init:1/2"
    base["status"]["initContainerStatuses"][1]["state"] = {"terminated": {"exitCode": 1, "reason": "Error"}}
    assert pod_status(base) == "Init:Error"
    base["status"]["initContainerStatuses"][1]["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
    assert pod_status(base) == "Init:CrashLoopBackOff"


def node(conditions: list[dict[str, str]], *, unschedulable: bool = False, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "n", "labels": labels},
        "spec": {"unschedulable": unschedulable},
        "status": {"conditions": conditions},
    }


@pytest.mark.parametrize(
    ("obj", "shown"),
    [
        (node([{"type": "Ready", "status": "True"}]), "Ready"),
        (node([{"type": "Ready", "status": "False"}]), "NotReady"),
        (node([{"type": "Ready", "status": "Unknown"}]), "NotReady"),
        (node([{"type": "MemoryPressure", "status": "False"}]), "Unknown"),
        (node([{"type": "Ready", "status": "True"}], unschedulable=True), "Ready,SchedulingDisabled"),
    ],
)
def test_node_status_column(obj: dict[str, Any], shown: str) -> None:
    assert node_status(obj) == shown


def test_node_roles_from_labels() -> None:
    assert node_roles(node([])) == "<none>"
    assert node_roles(node([], **{"kubernetes.io/role": "agent"})) == "agent"
    labels = {
        "node-role.kubernetes.io/control-plane": "",
        "node-role.kubernetes.io/worker": "",
        "kubernetes.io/role": "agent",
    }
    assert node_roles(node([], **labels)) == "agent,control-plane,worker"


def info(gvr: GVR) -> ResourceInfo:
    return next(i for i in BUILTINS if i.gvr == gvr)


def test_pod_table_rows_and_restarts() -> None:
    p = pod(running())
    p["status"]["containerStatuses"][0]["restartCount"] = 2
    p["status"]["containerStatuses"][0]["lastState"] = {"terminated": {"finishedAt": "2026-12-02T11:58:00Z"}}
    t = table(info(PODS), [p], "7", now=NOW)
    assert [c["name"] for c in t["columnDefinitions"] if c["priority"] == 0] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
    ]
    assert t["rows"][0]["cells"][:5] == ["p", "1/1", "Running", "2 (2m ago)", "5m"]
    assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert t["metadata"]["resourceVersion"] == "7"


def test_node_table_row() -> None:
    n = node([{"type": "Ready", "status": "True"}], **{"kubernetes.io/role": "agent"})
    n["metadata"]["creationTimestamp"] = "2026-12-02T09:00:00Z"
    n["status"]["nodeInfo"] = {"kubeletVersion": "v1.32.0"}
    assert table(info(NODES), [n], "1", now=NOW)["rows"][0]["cells"][:5] == [
        "n",
        "Ready",
        "agent",
        "3h",
        "v1.32.0",
    ]


def test_custom_printer_columns() -> None:
    columns = (
        {"name": "Status", "type": "string", "jsonPath": ".status.status"},
        {"name": "Nodes", "type": "integer", "jsonPath": ".spec.nodes"},
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Hosts", "type": "string", "jsonPath": ".status.hosts[*]"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Job", "type": "string", "jsonPath": ".status.jobId", "priority": 1},
    )
    cr = ResourceInfo(
        GVR("wlm.sylabs.io", "v1alpha1", "slurmjobs"), "SlurmJob", True, "slurmjob", printer_columns=columns
    )
    obj = {
        "metadata": {"name": "sj", "creationTimestamp": "2026-12-02T11:59:00Z"},
        "spec": {"nodes": 2},
        "status": {
            "status": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "hosts": ["a", "b"],
        },
    }
    t = table(cr, [obj], "3", now=NOW)
    assert [c["name"] for c in t["columnDefinitions"]] == [
        "Name",
        "Status",
        "Nodes",
        "Ready",
        "Hosts",
        "Age",
        "Job",
    ]
    assert t["columnDefinitions"][-1]["priority"] == 1
    assert t["rows"][0]["cells"] == ["sj", "Running", 2, "True", "a,b", "60s", None]
    plain = ResourceInfo(GVR("x.io", "v1", "things"), "Thing", True, "thing")
    assert table(plain, [obj], "3", now=NOW)["rows"][0]["cells"] == ["sj", "60s"]


def test_workloads_show_replica_counts_even_though_nothing_runs_them() -> None:
    from wlmvk_dev.apiserver.objects.resources import DAEMONSETS, DEPLOYMENTS

    deploy = {
        "metadata": {"name": "op", "creationTimestamp": "2026-12-02T11:00:00Z"},
        "spec": {"replicas": 2},
    }
    t = table(info(DEPLOYMENTS), [deploy], "1", now=NOW)
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    assert t["rows"][0]["cells"] == ["op", "0/2", 0, 0, "60m"]
    ds = {"metadata": {"name": "cfg"}, "spec": {"template": {"spec": {"nodeSelector": {"b": "2", "a": "1"}}}}}
    assert table(info(DAEMONSETS), [ds], "1", now=NOW)["rows"][0]["cells"][-2] == "a=1,b=2"


def test_a_time_in_any_rfc3339_form_gets_its_age() -> None:
    """The AGE column reads times with the product's one parser: a lowercase z is RFC 3339 too."""
    expected = datetime(2026, 12, 3, 10, 0, 0, tzinfo=UTC)
    assert parse_time("2026-12-03T10:00:00z") == expected
    assert parse_time("2026-12-03T11:00:00+01:00") == expected
    assert parse_time("not a time") is None
    assert parse_time(None) is None
