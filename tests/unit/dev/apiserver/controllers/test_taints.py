"""Taints as the in-memory controllers name, add and remove them (matching: core/test_scheduling)."""

from __future__ import annotations

from wlmvk_dev.apiserver.controllers.taints import describe, with_taint, without_taint

PROVIDER = {"key": "virtual-kubelet.io/provider", "value": "wlm", "effect": "NoSchedule"}


def test_describe_like_the_scheduler() -> None:
    assert describe(PROVIDER) == "{virtual-kubelet.io/provider: wlm}"
    assert describe({"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}) == (
        "{node.kubernetes.io/unreachable: }"
    )


def test_with_and_without_taint() -> None:
    old = [{"key": "a", "effect": "NoSchedule", "value": "1"}, {"key": "a", "effect": "NoExecute"}]
    replaced = with_taint(old, {"key": "a", "effect": "NoSchedule", "value": "2"})
    assert replaced == [
        {"key": "a", "effect": "NoExecute"},
        {"key": "a", "effect": "NoSchedule", "value": "2"},
    ]
    assert without_taint(old, "a", "NoExecute") == [old[0]]
