"""Events folded by count, and Lease get-or-create/renew, against the in-memory API server."""

from __future__ import annotations

import asyncio
import socket

import pytest

from tests.fixtures.polling import eventually
from wlmvk.core.errors import NotFound
from wlmvk.kube import leases
from wlmvk.kube.bodies import EVENTS, LEASES, PODS, owner_reference
from wlmvk.kube.client import KubeClient
from wlmvk.kube.events import NORMAL, WARNING, EventPoster, EventQueue

pytestmark = pytest.mark.apiserver(controllers=False)


async def test_repeated_events_fold_into_one_with_a_count(kube: KubeClient) -> None:
    pod = await kube.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "e"},
            "spec": {"containers": [{"name": "c"}]},
        },
        namespace="default",
    )
    poster = EventPoster(kube, component="test", host="h")
    for _ in range(3):
        await poster.post(pod, type=WARNING, reason="SubmitFailed", message="red-box down")
    await poster.post(pod, type=WARNING, reason="Other", message="x")
    events = (await kube.list(EVENTS, namespace="default"))["items"]
    folded = [e for e in events if e["reason"] == "SubmitFailed"]
    assert len(folded) == 1
    assert folded[0]["count"] == 3
    assert folded[0]["involvedObject"]["uid"] == pod["metadata"]["uid"]
    assert folded[0]["source"]["component"] == "test"
    assert [e["count"] for e in events if e["reason"] == "Other"] == [1]


async def test_event_deleted_meanwhile_is_created_again(kube: KubeClient) -> None:
    target = {"kind": "Pod", "metadata": {"name": "gone", "namespace": "default", "uid": "u1"}}
    poster = EventPoster(kube, component="test")
    await poster.post(target, type="Normal", reason="R", message="m")
    (event,) = (await kube.list(EVENTS, namespace="default"))["items"]
    await kube.delete(EVENTS, event["metadata"]["name"], namespace="default")
    await poster.post(target, type="Normal", reason="R", message="m")
    (again,) = (await kube.list(EVENTS, namespace="default"))["items"]
    assert again["count"] == 1
    assert again["reportingInstance"] == socket.gethostname()


async def test_lease_ensure_and_renew(kube: KubeClient) -> None:
    owner = owner_reference({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u-n1"}})
    created = await leases.ensure(kube, "n1", "kube-node-lease", holder="n1", duration=40, owner=owner)
    assert created["spec"]["leaseDurationSeconds"] == 40
    assert created["metadata"]["ownerReferences"][0]["name"] == "n1"
    again = await leases.ensure(kube, "n1", "kube-node-lease", holder="n1", duration=40)
    assert again["metadata"]["uid"] == created["metadata"]["uid"]
    await asyncio.sleep(0.01)
    renewed = await leases.renew(kube, "n1", "kube-node-lease", holder="n1", duration=40)
    assert renewed["spec"]["renewTime"] > created["spec"]["renewTime"]
    await leases.delete(kube, "n1", "kube-node-lease")
    with pytest.raises(NotFound):
        await kube.get(LEASES, "n1", namespace="kube-node-lease")
    await leases.delete(kube, "n1", "kube-node-lease")


async def test_event_queue_sends_in_the_background_and_drops_when_full(kube: KubeClient) -> None:
    pod = await kube.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "q"},
            "spec": {"containers": [{"name": "c"}]},
        },
        namespace="default",
    )
    queue = EventQueue(EventPoster(kube, component="test", host="h"), size=3, senders=1)
    for index in range(5):  # nothing sends yet: two of five find the queue full
        queue.record(pod, type=NORMAL, reason=f"Step{index}", message=f"step {index}")
    assert queue.dropped == 2
    sender = asyncio.create_task(queue.run())
    try:

        async def reasons() -> list[str]:
            items = (await kube.list(EVENTS, namespace="default"))["items"]
            return sorted(e["reason"] for e in items if e["involvedObject"]["name"] == "q")

        async def all_three() -> bool:
            return len(await reasons()) == 3

        await eventually(all_three, timeout=5, every=0.05)
        assert await reasons() == ["Step0", "Step1", "Step2"]
    finally:
        sender.cancel()
