"""pods/log proxied to a node's kubelet over HTTPS (a test kubelet with a trustme certificate)."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
import trustme
from aiohttp import web

from tests.fixtures.apiserver import KUBECTL, RunningApiServer
from wlmvk_dev.apiserver.objects.resources import NODES, PODS

pytestmark = pytest.mark.kubectl


@dataclass
class FakeKubelet:
    """Answers /containerLogs like a kubelet; follow streams until ``release`` is set."""

    port: int = 0
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def container_logs(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.path, dict(request.query)))
        if request.match_info["container"] == "missing":
            return web.Response(status=404, text="container not found")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await response.write(b"line one\n")
        if request.query.get("follow") == "true":
            await self.release.wait()
            await response.write(b"line two\n")
        await response.write_eof()
        return response


@pytest.fixture
async def kubelet() -> AsyncIterator[FakeKubelet]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    fake = FakeKubelet()
    app = web.Application()
    app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", fake.container_logs)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    fake.port = runner.addresses[0][1]
    try:
        yield fake
    finally:
        fake.release.set()
        await runner.cleanup()


def add_node_and_pod(apiserver: RunningApiServer, port: int, containers: list[str]) -> None:
    apiserver.store.create(
        NODES,
        {
            "metadata": {"name": "remote"},
            "status": {
                "addresses": [
                    {"type": "Hostname", "address": "remote"},
                    {"type": "InternalIP", "address": "127.0.0.1"},
                ],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            },
        },
    )
    apiserver.store.create(
        PODS,
        {
            "metadata": {"name": "job"},
            "spec": {"nodeName": "remote", "containers": [{"name": c, "image": "x"} for c in containers]},
        },
    )


async def test_kubectl_logs_goes_to_the_kubelet(apiserver: RunningApiServer, kubelet: FakeKubelet) -> None:
    add_node_and_pod(apiserver, kubelet.port, ["main"])
    logs = await apiserver.kubectl(
        "logs", "job", "--tail=5", "--timestamps", "--limit-bytes=100", "--since=1h"
    )
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout == "line one\n"
    path, query = kubelet.requests[-1]
    assert path == "/containerLogs/default/job/main"
    assert query == {"tailLines": "5", "timestamps": "true", "limitBytes": "100", "sinceSeconds": "3600"}


async def test_follow_streams_chunk_by_chunk(apiserver: RunningApiServer, kubelet: FakeKubelet) -> None:
    add_node_and_pod(apiserver, kubelet.port, ["main"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(KUBECONFIG=str(apiserver.kubeconfig), HOME=str(apiserver.home))
    proc = await asyncio.create_subprocess_exec(
        KUBECTL, "logs", "-f", "job", stdout=asyncio.subprocess.PIPE, env=env
    )
    assert proc.stdout is not None
    # The first line arrives while the kubelet still holds the stream open: nothing is buffered.
    assert await asyncio.wait_for(proc.stdout.readline(), 30) == b"line one\n"
    assert kubelet.requests[-1][1].get("follow") == "true"
    kubelet.release.set()
    assert await asyncio.wait_for(proc.stdout.readline(), 30) == b"line two\n"
    assert await asyncio.wait_for(proc.wait(), 30) == 0


async def log_request(apiserver: RunningApiServer, query: str) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{apiserver.url}/api/v1/namespaces/default/pods/job/log{query}") as response,
    ):
        text = await response.text()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text


async def test_container_choice_like_kubernetes(apiserver: RunningApiServer, kubelet: FakeKubelet) -> None:
    add_node_and_pod(apiserver, kubelet.port, ["a", "b"])
    status, body = await log_request(apiserver, "")
    assert status == 400
    assert body["message"] == "a container name must be specified for pod job, choose one of: [a b]"
    status, body = await log_request(apiserver, "?container=zzz")
    assert (status, body["message"]) == (400, "container zzz is not valid for pod job")
    status, body = await log_request(apiserver, "?container=b&previous=true")
    assert (status, body) == (200, "line one\n")
    assert kubelet.requests[-1] == ("/containerLogs/default/job/b", {"previous": "true"})


async def test_kubelet_errors_and_unreachable_kubelets(
    apiserver: RunningApiServer, kubelet: FakeKubelet
) -> None:
    add_node_and_pod(apiserver, kubelet.port, ["main", "missing"])
    status, body = await log_request(apiserver, "?container=missing")
    assert (status, body) == (404, "container not found")
    node = apiserver.store.get(NODES, "remote")
    node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] = 1
    apiserver.store.update(NODES, node, subresource="status")
    status, body = await log_request(apiserver, "?container=main")
    assert status == 500
    assert body["message"].startswith('Get "https://127.0.0.1:1/containerLogs/default/job/main"')
