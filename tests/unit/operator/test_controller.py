"""The controller's mirror: what each watch event does to it and to the work queue (no I/O)."""

from __future__ import annotations

import asyncio
from typing import Any

from wlmvk.core.errors import Unavailable
from wlmvk.kube.workqueue import WorkQueue
from wlmvk.operator.controller import Controller
from wlmvk.operator.settings import OperatorSettings


class NoClient:
    """The controller's client is not used by the mirror."""


def controller() -> Controller:
    return Controller(NoClient(), OperatorSettings())  # type: ignore[arg-type]


def job(name: str, rv: str, status: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "SlurmJob",
        "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": rv},
    }
    if status:
        body["status"] = {"status": status}
    return body


def pod(name: str, owner: str, rv: str) -> dict[str, Any]:
    ref = {"kind": "SlurmJob", "name": owner, "uid": f"u-{owner}", "controller": True}
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "ownerReferences": [ref]}}


def queued(c: Controller) -> set[tuple[str, str, str]]:
    return set(c._queue.waiting())


def test_a_stale_event_does_not_undo_a_newer_write() -> None:
    c = controller()
    c._apply("SlurmJob", "MODIFIED", job("a", "10", "Running"))
    c._apply("SlurmJob", "MODIFIED", job("a", "7", "Pending"))
    assert c.mirror.jobs[("SlurmJob", "ns", "a")]["status"]["status"] == "Running"


def test_a_recreated_resource_replaces_the_old_one() -> None:
    c = controller()
    c._apply("SlurmJob", "MODIFIED", job("a", "10", "Failed"))
    fresh = job("a", "3")
    fresh["metadata"]["uid"] = "u-new"
    c._apply("SlurmJob", "ADDED", fresh)
    assert c.mirror.jobs[("SlurmJob", "ns", "a")]["metadata"]["uid"] == "u-new"


async def test_pod_changes_queue_their_owner_once_after_the_batch_period() -> None:
    c = Controller(NoClient(), OperatorSettings(pod_batch_period=0.2))  # type: ignore[arg-type]
    c._apply("Pod", "ADDED", pod("a-job", "a", "5"))
    bound = pod("a-job", "a", "6")
    bound["spec"] = {"nodeName": "n1"}
    c._apply("Pod", "MODIFIED", bound)  # the binding, then the job id, within the period
    c._apply("Pod", "MODIFIED", pod("a-job", "a", "7"))
    assert queued(c) == set()
    assert [p["metadata"]["name"] for p in c.mirror.owned("u-a")] == ["a-job"]
    await asyncio.sleep(0.3)
    assert c._queue.waiting() == [("SlurmJob", "ns", "a")]


def test_the_echo_of_its_own_write_queues_nothing() -> None:
    c = controller()
    c.mirror.jobs[("SlurmJob", "ns", "a")] = job("a", "4", "Pending")
    c.mirror.pods[("ns", "a-job")] = pod("a-job", "a", "3")  # as the create answered
    c._apply("Pod", "ADDED", pod("a-job", "a", "3"))
    c._apply("SlurmJob", "MODIFIED", job("a", "4", "Pending"))
    assert queued(c) == set()
    c._apply("SlurmJob", "MODIFIED", job("a", "5", "Pending"))  # another writer's change
    assert queued(c) == {("SlurmJob", "ns", "a")}


async def test_a_pod_that_ended_or_was_deleted_queues_its_owner_at_once() -> None:
    c = Controller(NoClient(), OperatorSettings(pod_batch_period=60))  # type: ignore[arg-type]
    c._apply("Pod", "MODIFIED", pod("a-job", "a", "5"))
    assert queued(c) == set()
    done = pod("a-job", "a", "6")
    done["status"] = {"phase": "Succeeded"}
    c._apply("Pod", "MODIFIED", done)
    assert c._queue.waiting() == [("SlurmJob", "ns", "a")]
    c._queue = WorkQueue()
    c._apply("Pod", "DELETED", pod("b-job", "b", "6"))
    assert c._queue.waiting() == [("SlurmJob", "ns", "b")]
    assert c.mirror.owned("u-b") == []
    c._queue.close()


def test_a_node_change_queues_unfinished_resources_only() -> None:
    c = controller()
    c._replace("SlurmJob", [job("done", "1", "Succeeded"), job("waiting", "2", "Pending")])
    c._queue = WorkQueue()
    c._apply("Node", "MODIFIED", {"metadata": {"name": "slurm-x-debug"}})
    assert queued(c) == {("SlurmJob", "ns", "waiting")}


def test_a_relist_forgets_what_was_deleted_meanwhile() -> None:
    c = controller()
    c._replace("SlurmJob", [job("a", "1"), job("b", "2")])
    c._replace("SlurmJob", [job("b", "3")])
    assert list(c.mirror.jobs) == [("SlurmJob", "ns", "b")]
    assert c.mirror.jobs[("SlurmJob", "ns", "b")]["kind"] == "SlurmJob"


class Flaky:
    """An API server that is down until ``up`` is set: every write is Unavailable."""

    def __init__(self) -> None:
        self.up = False
        self.writes = 0

    async def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        self.writes += 1
        if not self.up:
            raise Unavailable("connection refused")
        return {**body, "metadata": {**body.get("metadata", {}), "resourceVersion": "99"}}

    async def patch_status(self, resource: Any, name: str, patch: dict[str, Any], **_: Any) -> dict[str, Any]:
        return await self._answer({**job(name, "1"), **patch})

    async def create(self, resource: Any, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        return await self._answer(body)

    async def patch(self, resource: Any, name: str, patch: dict[str, Any], **_: Any) -> dict[str, Any]:
        return await self._answer(patch)


async def test_a_failing_key_is_retried_with_growing_delays_and_forgotten_once_it_succeeds() -> None:
    client = Flaky()
    c = Controller(client, OperatorSettings())  # type: ignore[arg-type]
    c._queue = WorkQueue(base_delay=0.01, max_delay=1.0)
    key = ("SlurmJob", "ns", "a")
    c._replace("SlurmJob", [job("a", "1")])
    worker = asyncio.create_task(c._work())
    try:
        while c._queue.failures(key) < 3:
            await asyncio.sleep(0.005)
        client.up = True
        while c._queue.failures(key) != 0:
            await asyncio.sleep(0.005)
        assert c.mirror.jobs[key]["status"]["reason"] == "InvalidSpec"  # the spec-less job's verdict, written
    finally:
        worker.cancel()


class Slow:
    """An API server whose status writes take until ``release`` is set; counts those in flight."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.in_flight = 0
        self.most = 0

    async def patch_status(self, resource: Any, name: str, patch: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await self.release.wait()
        self.in_flight -= 1
        return {**job(name, "9"), **patch}


async def test_workers_reconcile_that_many_resources_at_once_each_by_one() -> None:
    client = Slow()
    c = Controller(client, OperatorSettings(workers=4))  # type: ignore[arg-type]
    c._replace("SlurmJob", [job(name, "1") for name in "abcdef"])  # spec-less: one status write each
    working = asyncio.create_task(c._working())

    async def until(check: Any) -> None:
        while not check():
            await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(until(lambda: client.in_flight == 4), 5)
        c._apply("SlurmJob", "MODIFIED", job("a", "2"))  # a's key again while a worker has it
        await asyncio.sleep(0.05)
        assert (client.in_flight, client.most) == (4, 4)
        client.release.set()
        await asyncio.wait_for(until(lambda: all("status" in body for body in c.mirror.jobs.values())), 5)
        assert client.most == 4
    finally:
        working.cancel()
