"""A Lease holder's fence (kube.leader.Elector.check, kube.fencing.FencedClient) on the in-memory API server.

A frozen holder is CLOCK_BOOTTIME moving on while the process does not run: the tests
move ``kube.leader``'s clock (only its own) forward as SIGSTOP would.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web

from wlmvk.core.errors import Unavailable
from wlmvk.kube import leader
from wlmvk.kube.bodies import LEASES, PODS, Body
from wlmvk.kube.client import KubeClient
from wlmvk.kube.fencing import FencedClient
from wlmvk.kube.leader import ElectionConfig, Elector, Fenced

pytestmark = pytest.mark.apiserver(controllers=False)


def config(identity: str) -> ElectionConfig:
    return ElectionConfig("lock", "default", identity, duration=10, renew_interval=1.0, retry_interval=0.1)


def pod(name: str) -> Body:
    return {"metadata": {"name": name, "annotations": {"k": "1"}}, "spec": {"containers": [{"name": "c"}]}}


def frozen_for(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    monkeypatch.setattr(leader, "boottime", lambda: time.clock_gettime(time.CLOCK_BOOTTIME) + seconds)


def test_a_renewal_lets_its_holder_write_for_its_duration_less_the_margin() -> None:
    assert leader.valid_until(100.0, config("a")) == 108.0


async def test_the_holder_writes_until_its_last_renewal_runs_out(
    kube: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = Elector(kube, config("a"))
    fenced = FencedClient(kube, check=a.check)
    with pytest.raises(Fenced, match="not the holder of Lease default/lock: write refused"):
        await fenced.create(PODS, pod("before"), namespace="default")
    assert await a.try_acquire()
    await fenced.create(PODS, pod("m"), namespace="default")
    frozen_for(monkeypatch, 8.0)
    assert not a.holds()
    with pytest.raises(Fenced):
        await fenced.patch(PODS, "m", {"metadata": {"annotations": {"k": "2"}}}, namespace="default")
    with pytest.raises(Fenced):
        await fenced.delete(PODS, "m", namespace="default")
    read = await fenced.get(PODS, "m", namespace="default")  # reads are never fenced
    assert read["metadata"]["annotations"] == {"k": "1"}


async def test_a_holder_frozen_past_a_takeover_cannot_write_or_renew(
    kube: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = Elector(kube, config("a")), Elector(kube, config("b"))
    assert await a.try_acquire()
    assert not await b.try_acquire()  # b sees a's renewal now, and counts from here
    frozen_for(monkeypatch, 11.0)  # both clocks: a was stopped, b waited it out
    assert await b.try_acquire()
    assert b.holds()
    assert not a.holds()
    with pytest.raises(Fenced):
        a.check()
    assert not await a.try_acquire()  # a's view of the Lease is stale: b holds a fresh one
    assert not a.leading
    lease = await kube.get(LEASES, "lock", namespace="default")
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("b", 1)


async def test_a_suspended_holder_finds_its_proof_expired(
    kube: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine suspended (or a VM paused) for 20 s: CLOCK_MONOTONIC did not move, CLOCK_BOOTTIME did."""
    a = Elector(kube, config("a"))
    assert await a.try_acquire()
    assert a.holds()
    real = time.clock_gettime

    def suspended(clock: int) -> float:
        return real(clock) + (20.0 if clock == time.CLOCK_BOOTTIME else 0.0)

    monkeypatch.setattr(time, "clock_gettime", suspended)
    assert not a.holds()
    with pytest.raises(Fenced):
        a.check()


async def test_the_holder_token_is_the_lease_transitions_count(
    kube: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = Elector(kube, config("a")), Elector(kube, config("b"))
    assert await a.try_acquire()
    assert (a.scope, a.transitions) == ("default/lock", 0)
    assert not await b.try_acquire()
    frozen_for(monkeypatch, 11.0)
    assert await b.try_acquire()
    assert b.transitions == 1
    assert await b.try_acquire()  # a renewal is no takeover
    assert b.transitions == 1


async def test_a_fenced_write_is_bounded_by_the_time_the_proof_has_left() -> None:
    """An API server that does not answer: the write gives up when the proof runs out, not after
    the client's 30 s, so it cannot be waiting (and land) past the Lease's bound."""
    app = web.Application()
    done = asyncio.Event()

    async def stuck(request: web.Request) -> web.Response:
        await done.wait()
        return web.json_response({})

    app.router.add_route("PATCH", "/api/v1/namespaces/default/pods/m", stuck)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    client = await KubeClient.at(f"http://127.0.0.1:{port}", timeout=30.0)
    try:
        fenced = FencedClient(client, check=lambda: 0.5)
        started = time.monotonic()
        with pytest.raises(Unavailable):
            await asyncio.wait_for(
                fenced.patch(PODS, "m", {"metadata": {"labels": {"a": "b"}}}, namespace="default"), 5
            )
        assert time.monotonic() - started < 2.0
    finally:
        done.set()
        await client.close()
        await runner.cleanup()


async def test_a_holder_of_a_lease_made_again_counts_on_above_what_was_seen(
    kube: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = Elector(kube, config("a")), Elector(kube, config("b"))
    assert await a.try_acquire()
    await kube.delete(LEASES, "lock", namespace="default")  # by hand: the count restarts
    assert await b.try_acquire()
    assert b.transitions == 0
    assert not await a.advance(7)  # a no longer holds it (its view is of the deleted Lease)
    assert await b.advance(7)
    assert b.transitions == 7
    lease = await kube.get(LEASES, "lock", namespace="default")
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("b", 7)
    assert not await b.advance(3)  # never lowered
    assert b.transitions == 7
