"""``wlmvk dev apiserver --host-node NAME``: the demo's agent host runs its pods for real."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.apiserver_controllers.conftest import needs_root
from tests.fixtures.apiserver import KUBECTL, dev_apiserver

pytestmark = [needs_root, pytest.mark.kubectl]

POD = """
apiVersion: v1
kind: Pod
metadata: {name: greet}
spec:
  restartPolicy: Never
  nodeSelector: {kubernetes.io/hostname: demo-host}
  securityContext: {runAsUser: 1000}
  containers:
  - {name: main, image: busybox, command: [sh, -c, 'echo hi; id -u']}
"""


async def kubectl(env: dict[str, str], *args: str, input: str | None = None) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        *args,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate(input.encode() if input else None)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_dev_apiserver_with_a_host_node() -> None:
    options = ("--host-node", "demo-host", "--host-node-label", "wlm.sylabs.io/agent=true")
    async with dev_apiserver(*options) as env:
        code, out = await kubectl(env, "get", "node", "demo-host", "-L", "wlm.sylabs.io/agent")
        assert code == 0, out
        assert out.splitlines()[1].split()[1] == "Ready"
        assert out.splitlines()[1].split()[-1] == "true"
        code, out = await kubectl(env, "apply", "-f", "-", input=POD)
        assert code == 0, out
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while True:
            code, out = await kubectl(env, "get", "pod", "greet", "-o", "jsonpath={.status.phase}")
            if out == "Succeeded":
                break
            assert loop.time() < deadline, out
            await asyncio.sleep(0.2)
        code, out = await kubectl(env, "logs", "greet")
        assert (code, out) == (0, "hi\n1000\n")
