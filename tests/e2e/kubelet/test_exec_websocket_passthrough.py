"""kube-apiserver passes kubectl's WebSocket through to a kubelet whose Node declares it.

kube-apiserver v1.36 proxies ``pods/exec`` to a kubelet as the WebSocket kubectl opened when the
Node's ``status.declaredFeatures`` lists ``ExtendWebSocketsToKubelet`` (else it translates it into
SPDY/3.1, which tests/e2e/kubelet/test_kubectl_exec.py drives). Declared here by hand on the pod's
node, the command's output and exit code come back and the kubelet's log shows the session was a
WebSocket (``v5.channel.k8s.io``). The in-memory API server passes the WebSocket through anyway.
"""

from __future__ import annotations

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import job_pod, unique
from tests.e2e.kubelet.test_kubelet import wait_phase
from wlmvk.kube.bodies import PODS

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, pytest.mark.kube_any]

DECLARED = '{"status":{"declaredFeatures":["ExtendWebSocketsToKubelet"]}}'


async def test_a_node_that_declares_websockets_gets_kubectls_websocket(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    name = unique("ws")
    await stack.kube.create(PODS, job_pod(name, "sleep 600"), namespace="default")
    pod = await wait_phase(stack, name, "Running")
    node = pod["spec"]["nodeName"]
    patched = await stack.kubectl(
        "patch", "node", node, "--subresource=status", "--type=merge", "-p", DECLARED
    )
    assert patched.returncode == 0, patched.stderr
    capsys.readouterr()
    done = await stack.kubectl("exec", name, "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert (done.returncode, done.stdout, done.stderr) == (
        3,
        "out\n",
        "err\ncommand terminated with exit code 3\n",
    )
    sessions = [
        line for line in capsys.readouterr().out.splitlines() if "exec session over WebSocket" in line
    ]
    assert len(sessions) == 1, sessions
    assert f"pod=default/{name}" in sessions[0]
    assert "protocol=v5.channel.k8s.io" in sessions[0]
