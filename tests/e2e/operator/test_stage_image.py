"""The operator in a pod reads its own container's image from the API server for its staging pods,
as its ServiceAccount (where RBAC is enforced, the real plane)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.e2e.operator.test_manifests import MANIFESTS
from wlmvk.core.errors import FailedPrecondition
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient
from wlmvk.operator.app import resolve_stage_image
from wlmvk.operator.settings import OperatorSettings, StagingSettings

pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.kube_any(subject="RBAC: the operator's ServiceAccount reads its own pod"),
]

IMAGE = "registry.example/site/wlmvk:0.1.0"


async def _operator_pod(apiserver: Any) -> str:
    """The operator's pod as its Deployment makes it (a fresh name: the real plane is shared)."""
    pod = f"wlmvk-operator-{uuid.uuid4().hex[:6]}"
    for name in ("namespace.yaml", "rbac.yaml"):
        applied = await apiserver.kubectl("apply", "-f", str(MANIFESTS / name))
        assert applied.returncode == 0, applied.stderr
    async with await KubeClient.connect(str(apiserver.kubeconfig)) as admin:
        await admin.create(
            PODS,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod, "namespace": "wlmvk"},
                "spec": {"containers": [{"name": "operator", "image": IMAGE}]},
            },
            namespace="wlmvk",
        )
    return pod


async def test_the_staging_image_is_the_operators_own(apiserver: Any) -> None:
    pod = await _operator_pod(apiserver)
    settings = OperatorSettings(staging=StagingSettings(image=""), own_pod=("wlmvk", pod))
    async with await KubeClient.connect(str(apiserver.kubeconfig_for("wlmvk-operator"))) as client:
        resolved = await resolve_stage_image(client, settings)
        assert resolved.staging.image == IMAGE
        given = OperatorSettings(staging=StagingSettings(image="other:1"), own_pod=settings.own_pod)
        assert (await resolve_stage_image(client, given)).staging.image == "other:1"
    async with await KubeClient.connect(str(apiserver.kubeconfig)) as admin:
        await admin.delete(PODS, pod, namespace="wlmvk")


async def test_an_unreadable_own_pod_stops_the_operator_saying_what_to_give(apiserver: Any) -> None:
    settings = OperatorSettings(staging=StagingSettings(image=""), own_pod=("wlmvk", "gone"))
    async with await KubeClient.connect(str(apiserver.kubeconfig_for("wlmvk-operator"))) as client:
        with pytest.raises(FailedPrecondition) as caught:
            await resolve_stage_image(client, settings)
    assert caught.value.message.startswith(
        "the staging image is the operator's own, but its pod wlmvk/gone could not be read ("
    )
    assert caught.value.message.endswith("): give --stage-image")
