"""Which protocol kube-apiserver v1.36 speaks to our kubelet for exec, seen on the real binary.

Its counter ``apiserver_websocket_streaming_requests_total{subresource="exec"}`` names the way
each WebSocket exec went: ``translated_at_apiserver`` (the apiserver ends kubectl's WebSocket
and dials the kubelet with SPDY/3.1, for a kubelet run with ``--no-websockets-to-kubelet``, whose
Nodes declare nothing) or ``proxied_to_kubelet`` (the default: the Node lists
``ExtendWebSocketsToKubelet`` in ``status.declaredFeatures``, as a real v1.36 kubelet's does, and
the WebSocket goes through as it came). The kubelet serves both: its SPDY
transport (``spdy``) and its WebSocket one (``websocket``). See ``kubelet/api/exec/spdyframes.py``.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.test_kubectl_exec import kubectl_with, running_pod
from tests.fixtures.apiserver import RealApiServer
from wlmvk.kube.bodies import NODES, PODS

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, pytest.mark.kube_real]

COUNTER = re.compile(
    r'^apiserver_websocket_streaming_requests_total\{proxy_type="(\w+)",subresource="exec"\} (\d+)$', re.M
)


async def exec_routes(api: RealApiServer) -> dict[str, int]:
    metrics = await asyncio.to_thread(api.real.must, "get", "--raw", "/metrics")
    return {route: int(count) for route, count in COUNTER.findall(metrics)}


async def routes_taken(stack: Stack, pod: str) -> dict[str, int]:
    """Run a command in ``pod`` with kubectl's WebSocket; the routes the apiserver counted for it."""
    assert isinstance(stack.apiserver, RealApiServer)
    before = await exec_routes(stack.apiserver)
    done = await kubectl_with(
        stack, "websocket", "exec", pod, "--", "sh", "-c", "echo out; echo err >&2; exit 3"
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        3,
        "out\n",
        "err\ncommand terminated with exit code 3\n",
    )
    after = await exec_routes(stack.apiserver)
    return {
        route: count - before.get(route, 0) for route, count in after.items() if count != before.get(route, 0)
    }


async def declared(stack: Stack, pod: str) -> list[str]:
    """What the Node the pod runs on lists in ``status.declaredFeatures``."""
    body = await stack.kube.get(PODS, pod, namespace="default")
    node = await stack.kube.get(NODES, body["spec"]["nodeName"])
    return list(node["status"].get("declaredFeatures", []))


def needs_1_36(stack: Stack) -> None:
    assert isinstance(stack.apiserver, RealApiServer)
    if stack.apiserver.real.server_minor() < 36:
        pytest.skip("the counter and the Node's declaredFeatures route are kube-apiserver v1.36's")


async def test_passed_through_to_the_kubelet_whose_node_declares_websockets(stack: Stack) -> None:
    needs_1_36(stack)
    name = await running_pod(stack)
    try:
        assert await declared(stack, name) == ["ExtendWebSocketsToKubelet"]
        assert await routes_taken(stack, name) == {"proxied_to_kubelet": 1}
    finally:
        await stack.kubectl("delete", "pod", name, "--wait=false")


@pytest.mark.parametrize("kubelet_settings", [{"websockets_to_kubelet": False}], ids=["declaring-nothing"])
async def test_translated_to_spdy_for_a_kubelet_declaring_nothing(stack: Stack) -> None:
    needs_1_36(stack)
    name = await running_pod(stack)
    try:
        assert await declared(stack, name) == []
        assert await routes_taken(stack, name) == {"translated_at_apiserver": 1}
    finally:
        await stack.kubectl("delete", "pod", name, "--wait=false")
