"""The host kubelet through kubectl: pods on an ordinary node run here as processes."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.apiserver_controllers.conftest import (
    Scratch,
    assert_logs_follow,
    gated_script,
    needs_root,
    pid_written,
)
from tests.fixtures.apiserver import RunningApiServer
from wlmvk_dev.apiserver.controllers import default_controllers
from wlmvk_dev.apiserver.kubelets import hostkubelet

HOST = "agent-host"

pytestmark = [
    needs_root,
    pytest.mark.kubectl,
    pytest.mark.apiserver(
        controllers=[*default_controllers(), hostkubelet.controller(node_name=HOST, restart_backoff=0.2)]
    ),
]


def pod(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox:1.36", "command": command}
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": HOST}, "containers": [container], **spec},
    }


async def apply(apiserver: RunningApiServer, *objects: dict[str, Any]) -> None:
    result = await apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    assert result.returncode == 0, result.stderr


async def phase_becomes(
    apiserver: RunningApiServer, name: str, phase: str, timeout: float = 30
) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = await apiserver.kubectl("get", "pod", name, "-o", "json")
        if result.returncode == 0:
            body: dict[str, Any] = json.loads(result.stdout)
            if body.get("status", {}).get("phase") == phase:
                return body
        assert loop.time() < deadline, f"pod {name} never {phase}: {result.stdout[-2000:]}"
        await asyncio.sleep(0.2)


def host_dirs(scratch: Scratch) -> tuple[Path, Path, str]:
    """An input directory with a file, an output directory owned by uid 1000, a socket directory."""
    data = scratch(0o755)
    (data / "input.txt").write_text("staged content\n")
    results = scratch(0o755)
    os.chown(results, 1000, 1000)
    return data, results, str(scratch(0o755))


def exists(path: str) -> bool:
    return os.path.exists(path)


async def test_the_host_node_is_registered_and_ready(apiserver: RunningApiServer) -> None:
    listed = await apiserver.kubectl("get", "node", HOST, "-o", "json")
    node = json.loads(listed.stdout)
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == HOST
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
    assert int(node["status"]["allocatable"]["pods"]) > 0
    lease = await apiserver.kubectl("get", "lease", "-n", "kube-node-lease", HOST, "-o", "json")
    assert json.loads(lease.stdout)["spec"]["holderIdentity"] == HOST


async def test_pod_runs_as_its_user_and_kubectl_logs_prints_its_output(apiserver: RunningApiServer) -> None:
    await apply(
        apiserver,
        pod(
            "hello",
            ["sh", "-c", "echo hi; id -u; id -g; echo $WHO on $NODE"],
            restartPolicy="Never",
            securityContext={"runAsUser": 1000, "runAsGroup": 1000},
            container={
                "env": [
                    {"name": "WHO", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                ]
            },
        ),
    )
    body = await phase_becomes(apiserver, "hello", "Succeeded")
    terminated = body["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    logs = await apiserver.kubectl("logs", "hello")
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout == f"hi\n1000\n1000\nhello on {HOST}\n"
    listed = await apiserver.kubectl("get", "pod", "hello")
    assert listed.stdout.splitlines()[1].split()[2] == "Completed", listed.stdout
    tail = await apiserver.kubectl("logs", "hello", "--tail=1", "--timestamps")
    stamp, text = tail.stdout.rstrip("\n").split(" ", 1)
    assert text == f"hello on {HOST}"
    assert stamp.endswith("Z")


async def test_host_path_volumes_and_socket_are_visible_at_their_mount_paths(
    apiserver: RunningApiServer, scratch: Scratch
) -> None:
    data, results, sock_dir = host_dirs(scratch)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(os.path.join(sock_dir, "red-box.sock"))
    try:
        script = (
            "cat /mnt/in/input.txt; echo written > /mnt/out/result.txt; "
            "test -S /var/run/syslurm-e2e/red-box.sock && echo socket-ok; "
            "touch /mnt/in/nope 2>/dev/null || echo read-only; pwd"
        )
        await apply(
            apiserver,
            pod(
                "stage",
                ["sh", "-c", script],
                restartPolicy="Never",
                securityContext={"runAsUser": 1000, "runAsGroup": 1000},
                volumes=[
                    {"name": "in", "hostPath": {"path": str(data), "type": "Directory"}},
                    {"name": "out", "hostPath": {"path": str(results), "type": "DirectoryOrCreate"}},
                    {"name": "sock", "hostPath": {"path": f"{sock_dir}/red-box.sock", "type": "Socket"}},
                    {"name": "scratch", "emptyDir": {}},
                ],
                container={
                    "workingDir": "/scratch",
                    "volumeMounts": [
                        {"name": "in", "mountPath": "/mnt/in", "readOnly": True},
                        {"name": "out", "mountPath": "/mnt/out"},
                        {"name": "sock", "mountPath": "/var/run/syslurm-e2e/red-box.sock"},
                        {"name": "scratch", "mountPath": "/scratch"},
                    ],
                },
            ),
        )
        await phase_becomes(apiserver, "stage", "Succeeded")
        logs = await apiserver.kubectl("logs", "stage")
        assert logs.stdout == "staged content\nsocket-ok\nread-only\n/scratch\n", logs.stdout + logs.stderr
        assert (results / "result.txt").read_text() == "written\n"
        assert (results / "result.txt").stat().st_uid == 1000
        assert not exists("/mnt/in"), "mount points the kubelet created are removed"
        assert not exists("/var/run/syslurm-e2e")
    finally:
        listener.close()


async def test_missing_host_path_directory_fails_the_mount_visibly(apiserver: RunningApiServer) -> None:
    missing = f"/tmp/hk-missing-{os.getpid()}"
    await apply(
        apiserver,
        pod(
            "nomount",
            ["true"],
            volumes=[{"name": "d", "hostPath": {"path": missing, "type": "Directory"}}],
            container={"volumeMounts": [{"name": "d", "mountPath": "/d"}]},
        ),
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while True:
        described = await apiserver.kubectl("describe", "pod", "nomount")
        if "FailedMount" in described.stdout:
            break
        assert loop.time() < deadline, described.stdout
        await asyncio.sleep(0.2)
    assert f"hostPath type check failed: {missing} is not a directory" in described.stdout
    assert "ContainerCreating" in (await apiserver.kubectl("get", "pod", "nomount")).stdout
    logs = await apiserver.kubectl("logs", "nomount")
    assert logs.returncode != 0
    assert 'container "main" in pod "nomount" is waiting to start: ContainerCreating' in logs.stderr


async def test_logs_follow_a_running_container_until_it_exits(
    apiserver: RunningApiServer, scratch: Scratch
) -> None:
    gate = scratch(0o777)
    await apply(apiserver, pod("chatty", ["sh", "-c", gated_script(gate)], restartPolicy="Never"))
    await phase_becomes(apiserver, "chatty", "Running")
    await assert_logs_follow(apiserver, "chatty", gate)


async def test_exit_codes_restarts_and_no_command(apiserver: RunningApiServer) -> None:
    await apply(
        apiserver,
        pod("fails", ["sh", "-c", "echo boom >&2; exit 3"], restartPolicy="Never"),
        pod("retries", ["sh", "-c", "echo try; exit 1"], restartPolicy="OnFailure"),
        pod("noentry", [], restartPolicy="Never"),
    )
    failed = await phase_becomes(apiserver, "fails", "Failed")
    terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert (await apiserver.kubectl("logs", "fails")).stdout == "boom\n"

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while True:
        body = json.loads((await apiserver.kubectl("get", "pod", "retries", "-o", "json")).stdout)
        statuses = body["status"].get("containerStatuses") or [{}]
        if statuses[0].get("restartCount", 0) >= 2:
            break
        assert loop.time() < deadline, body["status"]
        await asyncio.sleep(0.2)
    assert body["status"]["phase"] == "Running"
    assert statuses[0]["lastState"]["terminated"]["exitCode"] == 1
    previous = await apiserver.kubectl("logs", "retries", "--previous")
    assert previous.stdout == "try\n", previous.stderr

    noentry = await phase_becomes(apiserver, "noentry", "Failed")
    terminated = noentry["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["reason"] == "StartError"
    assert "set the container's command" in terminated["message"]


async def test_deleting_a_running_pod_stops_its_process(
    apiserver: RunningApiServer, scratch: Scratch
) -> None:
    marker = scratch(0o777)
    # "$$$$": Kubernetes expands "$$" in commands to "$".
    script = (
        f"trap 'echo terminated > {marker}/got; exit 0' TERM; echo $$$$ > {marker}/pid; "
        "while true; do sleep 0.1; done"
    )
    await apply(apiserver, pod("sleeper", ["sh", "-c", script], terminationGracePeriodSeconds=5))
    await phase_becomes(apiserver, "sleeper", "Running")
    pid = await pid_written(marker / "pid")
    deleted = await apiserver.kubectl("delete", "pod", "sleeper")
    assert deleted.returncode == 0, deleted.stderr
    assert (marker / "got").read_text() == "terminated\n", "SIGTERM first, within the grace period"
    assert not exists(f"/proc/{pid}")
    gone = await apiserver.kubectl("get", "pod", "sleeper")
    assert "NotFound" in gone.stderr
