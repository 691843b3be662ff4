"""The controller's mirror: what each watch event does to it and to the work queue (no I/O)."""

from __future__ import annotations

from typing import Any

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
    return set(c._queued)


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


def test_a_pod_event_queues_its_owner() -> None:
    c = controller()
    c._apply("Pod", "MODIFIED", pod("a-job", "a", "5"))
    assert queued(c) == {("SlurmJob", "ns", "a")}
    assert [p["metadata"]["name"] for p in c.mirror.owned("u-a")] == ["a-job"]
    c._apply("Pod", "DELETED", pod("a-job", "a", "6"))
    assert c.mirror.owned("u-a") == []


def test_a_node_change_queues_unfinished_resources_only() -> None:
    c = controller()
    c._replace("SlurmJob", [job("done", "1", "Succeeded"), job("waiting", "2", "Pending")])
    c._queued.clear()
    c._apply("Node", "MODIFIED", {"metadata": {"name": "slurm-x-debug"}})
    assert queued(c) == {("SlurmJob", "ns", "waiting")}


def test_a_relist_forgets_what_was_deleted_meanwhile() -> None:
    c = controller()
    c._replace("SlurmJob", [job("a", "1"), job("b", "2")])
    c._replace("SlurmJob", [job("b", "3")])
    assert list(c.mirror.jobs) == [("SlurmJob", "ns", "b")]
    assert c.mirror.jobs[("SlurmJob", "ns", "b")]["kind"] == "SlurmJob"
