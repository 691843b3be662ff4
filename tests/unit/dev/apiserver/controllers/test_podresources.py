"""Pod requests and the NodeResourcesFit reasons."""

from __future__ import annotations

from typing import Any

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk_dev.apiserver.controllers.podresources import (
    allocatable,
    insufficient,
    pod_requests,
    requested_on,
    usage_by_node,
)


def container(
    requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **extra: Any
) -> Any:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources, **extra}


def pod(*containers: Any, init: tuple[Any, ...] = (), phase: str = "Pending", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": list(containers), "initContainers": list(init), **spec},
        "status": {"phase": phase},
    }


def test_sums_containers_in_millicores_and_bytes() -> None:
    p = pod(container({"cpu": "250m", "memory": "1Gi"}), container({"cpu": "1", "memory": "512Mi"}))
    assert pod_requests(p) == {"cpu": 1250, "memory": 1536 * 2**20}


def test_no_requests_is_empty() -> None:
    assert pod_requests(pod(container())) == {}
    assert pod_requests({"spec": {}}) == {}


def test_limits_stand_in_for_missing_requests() -> None:
    p = pod(container(limits={"cpu": "2", "nvidia.com/gpu": "1"}, requests={"cpu": "1"}))
    assert pod_requests(p) == {"cpu": 1000, "nvidia.com/gpu": 1}


def test_init_containers_raise_the_floor_but_do_not_add() -> None:
    p = pod(container({"cpu": "1"}), init=(container({"cpu": "3"}), container({"cpu": "2", "memory": "1"})))
    assert pod_requests(p) == {"cpu": 3000, "memory": 1}


def test_sidecars_add_to_the_sum_and_to_later_init_containers() -> None:
    sidecar = container({"cpu": "500m"}, restartPolicy="Always")
    p = pod(container({"cpu": "1"}), init=(sidecar, container({"cpu": "2"})))
    assert pod_requests(p) == {"cpu": 2500}


def test_overhead_is_added() -> None:
    p = pod(container({"cpu": "1"}), overhead={"cpu": "100m", "memory": "10Mi"})
    assert pod_requests(p) == {"cpu": 1100, "memory": 10 * 2**20}


def test_bad_quantity_is_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        pod_requests(pod(container({"cpu": "lots"})))


def test_terminated_pods_do_not_count() -> None:
    pods = [
        pod(container({"cpu": "1"}), phase="Running"),
        pod(container({"cpu": "1"}), phase="Succeeded"),
        pod(container({"cpu": "1"}), phase="Failed"),
        pod(container({"cpu": "1"}), phase="Pending"),
    ]
    usage = requested_on(pods)
    assert (usage.requested, usage.pods) == ({"cpu": 2000}, 2)


def test_allocatable_falls_back_to_capacity() -> None:
    assert allocatable({"status": {"capacity": {"cpu": "2", "pods": "110"}}}) == {"cpu": 2000, "pods": 110}
    node = {"status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3500m", "memory": "1Gi"}}}
    assert allocatable(node) == {"cpu": 3500, "memory": 2**30}
    assert allocatable({}) == {}


def test_insufficient_lists_every_shortfall_in_the_scheduler_order() -> None:
    free = allocatable({"status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "3"}}})
    want = pod_requests(pod(container({"nvidia.com/gpu": "1", "memory": "2Gi", "cpu": "1"})))
    used = pod_requests(pod(container({"cpu": "1500m"})))
    assert insufficient(want, free, used, 3) == [
        "Too many pods",
        "Insufficient cpu",
        "Insufficient memory",
        "Insufficient nvidia.com/gpu",
    ]


def test_exact_fit_is_enough() -> None:
    free = allocatable({"status": {"allocatable": {"cpu": "2", "pods": "2"}}})
    assert insufficient({"cpu": 1000}, free, {"cpu": 1000}, 1) == []
    assert insufficient({"cpu": 1001}, free, {"cpu": 1000}, 1) == ["Insufficient cpu"]


def test_unrequested_resources_are_not_checked() -> None:
    free = allocatable({"status": {"allocatable": {"pods": "1"}}})
    assert insufficient({}, free, {}, 0) == []
    assert insufficient({}, {}, {}, 0) == ["Too many pods"]


def test_usage_by_node_leaves_unbound_pods_out() -> None:
    bound = pod(container({"cpu": "1"}), phase="Running")
    bound["spec"]["nodeName"] = "n1"
    usage = usage_by_node([bound, pod(container({"cpu": "5"}))])
    assert list(usage) == ["n1"]
    assert (usage["n1"].requested, usage["n1"].pods) == ({"cpu": 1000}, 1)
