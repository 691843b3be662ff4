"""A Lease holder's fence (kube.leader.Elector.check, kube.fencing.FencedClient) on the in-memory API server.

A frozen holder is the monotonic clock moving on while the process does not run: the tests
move ``kube.leader``'s clock (only its own) forward as SIGSTOP would.
"""

from __future__ import annotations

import time

import pytest

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
    monkeypatch.setattr(leader, "monotonic", lambda: time.monotonic() + seconds)


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
