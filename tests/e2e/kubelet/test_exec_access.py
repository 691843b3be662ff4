"""Who may exec into a job (issue 16.2 with 14.2): the API server's RBAC, then the kubelet's.

kubectl exec needs ``create`` on ``pods/exec`` (kube-apiserver's RBAC); the
kubelet's ``/exec`` is authorized as the kubelet authorizes it, a
SubjectAccessReview on ``nodes/proxy`` of the pod's node with the verb of the
request (a WebSocket upgrade is a GET). The in-memory API server enforces no
RBAC and allows every review, so this runs on the real control plane only.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import job_pod, unique
from tests.e2e.kubelet.test_api_access import NODE_PROXY_READER, client_context, sign
from tests.e2e.kubelet.test_kubelet import wait_phase
from tests.fixtures.apiserver import RealApiServer, kubectl_minor, upgrade_refused_line
from wlmvk.kube.bodies import PODS

# The real plane only: the in-memory API server enforces no RBAC and allows every review.
pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, pytest.mark.kube_real]

POD_READER = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: test-pod-reader, namespace: default}
rules: [{apiGroups: [""], resources: ["pods"], verbs: ["get", "list"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: test-pod-reader, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: test-pod-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: nosy-user}]
"""


def real_plane(stack: Stack) -> RealApiServer:
    assert isinstance(stack.apiserver, RealApiServer), "kube_real: run on the real plane only"
    return stack.apiserver


async def running_pod(stack: Stack) -> str:
    name = unique("exec")
    await stack.kube.create(PODS, job_pod(name, "sleep 600"), namespace="default")
    await wait_phase(stack, name, "Running")
    return name


async def kubelet_exec(stack: Stack, name: str, token: str) -> tuple[int, list[bytes]]:
    """``echo hi`` through the kubelet's /exec over WebSocket v5: (HTTP status, messages)."""
    url = (
        f"https://127.0.0.1:{stack.kubelet.port}/exec/default/{name}/main"
        "?command=sh&command=-c&command=echo%20hi&output=1&error=1"
    )
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as session:
        try:
            socket = await session.ws_connect(
                url, ssl=client_context(), headers=headers, protocols=("v5.channel.k8s.io",)
            )
        except aiohttp.WSServerHandshakeError as refused:
            return refused.status, []
        async with socket:
            assert socket.protocol == "v5.channel.k8s.io"
            messages = [m.data async for m in socket if m.type == aiohttp.WSMsgType.BINARY]
        return 101, messages


async def test_exec_needs_create_on_pods_exec(stack: Stack, tmp_path: Path) -> None:
    real = real_plane(stack)
    name = await running_pod(stack)
    cert, key = sign(real.real.ca.parent, tmp_path, "nosy-user")
    kubeconfig = tmp_path / "nosy.kubeconfig"
    for args in (
        [
            "config",
            "set-cluster",
            "real",
            f"--server={real.real.url}",
            f"--certificate-authority={real.real.ca}",
        ],
        ["config", "set-credentials", "nosy", f"--client-certificate={cert}", f"--client-key={key}"],
        ["config", "set-context", "nosy", "--cluster=real", "--user=nosy"],
        ["config", "use-context", "nosy"],
    ):
        real.real.run_kubectl("--kubeconfig", str(kubeconfig), *args)
    applied = real.real.run_kubectl("apply", "-f", "-", input=POD_READER)
    assert applied.returncode == 0, applied.stderr
    try:
        done = await nosy_exec(real, kubeconfig, name)
    finally:
        real.real.run_kubectl("delete", "-f", "-", "--wait=false", input=POD_READER)
    assert done == (
        1,
        "",
        upgrade_refused_line(
            f'pods "{name}" is forbidden: User "nosy-user" cannot create'
            ' resource "pods/exec" in API group "" in the namespace "default"',
            "Forbidden",
            kubectl_minor(str(real.real.kubectl)),
        ),
    )


async def nosy_exec(real: RealApiServer, kubeconfig: Path, name: str) -> tuple[int | None, str, str]:
    done = await asyncio.create_subprocess_exec(
        str(real.real.kubectl),
        "--kubeconfig",
        str(kubeconfig),
        "exec",
        name,
        "-n",
        "default",
        "--",
        "true",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await done.communicate()
    return done.returncode, out.decode(), err.decode()


async def test_the_kubelet_authorizes_exec_as_nodes_proxy(stack: Stack) -> None:
    real = real_plane(stack).real
    name = await running_pod(stack)
    operator = real.must("create", "token", "wlmvk-operator", "-n", "wlmvk").strip()
    assert await kubelet_exec(stack, name, operator) == (403, [])
    applied = real.run_kubectl("apply", "-f", "-", input=NODE_PROXY_READER)
    assert applied.returncode == 0, applied.stderr
    try:
        reader = real.must("create", "token", "node-proxy-reader", "-n", "default").strip()
        status, messages = await kubelet_exec(stack, name, reader)
        assert status == 101
        assert messages[:-1] == [b"\x01hi\n"]
        assert messages[-1][:1] == b"\x03"
        assert json.loads(messages[-1][1:]) == {"metadata": {}, "status": "Success"}
    finally:
        real.run_kubectl("delete", "-f", "-", "--wait=false", input=NODE_PROXY_READER)
