"""The Kubernetes version wlmvk implements is the release the control plane is pinned to."""

from __future__ import annotations

from pathlib import Path

import pytest

from wlmvk.kube.version import KUBERNETES_VERSION, declared_features, kubelet_version

ROOT = Path(__file__).resolve().parents[3]


def pinned() -> dict[str, str]:
    lines = (ROOT / "dev" / "scripts" / "kube-versions.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_the_implemented_version_is_the_pinned_control_plane() -> None:
    assert pinned()["KUBE_VERSION"] == KUBERNETES_VERSION


@pytest.mark.parametrize(
    ("answer", "reported"),
    [
        # A 1.33 cluster: its own version, not a kubelet newer than its API server.
        ({"major": "1", "minor": "33", "gitVersion": "v1.33.4"}, "v1.33.4+wlmvk-0.1.0"),
        ({"major": "1", "minor": "33+", "gitVersion": "v1.33.4-gke.1200"}, "v1.33.4+wlmvk-0.1.0"),
        ({"major": "1", "minor": "33+", "gitVersion": "v1.33.4+k3s1"}, "v1.33.4+wlmvk-0.1.0"),
        ({"major": "1", "minor": "30", "gitVersion": "v1.30.0-rc.1"}, "v1.30.0+wlmvk-0.1.0"),
        # No usable gitVersion: the major and minor fields, patch 0.
        ({"major": "1", "minor": "33+", "gitVersion": "unknown"}, "v1.33.0+wlmvk-0.1.0"),
        ({"major": "1", "minor": "34"}, "v1.34.0+wlmvk-0.1.0"),
        # Never newer than what wlmvk implements.
        ({"gitVersion": "v1.36.3"}, "v1.36.3+wlmvk-0.1.0"),
        ({"gitVersion": "v1.36.1"}, "v1.36.1+wlmvk-0.1.0"),
        ({"gitVersion": "v1.36.9"}, "v1.36.3+wlmvk-0.1.0"),
        ({"major": "1", "minor": "37", "gitVersion": "v1.37.0"}, "v1.36.3+wlmvk-0.1.0"),
        ({"gitVersion": "v2.0.0"}, "v1.36.3+wlmvk-0.1.0"),
        # Nothing to read: what wlmvk implements.
        ({}, "v1.36.3+wlmvk-0.1.0"),
        ({"major": "", "minor": "", "gitVersion": ""}, "v1.36.3+wlmvk-0.1.0"),
    ],
)
def test_nodes_report_the_servers_version_at_most_the_implemented_one(
    answer: dict[str, str], reported: str
) -> None:
    assert kubelet_version(answer, "0.1.0") == reported


@pytest.mark.parametrize(
    ("reported", "websockets", "declared"),
    [
        # From v1.36, as a real kubelet: exec's WebSocket goes through to the kubelet.
        ("v1.36.3+wlmvk-0.1.0", True, ("ExtendWebSocketsToKubelet",)),
        ("v1.36.0+wlmvk-0.1.0", True, ("ExtendWebSocketsToKubelet",)),
        # Turned off: an empty list, which removes an earlier declaration.
        ("v1.36.3+wlmvk-0.1.0", False, ()),
        # Before v1.36 the field is left alone, whatever the setting.
        ("v1.35.4+wlmvk-0.1.0", True, None),
        ("v1.35.4+wlmvk-0.1.0", False, None),
        ("v1.33.4+wlmvk-0.1.0", True, None),
    ],
)
def test_nodes_declare_websockets_to_the_kubelet_from_1_36(
    reported: str, websockets: bool, declared: tuple[str, ...] | None
) -> None:
    assert declared_features(reported, websockets=websockets) == declared
