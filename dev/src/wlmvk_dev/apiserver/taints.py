"""Taints and tolerations, as the TaintToleration filter and the node controllers see them.

A toleration tolerates a taint when its effect is empty or equal, its key is
empty or equal, and either its operator is Exists or (Equal / empty) its value
equals the taint's. Only NoSchedule and NoExecute taints keep a pod off a node;
PreferNoSchedule merely lowers the node's score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Taint = Mapping[str, Any]
Toleration = Mapping[str, Any]

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
FILTERING_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes' ``Toleration.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def first_untolerated(
    taints: Iterable[Taint], tolerations: Iterable[Toleration], effects: tuple[str, ...] = FILTERING_EFFECTS
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates."""
    tolerations = list(tolerations)
    for taint in taints:
        if taint.get("effect") in effects and not tolerated(tolerations, taint):
            return taint
    return None


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
