"""New pods' submissions are not bounded by the pod workers: up to ``--submissions`` per red-box.

A new pod's sync (its submission, then its annotation) goes off the worker that took it, so a
red-box's client sees every pod waiting for it at once and sends them together, however few the
workers. The pod's key stays taken until that sync ends: a pod changed meanwhile is not synced
twice, and its job is submitted once.
"""

from __future__ import annotations

import asyncio

from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.unit.kubelet.fakebackend import FakeBackend
from tests.unit.kubelet.test_kubelet_fake_backend import eventually, get_pod, pod_body
from wlmvk.core import names
from wlmvk.kube.bodies import PODS
from wlmvk.kube.client import KubeClient


async def test_a_red_box_gets_its_submissions_bound_in_flight_with_fewer_workers(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet
) -> None:
    """Before: 2 workers, so 2 submissions in flight, whatever ``--submissions`` said."""
    fake = FakeBackend()
    fake.submit_gate = asyncio.Event()  # red-box takes the submissions and answers none yet
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=fake, workers=2, submissions=6)
    for i in range(8):
        await kube.create(PODS, pod_body(f"p{i}"), namespace="default")

    async def in_flight() -> bool:
        return fake.calls["submit"] == 6  # the bound: the other two wait for it, on the workers

    await eventually(in_flight)
    await asyncio.sleep(0.3)
    assert fake.calls["submit"] == 6
    # A pod changed while its submission is on its way is not synced a second time meanwhile.
    await kube.patch(PODS, "p0", {"metadata": {"labels": {"changed": "yes"}}}, namespace="default")
    await asyncio.sleep(0.3)
    assert fake.calls["submit"] == 6
    fake.submit_gate.set()

    async def annotated() -> bool:
        pods = [await get_pod(kube, f"p{i}") for i in range(8)]
        return all(p["metadata"].get("annotations", {}).get(names.ANNOTATION_JOB_ID) for p in pods)

    await eventually(annotated)
    assert fake.calls["submit"] == 8
    assert sorted(fake.submitted.values()) == [1] * 8
    assert len(fake.jobs) == 8
