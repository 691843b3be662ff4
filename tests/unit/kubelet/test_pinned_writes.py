"""The kubelet's pod writes pinned to the pod's uid: a late write for a pod that was deleted and
recreated under the same name is refused and lands on nothing (in-memory API server, fake red-box).
"""

from __future__ import annotations

import asyncio

import pytest

from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.unit.kubelet.fakebackend import FakeBackend
from tests.unit.kubelet.test_kubelet_fake_backend import eventually, get_pod, pod_body, start
from wlmvk.core import names
from wlmvk.core.jobs import JobId, JobSpec, JobStatus
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient


class FirstHeld(FakeBackend):
    """The first submission waits for ``release``: its answer comes late; the others go at once."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.held: str | None = None

    async def submit(self, spec: JobSpec) -> JobId:
        if self.held is None:
            self.held = spec.idempotency_key
        if spec.idempotency_key == self.held:
            self.calls["held"] += 1
            await self.release.wait()
        return await super().submit(spec)


@pytest.mark.kube_any(subject="a merge patch naming another uid is refused (kube-apiserver: 422 immutable)")
async def test_a_late_annotation_does_not_land_on_a_pod_recreated_under_the_name(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet
) -> None:
    fake = FirstHeld()
    await start(kubelet_factory, apiserver, fake)
    first = await kube.create(PODS, pod_body("same"), namespace="default")
    await eventually(lambda: _true(fake.calls["held"] == 1))
    # The first pod goes for good (as kubectl delete --force) and another takes its name.
    await kube.delete(PODS, "same", namespace="default", grace_period_seconds=0)
    second = await eventually(lambda: kube.create(PODS, pod_body("same"), namespace="default"))
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    own = await eventually(lambda: _job(kube))
    assert fake.jobs[JobId(int(own))].idempotency_key == second["metadata"]["uid"]

    fake.release.set()  # the first pod's submission answers now: job id for a pod that is gone
    late = await eventually(lambda: _true(len(fake.jobs) == 2))
    assert late
    first_job = fake.job_of(first["metadata"]["uid"])
    await eventually(lambda: _true(fake.jobs[first_job].status is JobStatus.CANCELLED))  # not orphaned
    await asyncio.sleep(1.0)  # time for a late write to land, were it going to
    pod = await get_pod(kube, "same")
    assert pod["metadata"]["uid"] == second["metadata"]["uid"]
    assert pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID] == own
    assert pod.get("status", {}).get("reason") != "ForeignJob"
    assert pod["status"]["phase"] == "Pending"


async def _job(kube: KubeClient) -> str:
    pod = await get_pod(kube, "same")
    job = pod["metadata"].get("annotations", {}).get(names.ANNOTATION_JOB_ID)
    assert job
    return str(job)


async def _true(value: bool) -> bool:
    assert value
    return value
