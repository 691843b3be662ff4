"""The pods/log proxy's pure parts: which container, and which kubelet URL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from wlmvk_dev.apiserver.kubelets.logproxy import choose_container, kubelet_url
from wlmvk_dev.apiserver.objects.errors import ApiError
from wlmvk_dev.hostnode.logs import LogOptions


def pod(*containers: str, init: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "team a"},
        "spec": {
            "containers": [{"name": c} for c in containers],
            "initContainers": [{"name": c} for c in init],
        },
    }


def node(addresses: list[tuple[str, str]], port: int | None = 10250) -> dict[str, Any]:
    status: dict[str, Any] = {"addresses": [{"type": t, "address": a} for t, a in addresses]}
    if port is not None:
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": port}}
    return {"metadata": {"name": "n1"}, "status": status}


def test_the_only_container_is_the_default() -> None:
    assert choose_container(pod("main"), None) == "main"
    assert choose_container(pod("main", "side"), "side") == "side"
    assert choose_container(pod("main", init=("setup",)), "setup") == "setup"


def test_several_containers_need_a_name() -> None:
    with pytest.raises(ApiError) as raised:
        choose_container(pod("a", "b", init=("i",)), None)
    assert raised.value.code == 400
    assert raised.value.message == (
        "a container name must be specified for pod p, choose one of: [a b]"
        " or one of the init containers: [i]"
    )


def test_unknown_container_is_a_bad_request() -> None:
    with pytest.raises(ApiError) as raised:
        choose_container(pod("a"), "zz")
    assert (raised.value.code, raised.value.message) == (400, "container zz is not valid for pod p")


def test_url_uses_internal_ip_and_passes_the_options() -> None:
    options = LogOptions(
        follow=True,
        timestamps=True,
        tail_lines=10,
        limit_bytes=99,
        since_time=datetime(2026, 12, 2, 12, 0, tzinfo=UTC),
    )
    url = kubelet_url(node([("Hostname", "n1"), ("InternalIP", "10.0.0.7")]), pod("main"), "main", options)
    assert url == (
        "https://10.0.0.7:10250/containerLogs/team%20a/p/main"
        "?follow=true&timestamps=true&tailLines=10&limitBytes=99&sinceTime=2026-12-02T12%3A00%3A00Z"
    )


@pytest.mark.parametrize(
    ("addresses", "host"),
    [
        ([("ExternalIP", "1.2.3.4"), ("Hostname", "n1")], "1.2.3.4"),
        ([("Hostname", "n1")], "n1"),
        ([("InternalIP", "fd00::7")], "[fd00::7]"),
    ],
)
def test_address_fallbacks(addresses: list[tuple[str, str]], host: str) -> None:
    assert (
        kubelet_url(node(addresses, 1), pod("c"), "c", LogOptions())
        == f"https://{host}:1/containerLogs/team%20a/p/c"
    )


def test_a_node_without_kubelet_endpoint_is_an_error() -> None:
    with pytest.raises(ApiError) as raised:
        kubelet_url(node([("InternalIP", "10.0.0.7")], port=None), pod("c"), "c", LogOptions())
    assert raised.value.code == 500
