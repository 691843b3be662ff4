"""The whole system for one test: real Slurm, red-box, kubelet, API server, operator, kubectl.

``Stack`` bundles them; ``start_operator``/``stop_operator`` run the operator
in the test's event loop (the in-memory API server lives there too), so a
test can restart it mid-job.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.operator.support import apply_crds
from wlmvk.core import tasks
from wlmvk.operator.app import serve
from wlmvk.operator.settings import OperatorSettings, StagingSettings
from wlmvk_dev.apiserver.controllers import default_controllers
from wlmvk_dev.apiserver.kubelets import hostkubelet

ROOT = Path(__file__).resolve().parents[3]
AGENT_HOST = "agent-host"  # the kubelet fixture's --agent-host
# The API server with its controllers and a host kubelet for the agent host, where staging pods run.
WITH_AGENT_HOST = pytest.mark.apiserver(
    controllers=[*default_controllers(), hostkubelet.controller(node_name=AGENT_HOST)]
)
STAGING_UID = 1000
# Staging pods run as UID 1000, which cannot execute the venv's interpreter (under
# /root): they run the system Python 3.11 on the same source and packages.
STAGE_COMMAND = (
    "/usr/bin/python3.11",
    "-c",
    "import sys; from wlmvk.cli import main; sys.exit(main(sys.argv[1:]))",
)


def staging_env() -> tuple[tuple[str, str], ...]:
    path = [str(ROOT / "src"), *(p for p in sys.path if p.endswith("site-packages"))]
    return (("PYTHONPATH", os.pathsep.join(path)), ("PATH", "/usr/bin:/bin"))


def operator_settings(identity: str = "op-1", lease_namespace: str = "default") -> OperatorSettings:
    return OperatorSettings(
        work_root="",  # relative: under red-box's --work-dir
        staging=StagingSettings(
            image="wlmvk:latest",
            command=STAGE_COMMAND,
            run_as_user=STAGING_UID,
            run_as_group=STAGING_UID,
            env=staging_env(),
        ),
        lease_namespace=lease_namespace,
        lease_duration=3,
        renew_interval=0.5,
        identity=identity,
        resync_interval=5.0,
    )


@dataclass
class Stack:
    apiserver: Any
    redbox: Any
    kubelet: Any
    cluster: str
    _operator: asyncio.Task[Any] | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    def node(self, partition: str) -> str:
        return f"slurm-{self.cluster}-{partition}"

    async def kubectl(self, *args: str, input: str | None = None) -> Any:
        return await self.apiserver.kubectl(*args, input=input)

    async def start_operator(self, identity: str = "op-1") -> None:
        assert self._operator is None
        self._stop = asyncio.Event()
        # On the real plane the operator runs as its ServiceAccount, whose Role allows
        # leases only in the wlmvk namespace (as deployed).
        real = self.apiserver.plane == "real"
        settings = operator_settings(identity, lease_namespace="wlmvk" if real else "default")
        kubeconfig = str(self.apiserver.kubeconfig_for("wlmvk-operator"))
        self._operator = tasks.guarded(serve(settings, kubeconfig=kubeconfig, stop=self._stop), name=identity)

    async def stop_operator(self) -> None:
        if self._operator is None:
            return
        self._stop.set()
        await asyncio.wait_for(self._operator, 20)
        self._operator = None


def share_socket(socket: str) -> None:
    """The staging pods (UID 1000) reach a root red-box as they would the job owner's."""
    Path(socket).parent.chmod(0o711)
    Path(socket).chmod(0o666)


async def build(apiserver: Any, redbox: Any, kubelet_factory: Any) -> Stack:
    share_socket(redbox.socket)
    await apply_crds(apiserver)
    kubeconfig = apiserver.kubeconfig_for("wlmvk-kubelet")
    kubelet = await kubelet_factory(kubeconfig=kubeconfig, red_box_socket=redbox.socket)
    stack = Stack(apiserver, redbox, kubelet, cluster="test")
    await stack.start_operator()
    return stack
