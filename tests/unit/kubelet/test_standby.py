"""A standby kubelet per cluster (kubelet.standby, ``--leader-elect``): the Lease's name, the flags,
the fenced backend, and a takeover of nodes and pods against the in-memory API server and a fake
red-box."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from tests.fixtures import polling
from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import TEST_SETTINGS, StartKubelet
from tests.unit.kubelet.fakebackend import FakeBackend
from tests.unit.kubelet.test_kubelet_fake_backend import NODE, get_pod, pod_body
from wlmvk.core import names
from wlmvk.core.errors import WlmvkError
from wlmvk.core.jobs import JobId, JobSpec
from wlmvk.core.tasks import stop
from wlmvk.kube.bodies import LEASES, NODES, PODS
from wlmvk.kube.client import KubeClient
from wlmvk.kube.leader import ElectionConfig, Fenced
from wlmvk.kubelet import flags, standby
from wlmvk.kubelet.app import Kubelet

LEADING = {"leader_elect": True, "leader_lease_duration": 3, "leader_renew_interval": 0.3,
           "leader_retry_interval": 0.1}  # fmt: skip


async def eventually(check: Any, timeout: float = 20.0) -> Any:
    return await polling.eventually(check, timeout=timeout, every=0.1, tolerate=(AssertionError, WlmvkError))


def test_the_cluster_lease_is_apart_from_the_node_leases() -> None:
    assert standby.lease_name("Big_Iron") == "slurm-big-iron.kubelet"
    assert standby.lease_name("c") != names.node_name("c", "kubelet")


def test_takeover_is_bounded_by_the_duration_and_two_looks() -> None:
    config = ElectionConfig("l", "n", "me", duration=15, renew_interval=5.0, retry_interval=2.0)
    assert standby.takeover_bound(config) == 19.0


def test_flags() -> None:
    parsed = flags.parse(["--leader-elect", "--leader-lease-duration", "20", "--leader-retry-interval", "1"])
    assert (parsed.leader_elect, parsed.leader_lease_duration, parsed.leader_renew_interval) == (
        True,
        20,
        5.0,
    )
    assert parsed.leader_retry_interval == 1.0
    assert not flags.parse([]).leader_elect


def test_a_renewal_slower_than_the_fence_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        flags.parse(["--leader-elect", "--leader-lease-duration", "6", "--leader-renew-interval", "4"])
    assert "--leader-renew-interval (4) must be above 0 and below --leader-lease-duration minus 2 s (4)" in (
        capsys.readouterr().err
    )


async def test_a_fenced_backend_changes_nothing_in_slurm_but_still_reads() -> None:
    fake = FakeBackend()
    job = await fake.submit(JobSpec(script="#!/bin/sh\n", partition="debug", idempotency_key="k"))

    def refuse() -> None:
        raise Fenced("not the holder")

    fenced = standby.FencedBackend(fake, check=refuse)
    with pytest.raises(Fenced):
        await fenced.submit(JobSpec(script="#!/bin/sh\n", partition="debug", idempotency_key="k2"))
    with pytest.raises(Fenced):
        await fenced.cancel(job)
    assert list(fake.jobs) == [job]
    assert fake.jobs[job].status.value == "PENDING"
    assert (await fenced.find("k")) is not None
    assert list(await fenced.states([job])) == [job]


async def _holder(kube: KubeClient) -> str:
    lease = await kube.get(LEASES, standby.lease_name("test"), namespace=names.NODE_LEASE_NAMESPACE)
    return str(lease["spec"]["holderIdentity"])


async def _job_of(kube: KubeClient, name: str) -> str:
    pod = await get_pod(kube, name)
    job = pod["metadata"].get("annotations", {}).get(names.ANNOTATION_JOB_ID)
    assert job
    return str(job)


async def test_the_standby_takes_over_nodes_and_pods_without_submitting_twice(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet
) -> None:
    fake = FakeBackend()
    active = await kubelet_factory(
        kubeconfig=apiserver.kubeconfig, backend=fake, agent_host="host-a", **LEADING
    )
    assert active.elector is not None
    assert await _holder(kube) == active.elector._config.identity
    await kube.create(PODS, pod_body("before"), namespace="default")
    await eventually(lambda: _job_of(kube, "before"))

    successor = Kubelet(
        replace(TEST_SETTINGS, kubeconfig=str(apiserver.kubeconfig), agent_host="host-b", **LEADING),
        backend=fake,
    )
    waiting = asyncio.ensure_future(successor.start())
    try:
        await _take_over(kube, fake, active, successor, waiting)
    finally:
        waiting.cancel()
        await successor.close()


async def _take_over(
    kube: KubeClient, fake: FakeBackend, active: Kubelet, successor: Kubelet, waiting: asyncio.Future[None]
) -> None:
    async def standing_by() -> bool:
        return successor.elector is not None and successor.elector._observed is not None

    await eventually(standing_by)
    assert not waiting.done()  # the standby serves nothing while the Lease is held
    assert successor.pods is None
    before = await _job_of(kube, "before")

    # The active one dies (its tasks end; nothing released, as after kill -9), with a pod created
    # after it and one whose job it submitted but never annotated.
    await stop(*active._tasks)
    active.lost_lease = True
    await kube.create(PODS, pod_body("during"), namespace="default")
    unannotated = await kube.create(PODS, pod_body("unannotated"), namespace="default")
    submitted = await fake.submit(
        JobSpec(script="#!/bin/sh\n", partition="debug", idempotency_key=unannotated["metadata"]["uid"])
    )
    await asyncio.wait_for(waiting, 30)

    assert successor.elector is not None
    assert await _holder(kube) == successor.elector._config.identity
    node = await kube.get(NODES, NODE)
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == successor.port
    assert node["metadata"]["labels"][names.LABEL_AGENT_HOST] == "host-b"
    assert await _job_of(kube, "before") == before
    assert await eventually(lambda: _job_of(kube, "unannotated")) == str(submitted)
    during = await eventually(lambda: _job_of(kube, "during"))
    uids = [(await get_pod(kube, name))["metadata"]["uid"] for name in ("before", "during", "unannotated")]
    assert fake.submitted == Counter(uids)  # one submission per pod, the successor's included
    fake.run(JobId(int(during)))
    fake.finish(JobId(int(during)))

    async def succeeded() -> bool:
        return bool((await get_pod(kube, "during"))["status"]["phase"] == "Succeeded")

    await eventually(succeeded)
