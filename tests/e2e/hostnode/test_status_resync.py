"""The host node writes a pod's status again after a write failed, as the kubelet's status manager.

A control plane just started answers 503 for a while ("storage is (re)initializing"): a write the
host node lost then must not leave the pod shown ``ContainerCreating`` while its container runs
(CI's run of a99420f: one operator replica of the real-plane demo, for 120 s). The node runs in
this process, its client failing the first write that reports the container running.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

from tests.e2e.apiserver_controllers.conftest import needs_root
from tests.fixtures.polling import eventually
from wlmvk.core.errors import Unavailable
from wlmvk.kube.bodies import NODES, PODS, Body, Resource
from wlmvk.kube.client import KubeClient, PatchKind
from wlmvk_dev.hostnode import kubelet as hostkubelet
from wlmvk_dev.hostnode.config import NodeConfig

pytestmark = [needs_root]


FAILED: list[Body | list[Body]] = []
"""The status writes the client below refused."""


class RunningWriteFailsOnce(KubeClient):
    """A client whose first status write showing a running container is answered 503."""

    async def patch_status(
        self,
        resource: Resource,
        name: str,
        patch: Body | list[Body],
        *,
        namespace: str | None = None,
        kind: PatchKind = PatchKind.MERGE,
    ) -> Body:
        statuses = patch.get("status", {}).get("containerStatuses", []) if isinstance(patch, dict) else []
        if resource is PODS and not FAILED and any("running" in s.get("state", {}) for s in statuses):
            FAILED.append(patch)
            raise Unavailable("storage is (re)initializing")
        return await super().patch_status(resource, name, patch, namespace=namespace, kind=kind)


async def test_a_lost_status_write_is_made_again_while_the_pod_runs(apiserver: Any, kube: KubeClient) -> None:
    client = await RunningWriteFailsOnce.connect(str(apiserver.kubeconfig))
    node = f"resync-{uuid.uuid4().hex[:6]}"
    config = NodeConfig(node_name=node, kubelet_port=0, renew_interval=0.5)
    serving = asyncio.ensure_future(hostkubelet.run(client, config))
    name = f"resync-{uuid.uuid4().hex[:6]}"
    container = {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 60"]}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": node, "restartPolicy": "Never", "containers": [container]},
    }
    try:
        await kube.create(PODS, body, namespace="default")

        async def running() -> bool:
            pod = await kube.get(PODS, name, namespace="default")
            return bool(pod.get("status", {}).get("phase") == "Running")

        await eventually(running, timeout=20, what=f"pod {name} Running")
        assert len(FAILED) == 1
    finally:
        with contextlib.suppress(Exception):
            await kube.delete(PODS, name, namespace="default", grace_period_seconds=0)
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        await client.close()
        with contextlib.suppress(Exception):
            await kube.delete(NODES, node)
