"""``wlmvk dev node`` as a process, a client of the test's API server like a kubelet.

Marked ``kube_any``: with ``--kube both`` the same tests run against the real
kube-apiserver, where the node also mounts the ``kube-api-access`` volume the
ServiceAccount admission adds (a TokenRequest bound to the pod).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
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

pytestmark = [
    needs_root,
    pytest.mark.kubectl,
    pytest.mark.kube_any(
        subject="ServiceAccount admission (the kube-api-access volume) and the node's identity"
    ),
]


@dataclass(frozen=True)
class Node:
    name: str
    port: int


def image_under_tmp() -> Path:
    """An "image" whose files live under /tmp, which a pod's emptyDir may cover."""
    image = Path(tempfile.mkdtemp(prefix="dev-node-image-", dir="/tmp"))
    image.chmod(0o755)
    (image / "entrypoint").write_text('#!/bin/sh\necho from-the-image-files "$@"\n')
    (image / "entrypoint").chmod(0o755)
    (image / "note").write_text("still here\n")
    # waits GATE: until GATE/go exists, then reads a file of the image.
    (image / "waits").write_text(
        f'#!/bin/sh\nwhile [ ! -e "$1/go" ]; do sleep 0.05; done\nexec cat {image}/note\n'
    )
    (image / "waits").chmod(0o755)
    return image


@pytest.fixture
async def node(apiserver: Any) -> AsyncIterator[Node]:
    """The node process, registered; stopped with SIGTERM, which it must answer with exit code 0."""
    name = f"dev-node-{uuid.uuid4().hex[:6]}"
    argv = [
        "-c",
        "from wlmvk.cli import run; run()",
        "dev",
        "node",
        "--kubeconfig",
        str(apiserver.kubeconfig),
    ]
    argv += ["--name", name, "--port", "0", "--renew-interval", "0.5", "--restart-backoff", "0.2"]
    argv += ["--image", "entry:1=/bin/echo from-the-entrypoint", "--log-level", "warning"]
    image = image_under_tmp()
    argv += ["--image", f"kept:1={image}/entrypoint", "--image-path", str(image)]
    argv += ["--image", f"waits:1={image}/waits"]
    proc = await asyncio.create_subprocess_exec(sys.executable, *argv, stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        banner = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        prefix = f"wlmvk node: {name} kubelet API https://127.0.0.1:"
        assert banner.startswith(prefix), banner
        yield Node(name, int(banner.removeprefix(prefix)))
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        await apiserver.kubectl("delete", "node", name, "--wait=false")


def pod(node: Node, name: str, script: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", script]}
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": node.name, "restartPolicy": "Never", "containers": [container], **spec},
    }


async def apply(apiserver: Any, *objects: dict[str, Any]) -> None:
    result = await apiserver.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
    assert result.returncode == 0, result.stderr


async def get(apiserver: Any, *what: str) -> dict[str, Any]:
    result = await apiserver.kubectl("get", *what, "-o", "json")
    assert result.returncode == 0, result.stderr
    body: dict[str, Any] = json.loads(result.stdout)
    return body


async def phase_becomes(apiserver: Any, name: str, phase: str, timeout: float = 30) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        body = await get(apiserver, "pod", name)
        if body.get("status", {}).get("phase") == phase:
            return body
        assert loop.time() < deadline, f"pod {name} never {phase}: {body.get('status')}"
        await asyncio.sleep(0.2)


async def test_the_node_is_ready_with_its_kubelet_port_and_renews_its_lease(
    apiserver: Any, node: Node
) -> None:
    body = await get(apiserver, "node", node.name)
    assert {c["type"]: c["status"] for c in body["status"]["conditions"]}["Ready"] == "True"
    assert body["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == node.port
    assert {"type": "InternalIP", "address": "127.0.0.1"} in body["status"]["addresses"]
    assert body["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.")
    first = (await get(apiserver, "lease", "-n", "kube-node-lease", node.name))["spec"]
    assert first["holderIdentity"] == node.name
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while (await get(apiserver, "lease", "-n", "kube-node-lease", node.name))["spec"]["renewTime"] == first[
        "renewTime"
    ]:
        assert loop.time() < deadline, "the Lease is renewed"
        await asyncio.sleep(0.2)


async def test_a_pod_with_env_field_refs_and_a_config_map_volume_succeeds_and_logs(
    apiserver: Any, node: Node
) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "greetings"},
        "data": {"hi": "hello"},
    }
    env = [
        {"name": "WHO", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "WHERE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "HI", "valueFrom": {"configMapKeyRef": {"name": "greetings", "key": "hi"}}},
    ]
    script = "echo $WHO on $WHERE; cat /etc-e2e/greetings/hi; echo; echo $HI again"
    await apply(
        apiserver,
        config,
        pod(
            node,
            "greeter",
            script,
            volumes=[{"name": "cfg", "configMap": {"name": "greetings"}}],
            container={"env": env, "volumeMounts": [{"name": "cfg", "mountPath": "/etc-e2e/greetings"}]},
        ),
    )
    body = await phase_becomes(apiserver, "greeter", "Succeeded")
    status = body["status"]
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert (status["hostIP"], status["podIP"]) == ("127.0.0.1", "127.0.0.1")
    logs = await apiserver.kubectl("logs", "greeter")
    assert logs.stdout == f"greeter on {node.name}\nhello\nhello again\n", logs.stderr
    tail = await apiserver.kubectl("logs", "greeter", "--tail=1")
    assert tail.stdout == "hello again\n"
    limited = await apiserver.kubectl("logs", "greeter", "--limit-bytes=5")
    assert limited.stdout == "greet"


async def test_a_container_without_command_runs_the_program_given_for_its_image(
    apiserver: Any, node: Node
) -> None:
    body = pod(node, "entry", "unused", container={"image": "entry:1", "args": ["$(WHO)"]})
    del body["spec"]["containers"][0]["command"]
    body["spec"]["containers"][0]["env"] = [{"name": "WHO", "value": "me"}]
    await apply(apiserver, body)
    await phase_becomes(apiserver, "entry", "Succeeded")
    assert (await apiserver.kubectl("logs", "entry")).stdout == "from-the-entrypoint me\n"


async def test_an_images_files_stay_visible_under_a_volume_covering_them(apiserver: Any, node: Node) -> None:
    body = pod(node, "kept", "unused", container={"image": "kept:1", "args": ["ok"]})
    del body["spec"]["containers"][0]["command"]
    body["spec"]["volumes"] = [{"name": "tmp", "emptyDir": {}}]
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "tmp", "mountPath": "/tmp"}]
    await apply(apiserver, body)
    await phase_becomes(apiserver, "kept", "Succeeded")
    assert (await apiserver.kubectl("logs", "kept")).stdout == "from-the-image-files ok\n"


