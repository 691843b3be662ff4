"""The Kubernetes version wlmvk implements, and the one its virtual nodes report.

``KUBERNETES_VERSION`` is the control plane the kubelet is built and tested against: the release
pinned in dev/scripts/kube-versions.env (``KUBE_VERSION``), which tests/unit/kube/test_version.py holds
equal to this constant; the development plane serves it as its ``/version``.

A virtual node reports, as its ``kubeletVersion`` (``kubectl get nodes`` shows it, and the API
server and its controllers read it to judge what a node speaks), the API server's version as
``GET /version`` gave it at the kubelet's start, but never a newer one than wlmvk implements, with
wlmvk's own version as build metadata (as k3s does): ``v1.33.4+wlmvk-0.1.0`` on a 1.33.4 server.
Kubernetes' skew policy lets a kubelet be older than its API server, never newer; a constant would
claim a kubelet newer than an older cluster's server.

From v1.36 a node also lists, in ``status.declaredFeatures``, what its kubelet can do that the
API server may rely on; a real v1.36 kubelet declares ``ExtendWebSocketsToKubelet`` (it serves
exec, attach and port-forward over WebSockets itself, so kube-apiserver passes kubectl's WebSocket
through instead of translating it to SPDY). wlmvk's kubelet serves both, and declares it the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

KUBERNETES_VERSION = "v1.36.3"

_CORE = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def _parts(version: str) -> tuple[int, int, int]:
    found = _CORE.match(version)
    if found is None:
        raise ValueError(f"not a Kubernetes version: {version!r}")
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch)


def server_version(answer: Mapping[str, object]) -> tuple[int, int, int] | None:
    """(major, minor, patch) of an API server's ``/version`` answer; None when it names none.

    ``gitVersion`` first (its pre-release and build parts, ``-gke.100``, dropped); else the
    ``major`` and ``minor`` fields (some providers write ``"33+"``) with patch 0.
    """
    git = answer.get("gitVersion")
    if isinstance(git, str) and _CORE.match(git):
        return _parts(git)
    major, minor = (str(answer.get(key, "")).rstrip("+") for key in ("major", "minor"))
    if major.isdigit() and minor.isdigit():
        return int(major), int(minor), 0
    return None


WEBSOCKETS_TO_KUBELET = "ExtendWebSocketsToKubelet"
"""The declared feature that lets kube-apiserver pass exec's WebSocket through to the kubelet."""
DECLARED_FROM = (1, 36)
"""The first release whose API server reads a node's ``declaredFeatures`` by default."""


def declared_features(reported: str, *, websockets: bool) -> tuple[str, ...] | None:
    """A node's ``status.declaredFeatures`` for the ``kubeletVersion`` it reports (``reported``).

    None before v1.36: the field is left alone (older servers gate or lack it). From v1.36,
    ``ExtendWebSocketsToKubelet`` when ``websockets`` (the default, as a real kubelet's), else
    nothing: an empty list, which also removes an earlier declaration.
    """
    if _parts(reported)[:2] < DECLARED_FROM:
        return None
    return (WEBSOCKETS_TO_KUBELET,) if websockets else ()


def kubelet_version(answer: Mapping[str, object], wlmvk_version: str) -> str:
    """The ``kubeletVersion`` virtual nodes report for an API server's ``/version`` answer."""
    implemented = _parts(KUBERNETES_VERSION)
    server = server_version(answer)
    major, minor, patch = implemented if server is None else min(server, implemented)
    return f"v{major}.{minor}.{patch}+wlmvk-{wlmvk_version}"
