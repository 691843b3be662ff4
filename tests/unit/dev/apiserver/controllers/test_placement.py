"""One scheduling decision: filters in kube-scheduler's order, scores, and its FitError message."""

from __future__ import annotations

from typing import Any

from wlmvk_dev.apiserver.controllers.placement import Bind, Unschedulable, decide, fit_error, preferred_weight
from wlmvk_dev.apiserver.controllers.podresources import usage_by_node as by_node

PROVIDER = {"key": "virtual-kubelet.io/provider", "value": "wlm", "effect": "NoSchedule"}


def node(
    name: str,
    labels: dict[str, str] | None = None,
    *,
    taints: list[dict[str, Any]] | None = None,
    ready: str | None = "True",
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    unschedulable: bool = False,
    **extra: str,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **extra}},
    }
    if ready is not None:
        body["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    return body


def pod(
    name: str = "p", *, cpu: str | None = None, node_name: str | None = None, **spec: Any
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c"}
    if cpu is not None:
        c["resources"] = {"requests": {"cpu": cpu}}
    body: dict[str, Any] = {"metadata": {"name": name}, "spec": {"containers": [c], **spec}, "status": {}}
    if node_name:
        body["spec"]["nodeName"] = node_name
        body["status"]["phase"] = "Running"
    return body


def test_no_nodes() -> None:
    assert decide(pod(), [], {}) == Unschedulable("no nodes available to schedule pods")


def test_binds_the_node_the_selector_names() -> None:
    nodes = [node("a", {"zone": "1"}), node("b", {"zone": "2"}), node("c", {"zone": "3"})]
    assert decide(pod(nodeSelector={"zone": "2"}), nodes, {}) == Bind("b")


def test_message_counts_reasons_per_node_sorted() -> None:
    nodes = [node("a", {"zone": "1"}), node("b", taints=[PROVIDER]), node("c", taints=[PROVIDER])]
    decision = decide(pod(nodeSelector={"zone": "2"}), nodes, {})
    assert decision == Unschedulable(
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) had untolerated taint {virtual-kubelet.io/provider: wlm}. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_taint_is_checked_before_affinity() -> None:
    nodes = [node("a", {"zone": "1"}, taints=[PROVIDER])]
    decision = decide(pod(nodeSelector={"zone": "2"}), nodes, {})
    assert isinstance(decision, Unschedulable)
    assert "1 node(s) had untolerated taint {virtual-kubelet.io/provider: wlm}." in decision.message


def test_toleration_lets_the_pod_onto_a_tainted_node() -> None:
    tolerations = [{"key": "virtual-kubelet.io/provider", "operator": "Exists"}]
    nodes = [node("vk", {"type": "virtual-kubelet"}, taints=[PROVIDER])]
    assert decide(pod(tolerations=tolerations), nodes, {}) == Bind("vk")


def test_unschedulable_node_is_skipped_unless_tolerated() -> None:
    nodes = [node("a", unschedulable=True)]
    decision = decide(pod(), nodes, {})
    assert decision == Unschedulable(
        "0/1 nodes are available: 1 node(s) were unschedulable. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    tolerant = pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}])
    assert decide(tolerant, nodes, {}) == Bind("a")


def test_not_ready_nodes_are_not_used() -> None:
    nodes = [node("a", ready="False"), node("b", ready="Unknown")]
    decision = decide(pod(), nodes, {})
    assert isinstance(decision, Unschedulable)
    assert decision.message.startswith("0/2 nodes are available: 2 node(s) were not ready.")


def test_node_without_ready_condition_is_usable_until_the_lifecycle_controller_says_otherwise() -> None:
    assert decide(pod(), [node("a", ready=None)], {}) == Bind("a")


def test_pod_tolerating_unreachable_may_go_to_an_unknown_node() -> None:
    tolerant = pod(tolerations=[{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}])
    assert decide(tolerant, [node("a", ready="Unknown")], {}) == Bind("a")
    unreachable = {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}
    decision = decide(pod(), [node("a", ready="Unknown", taints=[unreachable])], {})
    assert isinstance(decision, Unschedulable)
    assert "1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }" in decision.message


def test_resources_of_bound_pods_count() -> None:
    nodes = [node("a", cpu="2"), node("b", cpu="2")]
    bound = by_node([pod("x", cpu="1500m", node_name="a"), pod("y", cpu="1", node_name="b")])
    assert decide(pod(cpu="1"), nodes, bound) == Bind("b")
    decision = decide(pod(cpu="1600m"), nodes, bound)
    assert decision == Unschedulable(
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


def test_finished_pods_free_their_resources() -> None:
    done = pod("x", cpu="2", node_name="a")
    done["status"]["phase"] = "Succeeded"
    assert decide(pod(cpu="2"), [node("a", cpu="2")], by_node([done])) == Bind("a")


def test_too_many_pods_and_gpus() -> None:
    nodes = [node("a", pods="1"), node("b", **{"nvidia.com/gpu": "1"}), node("c")]
    gpu_pod = pod()
    gpu_pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    decision = decide(gpu_pod, nodes, by_node([pod("x", node_name="a")]))
    assert decision == Unschedulable(
        "0/3 nodes are available: 1 Too many pods, 3 Insufficient nvidia.com/gpu. "
        "preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod."
    )


def test_mixed_preemption_histogram() -> None:
    message = fit_error({"a": ["Insufficient cpu"], "b": ["node(s) were unschedulable"]})
    assert message == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. "
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


def test_preferred_weights_add_up_over_matching_terms() -> None:
    zone_a = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    any_rack = {"matchExpressions": [{"key": "rack", "operator": "Exists"}]}
    terms = [
        {"weight": 10, "preference": zone_a},
        {"weight": 5, "preference": any_rack},
        {"weight": 80, "preference": {}},
    ]
    spec = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}}
    assert preferred_weight(spec, {"zone": "a", "rack": "1"}, "n1") == 15
    assert preferred_weight(spec, {"zone": "b"}, "n1") == 0


def test_prefers_preferred_affinity_then_free_resources_then_name() -> None:
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}
            ]
        }
    }
    nodes = [node("a"), node("b", {"ssd": "yes"}), node("c")]
    assert decide(pod(affinity=preferred), nodes, {}) == Bind("b")
    busy = by_node([pod("x", cpu="3", node_name="a")])
    assert decide(pod(cpu="1"), [node("a"), node("c")], busy) == Bind("c")
    assert decide(pod(), [node("c"), node("a")], {}) == Bind("a")


def test_prefer_no_schedule_taints_lower_the_score() -> None:
    soft = {"key": "soft", "effect": "PreferNoSchedule"}
    assert decide(pod(), [node("a", taints=[soft]), node("b")], {}) == Bind("b")


def test_invalid_request_is_unschedulable_with_the_reason() -> None:
    decision = decide(pod(cpu="lots"), [node("a")], {})
    assert isinstance(decision, Unschedulable)
    assert "lots" in decision.message
