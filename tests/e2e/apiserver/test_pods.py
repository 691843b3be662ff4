"""Pods and nodes as kubectl shows them: tables, describe with events, logs, graceful deletion."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web

from tests.fixtures.apiserver import RunningApiServer, deleted_line, requires_kubectl
from wlmvk_dev.apiserver.objects.resources import EVENTS, NODES, PODS
from wlmvk_dev.apiserver.storage.store import Store

pytestmark = [pytest.mark.kubectl, pytest.mark.apiserver(controllers=False)]


def node(
    name: str, *, ready: str = "True", unschedulable: bool = False, role: str | None = None
) -> dict[str, Any]:
    labels = {"kubernetes.io/role": role} if role else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "conditions": [{"type": "Ready", "status": ready}],
            "nodeInfo": {"kubeletVersion": "v1.32.0-wlmvk"},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
        },
    }


def running_pod(name: str, node_name: str | None = "n1") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name}, "spec": spec}


def set_status(store: Store, name: str, status: dict[str, Any]) -> None:
    pod = store.get(PODS, name, "default")
    pod["status"] = status
    store.update(PODS, pod, subresource="status")


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


async def test_get_nodes_prints_status_roles_version(apiserver: RunningApiServer) -> None:
    apiserver.store.create(NODES, node("slurm-vm-debug", role="agent"))
    apiserver.store.create(NODES, node("n2", ready="False"))
    apiserver.store.create(NODES, node("n3", ready="Unknown", unschedulable=True))
    apiserver.store.create(NODES, {"metadata": {"name": "n4"}})
    result = await apiserver.kubectl("get", "nodes")
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert table[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    by_name = {r[0]: r for r in table[1:]}
    assert by_name["slurm-vm-debug"][1:3] == ["Ready", "agent"]
    assert by_name["slurm-vm-debug"][4] == "v1.32.0-wlmvk"
    assert by_name["n2"][1] == "NotReady"
    assert by_name["n3"][1] == "NotReady,SchedulingDisabled"
    assert by_name["n4"][1:3] == ["Unknown", "<none>"]
    wide = await apiserver.kubectl("get", "node", "slurm-vm-debug", "-o", "wide")
    assert "10.0.0.1" in wide.stdout


async def test_get_pods_status_column_follows_container_states(apiserver: RunningApiServer) -> None:
    store = apiserver.store
    for name in ("done", "job", "waiting", "running", "failed"):
        store.create(PODS, running_pod(name))
    store.create(PODS, running_pod("pending", node_name=None))
    terminated = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    set_status(
        store,
        "done",
        {
            "phase": "Succeeded",
            "containerStatuses": [{"name": "main", "ready": False, "restartCount": 0, "state": terminated}],
        },
    )
    set_status(
        store,
        "job",
        {
            "phase": "Succeeded",
            "containerStatuses": [
                {
                    "name": "main",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": 0, "reason": "Job finished"}},
                }
            ],
        },
    )
    set_status(
        store,
        "waiting",
        {
            "phase": "Pending",
            "containerStatuses": [
                {
                    "name": "main",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "ContainerCreating"}},
                }
            ],
        },
    )
    set_status(
        store,
        "running",
        {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "main", "ready": True, "restartCount": 2, "state": {"running": {}}}
            ],
        },
    )
    set_status(
        store,
        "failed",
        {
            "phase": "Failed",
            "containerStatuses": [
                {"name": "main", "ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 3}}}
            ],
        },
    )
    result = await apiserver.kubectl("get", "pods")
    table = rows(result.stdout)
    assert table[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    by_name = {r[0]: r[1:4] for r in table[1:]}
    assert by_name == {
        "done": ["0/1", "Completed", "0"],
        "job": ["0/1", "Job", "finished"],
        "waiting": ["0/1", "ContainerCreating", "0"],
        "running": ["1/1", "Running", "2"],
        "failed": ["0/1", "ExitCode:3", "0"],
        "pending": ["0/1", "Pending", "0"],
    }
    single = await apiserver.kubectl("get", "pod", "job", "--no-headers")
    assert "Job finished" in single.stdout


@requires_kubectl(32)
async def test_describe_pod_shows_its_events(apiserver: RunningApiServer) -> None:
    pod = apiserver.store.create(PODS, running_pod("p1"))
    other = apiserver.store.create(PODS, running_pod("p2"))
    for target, reason in ((pod, "Submitted"), (other, "Elsewhere")):
        meta = target["metadata"]
        apiserver.store.create(
            EVENTS,
            {
                "metadata": {"generateName": meta["name"] + "."},
                "involvedObject": {
                    "kind": "Pod",
                    "namespace": "default",
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "reason": reason,
                "message": f"slurm job 42 for {meta['name']}",
                "type": "Normal",
                "source": {"component": "wlmvk"},
                "count": 1,
            },
        )
    result = await apiserver.kubectl("describe", "pod", "p1")
    assert result.returncode == 0, result.stderr
    assert "Node:             n1" in result.stdout
    assert "Submitted" in result.stdout
    assert "slurm job 42 for p1" in result.stdout
    assert "Elsewhere" not in result.stdout


async def test_graceful_pod_deletion_waits_for_the_kubelet(apiserver: RunningApiServer) -> None:
    store = apiserver.store
    store.create(PODS, running_pod("p1"))
    set_status(store, "p1", {"phase": "Running"})
    marked = await apiserver.kubectl("delete", "pod", "p1", "--wait=false")
    assert marked.returncode == 0, marked.stderr
    pod = store.get(PODS, "p1", "default")
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
    shown = await apiserver.kubectl("get", "pod", "p1", "--no-headers")
    assert shown.stdout.split()[2] == "Terminating"
    waiting = asyncio.create_task(apiserver.kubectl("delete", "pod", "p1"))
    for _ in range(100):
        if store.watcher_count(PODS):
            break
        await asyncio.sleep(0.05)
    assert not waiting.done()
    store.delete(PODS, "p1", "default", grace_period_seconds=0)
    done = await waiting
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == deleted_line('pod "p1"')


async def test_unbound_pod_is_deleted_at_once(apiserver: RunningApiServer) -> None:
    apiserver.store.create(PODS, running_pod("p1", node_name=None))
    result = await apiserver.kubectl("delete", "pod", "p1")
    assert result.returncode == 0, result.stderr
    assert apiserver.store.list(PODS).items == []


async def _fake_logs(request: web.Request, pod: dict[str, Any], store: Store) -> web.StreamResponse:
    container = request.query.get("container", "")
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    await response.prepare(request)
    await response.write(f"hello from {pod['metadata']['name']}/{container}\n".encode())
    if request.query.get("follow", "").lower() == "true":
        await response.write(b"more\n")
    await response.write_eof()
    return response


@pytest.mark.apiserver(controllers=False, log_handler=_fake_logs)
@requires_kubectl(32)
async def test_logs_go_through_the_log_handler(apiserver: RunningApiServer) -> None:
    apiserver.store.create(PODS, running_pod("p1"))
    result = await apiserver.kubectl("logs", "p1")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello from p1/main\n"
    followed = await apiserver.kubectl("logs", "-f", "p1")
    assert followed.stdout == "hello from p1/main\nmore\n"


@requires_kubectl(32)
async def test_deleting_a_namespace_waits_for_its_running_pods(apiserver: RunningApiServer) -> None:
    store = apiserver.store
    made = await apiserver.kubectl("create", "namespace", "team")
    assert made.returncode == 0, made.stderr
    store.create(PODS, running_pod("p1"), "team")
    marked = await apiserver.kubectl("delete", "namespace", "team", "--wait=false")
    assert marked.returncode == 0, marked.stderr
    shown = await apiserver.kubectl("get", "namespace", "team", "--no-headers")
    assert shown.stdout.split()[:2] == ["team", "Terminating"]
    pods = await apiserver.kubectl("get", "pods", "-n", "team", "--no-headers")
    assert pods.stdout.split()[2] == "Terminating"
    store.delete(PODS, "p1", "team", grace_period_seconds=0)
    gone = await apiserver.kubectl("get", "namespace", "team")
    assert 'namespaces "team" not found' in gone.stderr
