"""The version the virtual nodes report: the API server's, asked at the kubelet's start."""

from __future__ import annotations

import pytest

from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.unit.kubelet.fakebackend import FakeBackend
from wlmvk import __version__
from wlmvk.kube.bodies import NODES
from wlmvk.kube.client import KubeClient
from wlmvk_dev.apiserver.handlers import routes as handlers


async def test_nodes_on_a_1_33_server_report_1_33(
    apiserver: RunningApiServer,
    kube: KubeClient,
    kubelet_factory: StartKubelet,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        handlers, "VERSION", {**handlers.VERSION, "major": "1", "minor": "33", "gitVersion": "v1.33.4"}
    )
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=FakeBackend())
    listing = await kube.list(NODES, label_selector="type=virtual-kubelet")
    reported = {item["status"]["nodeInfo"]["kubeletVersion"] for item in listing["items"]}
    assert reported == {f"v1.33.4+wlmvk-{__version__}"}
    # Nothing declared before v1.36: the field is left alone.
    assert {str(item["status"].get("declaredFeatures")) for item in listing["items"]} == {"None"}


async def test_nodes_on_a_1_36_server_declare_websockets_to_the_kubelet_unless_told_not_to(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet
) -> None:
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=FakeBackend())
    listing = await kube.list(NODES, label_selector="type=virtual-kubelet")
    declared = [item["status"].get("declaredFeatures") for item in listing["items"]]
    assert len(declared) == len(FakeBackend().partition_table)
    assert declared == [["ExtendWebSocketsToKubelet"]] * len(declared)


async def test_nodes_on_a_1_36_server_declare_nothing_with_websockets_to_the_kubelet_off(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet
) -> None:
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=FakeBackend(), websockets_to_kubelet=False)
    listing = await kube.list(NODES, label_selector="type=virtual-kubelet")
    declared = [item["status"].get("declaredFeatures", []) for item in listing["items"]]
    assert len(declared) == len(FakeBackend().partition_table)
    assert declared == [[]] * len(declared)
