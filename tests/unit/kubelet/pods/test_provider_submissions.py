"""The provider's bound on submissions in flight (``--submissions``): one bound per red-box.

Each tenant user's red-box has its own bound: a red-box that does not answer holds back its own
tenant's pods, never another tenant's; pods of one tenant still wait for their red-box's bound.
"""

from __future__ import annotations

import asyncio

import structlog

from tests.unit.kubelet.fakebackend import PARTITIONS, FakeBackend
from tests.unit.kubelet.podbodies import pod
from tests.unit.kubelet.pods.test_tenant_routes import Watched
from wlmvk.kubelet.metrics import KubeletMetrics
from wlmvk.kubelet.node.directory import NodeDirectory
from wlmvk.kubelet.pods.provider import Created, SlurmProvider, Started
from wlmvk.kubelet.pods.records import PodRecord, slim
from wlmvk.kubelet.pods.states import Stage
from wlmvk.kubelet.pods.tenants import TenantRoutes

LOG = structlog.get_logger(__name__)


def tenant(name: str, namespace: str, user: str) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {
            "namespaces": [namespace],
            "user": user,
            "account": f"acct-{user}",
            "qos": {"default": "normal"},
        },
    }


def provider(red_boxes: dict[str, FakeBackend], *, submissions: int) -> SlurmProvider:
    directory = NodeDirectory("vm")
    directory.set("slurm-vm-debug", PARTITIONS["debug"])
    default = FakeBackend()
    bodies = [tenant("team-a", "ns-a", "alice"), tenant("team-b", "ns-b", "bob")]
    return SlurmProvider(
        backend=default,
        directory=directory,
        metrics=KubeletMetrics(dict),
        jobs_root="/jobs",
        submissions=submissions,
        lookup_grace=0.0,
        tenants=TenantRoutes(default=default, cluster="vm", red_boxes=red_boxes, watch=Watched(bodies)),
    )


def record(namespace: str, name: str) -> PodRecord:
    body = pod(metadata={"namespace": namespace, "name": name, "uid": f"uid-{namespace}-{name}"})
    return PodRecord(uid=f"uid-{namespace}-{name}", pod=slim(body), stage=Stage.NEW)


async def test_a_red_box_that_does_not_answer_holds_back_only_its_own_tenants_pods() -> None:
    alice, bob = FakeBackend(), FakeBackend()
    alice.submit_gate = asyncio.Event()  # alice's red-box takes the submission and does not answer
    slurm = provider({"alice": alice, "bob": bob}, submissions=1)
    stuck = asyncio.create_task(slurm.create(record("ns-a", "a1"), LOG))
    await asyncio.sleep(0.05)
    assert alice.calls["submit"] == 1
    assert not stuck.done()

    outcome = await asyncio.wait_for(slurm.create(record("ns-b", "b1"), LOG), timeout=5)

    assert isinstance(outcome, Started)
    assert outcome.message == f"Submitted Slurm job {outcome.job_id} to partition debug as user bob"
    assert (alice.calls["submit"], bob.calls["submit"]) == (1, 1)
    alice.submit_gate.set()
    assert isinstance(await stuck, Started)


async def test_a_tenants_pods_wait_for_its_own_red_boxs_bound() -> None:
    alice = FakeBackend()
    alice.submit_gate = asyncio.Event()
    slurm = provider({"alice": alice, "bob": FakeBackend()}, submissions=2)
    creating: list[asyncio.Task[Created]] = [
        asyncio.create_task(slurm.create(record("ns-a", f"a{i}"), LOG)) for i in range(3)
    ]
    await asyncio.sleep(0.05)

    assert alice.calls["submit"] == 2  # the third waits for one of the two in flight
    alice.submit_gate.set()
    outcomes = await asyncio.gather(*creating)
    assert [type(o) for o in outcomes] == [Started, Started, Started]
    assert alice.calls["submit"] == 3
