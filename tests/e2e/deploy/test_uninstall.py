"""docs/deployment.md's uninstall removes wlmvk's virtual nodes and no other provider's.

The nodes are built by the kubelet's own rule (wlmvk.kubelet.node.nodes.node_object); the other
provider's node carries only ``type=virtual-kubelet``, as interLink's and Liqo's do. The selector
is read from the page, so the page and the test cannot drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from wlmvk.core.jobs import PartitionResources
from wlmvk.kube.bodies import NODES
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.node.nodes import Health, NodeContext, node_object

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [pytest.mark.kubectl, pytest.mark.kube_any(subject="label selectors of kubectl delete node")]


def _documented_selector() -> str:
    page = (ROOT / "docs" / "deployment.md").read_text()
    uninstall = page[page.index("## Uninstalling") :]
    (selector,) = re.findall(r"`kubectl delete node -l (\S+)`", uninstall)
    return selector


def _wlmvk_node(cluster: str, partition: str) -> dict[str, Any]:
    res = PartitionResources(name=partition, nodes=2, cpu_per_node=4, mem_per_node=8192, wall_time=3600)
    ctx = NodeContext(cluster=cluster, agent_host="agent-1")
    node = node_object(res, ctx, Health(reachable=True), heartbeat="", ready_since="")
    del node["status"]
    return node


def _other_providers_node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"type": "virtual-kubelet", "kubernetes.io/role": "agent"}},
    }


async def test_the_documented_uninstall_leaves_other_providers_virtual_nodes(apiserver: Any) -> None:
    ours = [_wlmvk_node("uninst", "cpu"), _wlmvk_node("uninst", "gpu")]
    theirs = _other_providers_node("interlink-vk-uninst")
    async with await KubeClient.connect(str(apiserver.kubeconfig)) as admin:
        for node in [*ours, theirs]:
            await admin.create(NODES, node)
        # The real plane is shared: earlier tests' kubelets left wlmvk nodes of their own clusters,
        # which the uninstall removes too. Exactly the nodes that carry both labels go.
        wlmvk_nodes = sorted(
            item["metadata"]["name"]
            for item in (await admin.list(NODES))["items"]
            if (labels := item["metadata"].get("labels") or {}).get("type") == "virtual-kubelet"
            and "wlm.sylabs.io/cluster" in labels
        )
        assert {"slurm-uninst-cpu", "slurm-uninst-gpu"} <= set(wlmvk_nodes)
        assert "interlink-vk-uninst" not in wlmvk_nodes
        deleted = await apiserver.kubectl("delete", "node", "-l", _documented_selector())
        assert deleted.returncode == 0, deleted.stderr
        assert sorted(deleted.stdout.splitlines()) == [f'node "{name}" deleted' for name in wlmvk_nodes]
        left = {item["metadata"]["name"] for item in (await admin.list(NODES))["items"]}
        assert "interlink-vk-uninst" in left
        assert not {"slurm-uninst-cpu", "slurm-uninst-gpu"} & left
        await admin.delete(NODES, "interlink-vk-uninst")