async def test_an_images_files_stay_visible_while_other_containers_start_and_end(
    apiserver: Any, node: Node, scratch: Scratch
) -> None:
    # The image's files are bound over the pod's emptyDir on a mount point made in it; another
    # container's end must not remove that mount point (which would detach the bind) while
    # this one runs: the demo's configurator lost its Python packages mid-import that way.
    gate = scratch(0o777)
    body = pod(node, "waits", "unused", container={"image": "waits:1", "args": ["/var/run/gate"]})
    del body["spec"]["containers"][0]["command"]
    body["spec"]["volumes"] = [
        {"name": "tmp", "emptyDir": {}},
        {"name": "gate", "hostPath": {"path": str(gate), "type": "Directory"}},
    ]
    body["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "gate", "mountPath": "/var/run/gate"},
    ]
    await apply(apiserver, body)
    await phase_becomes(apiserver, "waits", "Running")
    await apply(apiserver, pod(node, "brief", "true"))
    await phase_becomes(apiserver, "brief", "Succeeded")
    (gate / "go").write_text("")
    await phase_becomes(apiserver, "waits", "Succeeded")
    assert (await apiserver.kubectl("logs", "waits")).stdout == "still here\n"


async def test_containers_find_the_api_server_as_in_cluster_clients_do(apiserver: Any, node: Node) -> None:
    await apply(apiserver, pod(node, "incluster", "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"))
    await phase_becomes(apiserver, "incluster", "Succeeded")
    address = apiserver.url.removeprefix("https://").removeprefix("http://")
    assert (await apiserver.kubectl("logs", "incluster")).stdout == f"{address}\n"


async def test_a_volume_over_tmp_does_not_hide_a_host_path_under_tmp(
    apiserver: Any, node: Node, scratch: Scratch
) -> None:
    data = scratch(0o755)
    (data / "note").write_text("from the host\n")
    volumes = [
        {"name": "tmp", "emptyDir": {}},
        {"name": "data", "hostPath": {"path": str(data), "type": "Directory"}},
    ]
    mounts = [{"name": "tmp", "mountPath": "/tmp"}, {"name": "data", "mountPath": "/var/run/e2e-data"}]
    script = "cat /var/run/e2e-data/note; ls -A /tmp | wc -l"
    await apply(apiserver, pod(node, "shadow", script, volumes=volumes, container={"volumeMounts": mounts}))
    await phase_becomes(apiserver, "shadow", "Succeeded")
    assert (await apiserver.kubectl("logs", "shadow")).stdout == "from the host\n0\n"


async def test_a_failing_command_fails_the_pod_with_its_exit_code(apiserver: Any, node: Node) -> None:
    await apply(apiserver, pod(node, "fails", "echo boom >&2; exit 7"))
    body = await phase_becomes(apiserver, "fails", "Failed")
    terminated = body["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (7, "Error")
    assert (await apiserver.kubectl("logs", "fails")).stdout == "boom\n"


async def test_logs_follow_until_the_container_exits(apiserver: Any, node: Node, scratch: Scratch) -> None:
    gate = scratch(0o777)
    await apply(apiserver, pod(node, "chatty", gated_script(gate)))
    await phase_becomes(apiserver, "chatty", "Running")
    await assert_logs_follow(apiserver, "chatty", gate)


async def test_deleting_a_running_pod_kills_its_process_and_the_pod_goes(
    apiserver: Any, node: Node, scratch: Scratch
) -> None:
    marker = scratch(0o777)
    # "$$$$": Kubernetes expands "$$" in commands to "$".
    script = f"echo $$$$ > {marker}/pid; exec sleep 600"
    await apply(apiserver, pod(node, "sleeper", script, terminationGracePeriodSeconds=2))
    await phase_becomes(apiserver, "sleeper", "Running")
    pid = await pid_written(marker / "pid")
    deleted = await apiserver.kubectl("delete", "pod", "sleeper", "--wait=true")
    assert deleted.returncode == 0, deleted.stderr
    assert not alive(pid), "the process is killed before the pod goes"
    gone = await apiserver.kubectl("get", "pod", "sleeper")
    assert "NotFound" in gone.stderr


def alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")
