"""The operator's probe server: what a kubelet's probes and a second replica on the host see."""

from __future__ import annotations

import socket

import aiohttp

from wlmvk.operator import probes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def test_two_replicas_sharing_a_host_both_serve_the_probe_port() -> None:
    # Pods of one Deployment on a host without pod networks (wlmvk dev node) share its ports.
    port = _free_port()
    leader, candidate = probes.Health("leader"), probes.Health("candidate")
    first = await probes.serve(leader, host="127.0.0.1", port=port)
    try:
        second = await probes.serve(candidate, host="127.0.0.1", port=port)
    finally:
        await first.cleanup()
    try:
        # The first replica gone, the second still answers on the port it bound beside it.
        assert await _get(port, "/healthz") == (200, "ok")
        assert await _get(port, "/readyz") == (200, "candidate")
    finally:
        await second.cleanup()


async def _get(port: int, path: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status, (await response.text()).strip()


async def test_readyz_is_503_until_the_replica_has_a_role() -> None:
    port = _free_port()
    runner = await probes.serve(probes.Health(), host="127.0.0.1", port=port)
    try:
        assert await _get(port, "/readyz") == (503, "starting")
    finally:
        await runner.cleanup()
