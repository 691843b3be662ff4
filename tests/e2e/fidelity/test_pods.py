"""The in-memory API server against the real kube-apiserver: pods, the same request, the same answer.

Each test is marked ``kube_any`` and asserts one exact observable answer, so that with
``--kube both`` it runs on both control planes and a difference fails one of them.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient

pytestmark = pytest.mark.kube_any(subject="pods: the same request, the same answer")


def pod(resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"qos-{uuid.uuid4().hex[:6]}"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "resources": resources}],
        },
    }


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "1"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Burstable"),
    ],
)
async def test_a_created_pod_carries_its_qos_class(
    apiserver: Any, kube: KubeClient, resources: dict[str, Any], qos: str
) -> None:
    created = await kube.create(PODS, pod(resources), namespace="default")
    assert created["status"]["qosClass"] == qos
    assert created["status"]["phase"] == "Pending"


async def test_the_qos_class_cannot_be_changed_through_status(apiserver: Any, kube: KubeClient) -> None:
    created = await kube.create(PODS, pod({"requests": {"cpu": "1"}}), namespace="default")
    name = created["metadata"]["name"]
    with pytest.raises(InvalidInput) as refused:
        await kube.patch_status(PODS, name, {"status": {"qosClass": "BestEffort"}}, namespace="default")
    assert 'status.qosClass: Invalid value: "BestEffort": field is immutable' in str(refused.value)
    kept = await kube.get(PODS, name, namespace="default")
    assert kept["status"]["qosClass"] == "Burstable"
