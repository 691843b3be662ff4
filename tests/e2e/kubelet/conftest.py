"""The full stack for the kubelet's end-to-end tests: real Slurm, real red-box (as the job owner,
UID 1000, as deployed), an API server
(in-memory or the real control plane, see ``tests.fixtures.controlplane``), the kubelet
in-process with its ServiceAccount's identity, and the real kubectl."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fixtures.apiserver import RealApiServer, RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.app import Kubelet


@dataclass
class Stack:
    apiserver: RunningApiServer | RealApiServer
    redbox: RedBox
    kubelet: Kubelet
    kube: KubeClient

    async def kubectl(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return await self.apiserver.kubectl(*args, input=input)


def slurm_partitions() -> list[str]:
    out = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True, check=True).stdout
    return sorted({line.strip() for line in out.splitlines() if line.strip()})


@pytest.fixture
def redbox_args() -> tuple[str, ...]:
    """red-box's extra flags in ``stack``: a test module overrides this fixture to give some."""
    return ()


@pytest.fixture
def kubelet_settings() -> dict[str, Any]:
    """The kubelet's Settings overrides in ``stack``: a test parametrizes this name to give some."""
    return {}


@pytest.fixture
async def stack(
    slurm: str,
    apiserver: RunningApiServer | RealApiServer,
    redbox_factory: Callable[..., RedBox],
    kubelet_factory: StartKubelet,
    kube: KubeClient,
    request: pytest.FixtureRequest,
    redbox_args: tuple[str, ...],
    kubelet_settings: dict[str, Any],
) -> Stack:
    marker = request.node.get_closest_marker("redbox_original")
    box = redbox_factory(*redbox_args, original=marker is not None, user=JOB_OWNER)
    kubeconfig = apiserver.kubeconfig_for("wlmvk-kubelet")
    kubelet = await kubelet_factory(kubeconfig=kubeconfig, red_box_socket=box.socket, **kubelet_settings)
    return Stack(apiserver, box, kubelet, kube)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "redbox_original: run red-box with --original-api-only")
