"""``kubectl top`` of a running Slurm job, on the in-memory API server's metrics stand-in.

A pod whose job spins in its script (no srun) shows CPU in ``kubectl top pod``
and on its node in ``kubectl top node``, from Slurm's own accounting (sstat
through red-box's JobUsage, the kubelet's /stats/summary). A finished job uses
nothing and has no metrics. The real control plane has no metrics-server
here, so this runs on the in-memory plane only (README, kubectl top).
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, unique
from tests.e2e.kubelet.test_kubelet import wait_phase
from wlmvk.kube.bodies import PODS

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl]

SPIN = "while :; do :; done"


def millicores(text: str) -> int:
    match = re.fullmatch(r"(\d+)(m?)", text)
    assert match, text
    return int(match.group(1)) * (1 if match.group(2) else 1000)


async def test_kubectl_top_shows_a_spinning_jobs_cpu(stack: Stack) -> None:
    name, done = unique("spin"), unique("done")
    await stack.kube.create(PODS, job_pod(name, SPIN), namespace="default")
    await stack.kube.create(PODS, job_pod(done, "echo done"), namespace="default")
    try:
        await wait_phase(stack, name, "Running")
        await wait_phase(stack, done, "Succeeded")
        readings: list[int] = []

        async def spinning() -> bool:
            top = await stack.kubectl("top", "pod", name, "--no-headers")
            assert top.returncode == 0, top.stderr
            pod, cpu, memory = top.stdout.split()
            assert pod == name
            assert re.fullmatch(r"\d+Mi", memory), memory
            readings.append(millicores(cpu))
            return readings[-1] >= 100

        spinning.__name__ = f"kubectl top pod {name} >= 100m"
        await eventually(spinning, timeout=120, every=2)

        async def node_busy() -> bool:
            top = await stack.kubectl("top", "node", "--no-headers")
            assert top.returncode == 0, top.stderr
            rows = {line.split()[0]: line.split() for line in top.stdout.splitlines()}
            return millicores(rows["slurm-test-debug"][1]) >= 100

        node_busy.__name__ = "kubectl top node: slurm-test-debug >= 100m"
        await eventually(node_busy, timeout=60, every=2)

        listing = await stack.kubectl("top", "pod", "--no-headers")
        assert listing.returncode == 0, listing.stderr
        assert name in listing.stdout
        assert done not in listing.stdout, "a finished job uses nothing and has no metrics"
        missing = await stack.kubectl("top", "pod", done)
        assert missing.returncode != 0
        assert f'pods.metrics.k8s.io "{done}" not found' in missing.stderr
    finally:
        for pod in (name, done):
            await stack.kubectl("delete", "pod", pod, "--wait=false")
