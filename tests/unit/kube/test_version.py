"""The Kubernetes version wlmvk implements is the release the control plane is pinned to."""

from __future__ import annotations

from pathlib import Path

from wlmvk.kube.version import KUBERNETES_VERSION

ROOT = Path(__file__).resolve().parents[3]


def pinned() -> dict[str, str]:
    lines = (ROOT / "scripts" / "kube-versions.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_the_implemented_version_is_the_pinned_control_plane() -> None:
    assert pinned()["KUBE_VERSION"] == KUBERNETES_VERSION
