"""Leader election over a Lease on the in-memory API server (kube.leader.Elector)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.fixtures import polling
from wlmvk.kube.bodies import LEASES
from wlmvk.kube.client import KubeClient
from wlmvk.kube.leader import ElectionConfig, Elector

pytestmark = pytest.mark.apiserver(controllers=False)


@pytest.fixture
async def client(apiserver: Any) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(str(apiserver.kubeconfig)) as connected:
        yield connected


def elector(client: KubeClient, identity: str, duration: int = 1) -> Elector:
    config = ElectionConfig(
        "lock", "default", identity, duration=duration, renew_interval=0.2, retry_interval=0.1
    )
    return Elector(client, config)


async def holder(client: KubeClient) -> str:
    lease = await client.get(LEASES, "lock", namespace="default")
    return str(lease["spec"].get("holderIdentity") or "")


async def test_first_candidate_leads_and_others_wait(client: KubeClient) -> None:
    a, b = elector(client, "a"), elector(client, "b")
    assert await a.try_acquire()
    assert a.leading
    assert not await b.try_acquire()
    assert await holder(client) == "a"
    lease = await client.get(LEASES, "lock", namespace="default")
    assert lease["spec"]["leaseDurationSeconds"] == 1


async def test_a_renewing_leader_keeps_the_lease(client: KubeClient) -> None:
    a, b = elector(client, "a", duration=3), elector(client, "b", duration=3)
    await a.acquire()
    holding = asyncio.create_task(a.hold())
    waiting = asyncio.create_task(b.acquire())

    async def renewed_past_its_first_expiry() -> bool:
        spec = (await client.get(LEASES, "lock", namespace="default"))["spec"]
        held = datetime.fromisoformat(spec["renewTime"]) - datetime.fromisoformat(spec["acquireTime"])
        return held > timedelta(seconds=spec["leaseDurationSeconds"])

    # Unrenewed, the Lease would have been b's by now.
    await polling.eventually(renewed_past_its_first_expiry, timeout=30, every=0.1)
    assert not waiting.done()
    assert await holder(client) == "a"
    holding.cancel()  # the leader dies without handing over
    await asyncio.wait_for(waiting, 10)
    assert await holder(client) == "b"
    lease = await client.get(LEASES, "lock", namespace="default")
    assert lease["spec"]["leaseTransitions"] == 1


async def test_racing_candidates_for_an_expired_lease_yield_one_leader(client: KubeClient) -> None:
    old = elector(client, "old")
    await old.acquire()
    candidates = [elector(client, name) for name in ("x", "y", "z")]
    for candidate in candidates:
        assert not await candidate.try_acquire()  # they have seen the Lease held
    lease = await client.get(LEASES, "lock", namespace="default")
    # Each candidate judges expiry by its own clock since it saw the Lease change; until all do.
    await polling.eventually(lambda: all(c._expired(lease) for c in candidates), timeout=30, every=0.05)
    results = await asyncio.gather(*(c.try_acquire() for c in candidates))
    assert sum(results) == 1
    winner = candidates[results.index(True)]
    assert await holder(client) == winner._config.identity


async def test_a_deposed_leader_notices(client: KubeClient) -> None:
    a = elector(client, "a")
    await a.acquire()
    await client.patch(LEASES, "lock", {"spec": {"holderIdentity": "b"}}, namespace="default")
    await asyncio.wait_for(a.hold(), 5)  # returns: leadership lost
    assert not a.leading


async def test_release_lets_the_next_take_over_at_once(client: KubeClient) -> None:
    a, b = elector(client, "a", duration=30), elector(client, "b", duration=30)
    await a.acquire()
    assert not await b.try_acquire()
    await a.release()
    assert await holder(client) == ""
    assert await b.try_acquire()
