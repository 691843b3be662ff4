"""The kubelet's SlurmTenant status writer on the in-memory API server (kubelet.tenantstatus).

Two clusters' writers share one tenant: each writes its own entry, neither overwrites the other's;
a tenant is asked about once per interval however often rounds run, and again when its spec
changes; a user without a red-box here is named. With the default red-box's look
(ObserveAssociations), one question per round answers every tenant user; a user it cannot tell
of, or every user when it cannot look, is asked of its own red-box.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from tests.fixtures.apiserver import RunningApiServer
from wlmvk.core.errors import Unavailable, Unsupported, WlmvkError
from wlmvk.core.jobs import WorkloadInfo
from wlmvk.kube.bodies import Body, Resource
from wlmvk.kube.client import KubeClient
from wlmvk.kube.tenants import SLURMTENANTS, TenantWatch
from wlmvk.kubelet.tenantstatus import TenantStatusWriter
from wlmvk.slurm.tenantstatus import Association, AssociationLook, Associations
from wlmvk_dev import crdmanifests as crds

pytestmark = pytest.mark.apiserver(controllers=False)

CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)


class Slurm:
    """What a red-box answers of its user: alice in account physics with QoS normal; every call counted."""

    def __init__(self, cluster: str, *, down: bool = False) -> None:
        self.cluster, self.down, self.asked, self.answered = cluster, down, 0, 0

    async def info(self) -> WorkloadInfo:
        if self.down:
            raise Unavailable("WorkloadInfo: red-box socket /run/alice.sock does not exist")
        self.answered += 1
        return WorkloadInfo(name="slurm", version="22.05.8", uid=1000, cluster_name=self.cluster)

    async def associations(self, user: str) -> Associations:
        self.asked += 1
        if self.down:
            raise Unavailable("Associations: red-box socket /run/alice.sock does not exist")
        rows = (Association("physics", "", ("normal",), "normal"),)
        return Associations(user, self.cluster, rows, frozenset({"normal"}))


def tenant(name: str, account: str, *, user: str = "alice") -> Body:
    return {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmTenant",
        "metadata": {"name": name},
        "spec": {"namespaces": [name], "user": user, "account": account, "qos": {"default": "normal"}},
    }


@pytest.fixture
async def kube(apiserver: RunningApiServer) -> AsyncIterator[KubeClient]:
    client = await KubeClient.connect(str(apiserver.kubeconfig))
    await client.create(CRDS, crds.slurmtenant())
    yield client
    await client.close()


async def watching(kube: KubeClient) -> tuple[TenantWatch, asyncio.Task[None]]:
    watch = TenantWatch(client=kube)
    task = asyncio.create_task(watch.run())
    await asyncio.wait_for(watch.synced.wait(), 10)
    return watch, task


async def settled(watch: TenantWatch, names: set[str], generation: int = 1) -> None:
    async def seen() -> None:
        while {n for n, b in watch.bodies.items() if b["metadata"].get("generation") == generation} < names:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(seen(), 10)


def conditions(entry: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in entry["conditions"]}


async def test_two_clusters_write_their_own_entries_of_one_tenant(kube: KubeClient) -> None:
    await kube.create(SLURMTENANTS, tenant("team-a", "physcs"))
    watch, task = await watching(kube)
    try:
        await settled(watch, {"team-a"})
        hpc, gpu = Slurm("hpc"), Slurm("gpu-slurm")
        now = [1000.0]
        writers = [
            TenantStatusWriter(
                client=kube, watch=watch, cluster=c, red_boxes={"alice": s}, clock=lambda: now[0]
            )
            for c, s in (("hpc", hpc), ("gpu", gpu))
        ]
        await asyncio.gather(*(w.round() for w in writers))  # at once: one of them meets a conflict
        body = await kube.get(SLURMTENANTS, "team-a")
        entries = {e["cluster"]: e for e in body["status"]["clusters"]}
        assert sorted(entries) == ["gpu", "hpc"]
        why = "user alice has no association with account physcs (has: physics)"
        for entry in entries.values():
            assert conditions(entry)["AccountKnown"] == ("False", "AccountUnknown", why)
            assert entry["observedGeneration"] == 1
        (ready,) = body["status"]["conditions"]
        assert (ready["status"], ready["reason"], ready["message"]) == (
            "False",
            "AccountUnknown",
            f"gpu: {why}; hpc: {why}",
        )
        assert (hpc.asked, gpu.asked) == (1, 1)

        now[0] += 59
        await asyncio.gather(*(w.round() for w in writers))
        assert (hpc.asked, gpu.asked) == (1, 1), "checked again only after the interval"
        now[0] += 1
        await asyncio.gather(*(w.round() for w in writers))
        assert (hpc.asked, gpu.asked) == (2, 2)

        await kube.patch(SLURMTENANTS, "team-a", {"spec": {"account": "physics"}})
        await settled(watch, {"team-a"}, generation=2)
        await asyncio.gather(*(w.round() for w in writers))
        assert (hpc.asked, gpu.asked) == (2, 2), "a change waits CHANGE_FLOOR (5 s) after the last check"
        now[0] += 5
        await asyncio.gather(*(w.round() for w in writers))
        assert (hpc.asked, gpu.asked) == (3, 3)
        body = await kube.get(SLURMTENANTS, "team-a")
        (ready,) = body["status"]["conditions"]
        assert (ready["status"], ready["reason"], body["status"]["observedGeneration"]) == (
            "True",
            "Known",
            2,
        )
        assert [e["observedGeneration"] for e in body["status"]["clusters"]] == [2, 2]
    finally:
        task.cancel()


async def test_a_user_without_red_box_a_red_box_down_and_an_invalid_spec(kube: KubeClient) -> None:
    await kube.create(SLURMTENANTS, tenant("team-b", "physics", user="bob"))
    await kube.create(SLURMTENANTS, tenant("team-a", "physics"))
    await kube.create(SLURMTENANTS, tenant("team-r", "physics", user="root"))
    watch, task = await watching(kube)
    try:
        await settled(watch, {"team-a", "team-b", "team-r"})
        down = Slurm("hpc", down=True)
        await TenantStatusWriter(client=kube, watch=watch, cluster="hpc", red_boxes={"alice": down}).round()
        (b,) = (await kube.get(SLURMTENANTS, "team-b"))["status"]["clusters"]
        why = "user bob has no red-box on this kubelet (the site's --red-box bob=SOCKET)"
        assert conditions(b)["Ready"] == ("False", "NoRedBox", why)
        (a,) = (await kube.get(SLURMTENANTS, "team-a"))["status"]["clusters"]
        assert conditions(a)["Ready"] == (
            "Unknown",
            "CheckFailed",
            "Associations: red-box socket /run/alice.sock does not exist",
        )
        (r,) = (await kube.get(SLURMTENANTS, "team-r"))["status"]["clusters"]
        invalid = "SlurmTenant team-r: spec.user must name a Slurm user other than root"
        assert conditions(r)["Ready"] == ("False", "InvalidSpec", invalid)
        assert conditions(r)["UserKnown"] == ("Unknown", "InvalidSpec", invalid)
        assert down.asked == 1, "one question for alice's tenant; none for bob's or root's"
    finally:
        task.cancel()


PHYSICS = (Association("physics", "", ("normal",), "normal"),)


class Observer:
    """The default red-box's look: ``shown`` users in account physics as ``own`` sees them; or a
    failure; every question kept."""

    def __init__(self, own: str, shown: set[str], *, fails: WlmvkError | None = None) -> None:
        self.own, self.shown, self.fails = own, shown, fails
        self.asked: list[list[str]] = []

    async def observe_associations(self, users: Sequence[str]) -> AssociationLook:
        self.asked.append(list(users))
        if self.fails is not None:
            raise self.fails
        return AssociationLook(
            "hpc", self.own, {u: PHYSICS for u in users if u in self.shown}, frozenset({"normal"})
        )


async def readiness(kube: KubeClient, *names: str) -> dict[str, tuple[str, str, str]]:
    found = {}
    for name in names:
        (entry,) = (await kube.get(SLURMTENANTS, name))["status"]["clusters"]
        found[name] = conditions(entry)["Ready"]
    return found


async def test_one_look_answers_every_tenant_user_and_a_typo_shows_on_its_own_tenant(
    kube: KubeClient,
) -> None:
    users = [f"user{i}" for i in range(1, 7)]
    for i, user in enumerate(users, 1):
        await kube.create(SLURMTENANTS, tenant(f"team-{i}", "physcs" if i == 3 else "physics", user=user))
    await kube.create(SLURMTENANTS, tenant("team-x", "physics", user="nobox"))
    watch, task = await watching(kube)
    try:
        await settled(watch, {f"team-{i}" for i in range(1, 7)} | {"team-x"})
        boxes = {user: Slurm("hpc") for user in users}
        observer = Observer("default", set(users) - {"user6"})  # user6: a typo'd user Slurm does not know
        writer = TenantStatusWriter(
            client=kube, watch=watch, cluster="hpc", red_boxes=boxes, observer=observer
        )
        await writer.round()
        assert observer.asked == [users], "one look, for the users with a red-box here"
        assert [box.asked for box in boxes.values()] == [0] * 6
        assert [box.answered for box in boxes.values()] == [1] * 6, "each asked only whether it answers"
        ready = await readiness(kube, *(f"team-{i}" for i in range(1, 7)), "team-x")
        known = ("True", "Known", "")
        assert ready == {
            "team-1": known,
            "team-2": known,
            "team-3": (
                "False",
                "AccountUnknown",
                "user user3 has no association with account physcs (has: physics)",
            ),
            "team-4": known,
            "team-5": known,
            "team-6": (
                "False",
                "UserUnknown",
                "Slurm has no association of user user6 on cluster hpc;"
                " user user6 has no association with account physics (has: none)",
            ),
            "team-x": (
                "False",
                "NoRedBox",
                "user nobox has no red-box on this kubelet (the site's --red-box nobox=SOCKET)",
            ),
        }
    finally:
        task.cancel()


async def alice_and_bob(kube: KubeClient, observer: Observer) -> tuple[int, int, int]:
    """One round over alice's and bob's tenants (both known to Slurm, both Ready after it):
    (looks, questions to alice's red-box, to bob's)."""
    await kube.create(SLURMTENANTS, tenant("team-a", "physics"))
    await kube.create(SLURMTENANTS, tenant("team-b", "physics", user="bob"))
    watch, task = await watching(kube)
    try:
        await settled(watch, {"team-a", "team-b"})
        alice, bob = Slurm("hpc"), Slurm("hpc")
        writer = TenantStatusWriter(
            client=kube, watch=watch, cluster="hpc", red_boxes={"alice": alice, "bob": bob}, observer=observer
        )
        await writer.round()
        assert await readiness(kube, "team-a", "team-b") == {
            "team-a": ("True", "Known", ""),
            "team-b": ("True", "Known", ""),
        }
        return len(observer.asked), alice.asked, bob.asked
    finally:
        task.cancel()


async def test_a_user_the_look_cannot_tell_of_is_asked_of_its_own_red_box(kube: KubeClient) -> None:
    # PrivateData=users: alice sees her own associations only.
    assert await alice_and_bob(kube, Observer("alice", {"alice"})) == (1, 0, 1)


@pytest.mark.parametrize("fails", [Unsupported("ObserveAssociations: UNIMPLEMENTED"), Unavailable("gone")])
async def test_without_a_look_each_tenant_users_red_box_is_asked(kube: KubeClient, fails: WlmvkError) -> None:
    assert await alice_and_bob(kube, Observer("default", set(), fails=fails)) == (1, 1, 1)


async def test_a_tenant_the_look_knows_whose_red_box_is_down_reads_unknown(kube: KubeClient) -> None:
    await kube.create(SLURMTENANTS, tenant("team-a", "physics"))
    await kube.create(SLURMTENANTS, tenant("team-b", "physics", user="bob"))
    watch, task = await watching(kube)
    try:
        await settled(watch, {"team-a", "team-b"})
        alice, bob = Slurm("hpc"), Slurm("hpc", down=True)
        observer = Observer("default", {"alice", "bob"})
        writer = TenantStatusWriter(
            client=kube, watch=watch, cluster="hpc", red_boxes={"alice": alice, "bob": bob}, observer=observer
        )
        await writer.round()
        assert await readiness(kube, "team-a", "team-b") == {
            "team-a": ("True", "Known", ""),
            "team-b": (
                "Unknown",
                "CheckFailed",
                "WorkloadInfo: red-box socket /run/alice.sock does not exist",
            ),
        }
        assert (len(observer.asked), alice.asked, bob.asked) == (1, 0, 0)
    finally:
        task.cancel()
