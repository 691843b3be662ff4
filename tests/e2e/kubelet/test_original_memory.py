"""A partition without MaxMemPerNode behind an original red-box (``memPerNode -1``) still runs ``--mem`` jobs.

The original red-box reported only the partition's own MaxMemPerNode, -1 when Slurm says UNLIMITED
(the local ``debug`` partition); the kubelet must read that as "no limit known", not as 0 MB.
"""

from __future__ import annotations

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, unique
from wlmvk.core import names
from wlmvk.kube.bodies import NODES, PODS, Body
from wlmvk.operator import placement
from wlmvk.operator.directives import Requirements
from wlmvk.slurm.memory import UNLIMITED_MEMORY_MB

# The subject is red-box and Slurm (what the kubelet finds there), not the API server: one plane.
pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, pytest.mark.redbox_original]


@pytest.mark.redbox_original
async def test_a_mem_job_runs_on_a_partition_the_original_reports_as_minus_one(stack: Stack) -> None:
    async def debug_node() -> Body | None:
        for node in (await stack.kube.list(NODES))["items"]:
            if node["metadata"]["labels"].get(names.LABEL_PARTITION) == "debug":
                return node
        return None

    node = await eventually(debug_node)
    assert node["metadata"]["labels"][names.LABEL_MEM_PER_NODE] == str(UNLIMITED_MEMORY_MB)
    assert node["status"]["capacity"]["memory"] == f"{UNLIMITED_MEMORY_MB}Mi"

    # What the operator asks of a SlurmJob with ``#SBATCH --mem=4G``: the node's label and a request.
    name = unique("mem")
    affinity = placement.affinity(Requirements(mem_per_node=4096))
    pod = job_pod(name, "echo fits", resources={"requests": {"cpu": "1", "memory": "4Gi"}}, affinity=affinity)
    await stack.kube.create(PODS, pod, namespace="default")

    async def finished() -> Body | None:
        current = await stack.kube.get(PODS, name, namespace="default")
        return current if current.get("status", {}).get("phase") in ("Succeeded", "Failed") else None

    done = await eventually(finished, timeout=120)
    assert done["status"]["phase"] == "Succeeded", done["status"]
    assert done["spec"]["nodeName"] == node["metadata"]["name"]
