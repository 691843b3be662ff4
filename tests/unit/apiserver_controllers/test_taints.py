"""Tolerations against taints, as Kubernetes' ToleratesTaint and the TaintToleration filter."""

from __future__ import annotations

from typing import Any

import pytest

from wlmvk_dev.apiserver.taints import describe, first_untolerated, tolerates, with_taint, without_taint

PROVIDER = {"key": "virtual-kubelet.io/provider", "value": "wlm", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": PROVIDER["key"], "operator": "Equal", "value": "wlm", "effect": "NoSchedule"}, True),
        ({"key": "virtual-kubelet.io/provider", "value": "wlm"}, True),
        ({"key": "virtual-kubelet.io/provider", "operator": "Equal", "value": "other"}, False),
        ({"key": "virtual-kubelet.io/provider", "operator": "Exists"}, True),
        ({"key": "virtual-kubelet.io/provider", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "virtual-kubelet.io/provider", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"operator": "Exists"}, True),
        ({"key": "", "operator": "Exists"}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": "virtual-kubelet.io/provider", "operator": "Bogus", "value": "wlm"}, False),
        ({"key": "virtual-kubelet.io/provider"}, False),
    ],
)
def test_tolerates(toleration: dict[str, Any], expected: bool) -> None:
    assert tolerates(toleration, PROVIDER) is expected


def test_empty_value_taint_is_tolerated_by_equal_without_value() -> None:
    taint = {"key": "gpu", "effect": "NoSchedule"}
    assert tolerates({"key": "gpu", "operator": "Equal"}, taint)
    assert tolerates({"key": "gpu", "value": ""}, taint)
    assert not tolerates({"key": "gpu", "value": "x"}, taint)


def test_only_noschedule_and_noexecute_keep_pods_away() -> None:
    prefer = {"key": "a", "effect": "PreferNoSchedule"}
    execute = {"key": "b", "effect": "NoExecute"}
    assert first_untolerated([prefer], []) is None
    assert first_untolerated([prefer, execute], []) == execute
    assert first_untolerated([prefer, execute], [{"key": "b", "operator": "Exists"}]) is None


def test_first_untolerated_is_in_node_order() -> None:
    a = {"key": "a", "effect": "NoSchedule"}
    b = {"key": "b", "value": "1", "effect": "NoSchedule"}
    assert first_untolerated([a, b], []) == a
    assert first_untolerated([a, b], [{"key": "a", "operator": "Exists"}]) == b


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
