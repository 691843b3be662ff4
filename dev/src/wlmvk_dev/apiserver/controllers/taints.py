"""Taints as the in-memory server's controllers handle them: reading, naming, adding, removing.

Whether a toleration tolerates a taint, and which effects keep a pod off a node, are
kube-scheduler's rules in ``wlmvk.core.scheduling``, shared with the operator.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Taint = Mapping[str, Any]
Toleration = Mapping[str, Any]


def describe(taint: Taint) -> str:
    """How kube-scheduler names a taint in its messages: ``{key: value}``."""
    key, value = taint.get("key", ""), taint.get("value") or ""
    return f"{{{key}: {value}}}"


def pod_tolerations(pod: Mapping[str, Any]) -> list[Toleration]:
    tolerations: list[Toleration] = pod.get("spec", {}).get("tolerations") or []
    return tolerations


def node_taints(node: Mapping[str, Any]) -> list[Taint]:
    taints: list[Taint] = node.get("spec", {}).get("taints") or []
    return taints


def with_taint(taints: Iterable[Taint], taint: Taint) -> list[dict[str, Any]]:
    """``taints`` plus ``taint`` (replacing one with the same key and effect)."""
    kept = [dict(t) for t in taints if not _same(t, taint)]
    return [*kept, dict(taint)]


def without_taint(taints: Iterable[Taint], key: str, effect: str) -> list[dict[str, Any]]:
    return [dict(t) for t in taints if not (t.get("key") == key and t.get("effect") == effect)]


def _same(a: Taint, b: Taint) -> bool:
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")
