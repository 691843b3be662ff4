"""Pods a Slurm job cannot run: each fails at once, with a reason, a message and a Warning Event.

The kubelet runs against the in-memory API server and a fake red-box. Every
case is a pod bound to one of the kubelet's virtual nodes; the pod must end
``Failed`` with the CamelCase ``status.reason`` that says why, a message a
person can act on, a ``Warning`` Event of that reason about the pod, and no
job in Slurm. (The in-memory API server, like the kubelet, accepts some
pods a real API server would refuse, e.g. a negative quantity: the kubelet
must not trust the API server's validation.)
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.unit.kubelet.fakebackend import FakeBackend
from tests.unit.kubelet.test_kubelet_fake_backend import eventually, get_pod, pod_body
from wlmvk.core import containerjob, names
from wlmvk.core.jobs import ContainerJobSpec, JobId, PartitionResources
from wlmvk.kube.bodies import EVENTS, NODES, PODS, Body
from wlmvk.kube.client import KubeClient

NODE = "slurm-test-debug"
BATCH = "#!/bin/sh\necho hi\n"


class CountingBackend(FakeBackend):
    """The fake red-box, also counting container-job submissions."""

    async def submit_container(self, spec: ContainerJobSpec) -> JobId:
        self._enter("submit_container")
        self._next += 1
        return JobId(self._next)


@pytest.fixture
def fake() -> CountingBackend:
    return CountingBackend()


def _container(**fields: Any) -> Body:
    return {"name": "main", "image": "busybox", "command": ["echo", "hi"], **fields}


def _with(**container: Any) -> Body:
    return {"containers": [_container(**container)]}


def _resources(**limits: Any) -> Body:
    return _with(resources={"limits": limits})


def _volume(name: str, source: Body) -> Body:
    return {"volumes": [{"name": name, **source}]}


def _annotated(key: str, value: str) -> Body:
    return {"metadata": {"annotations": {key: value}}}


# id -> (changes to the pod: "spec" keys replace spec fields, "metadata" merges, expected reason,
#        words the message must contain)
CASES: dict[str, tuple[Body, str, str]] = {
    "two-containers": (
        {"spec": {"containers": [_container(), _container(name="sidecar")]}},
        "UnsupportedContainers",
        "this pod has 2",
    ),
    "init-container": (
        {"spec": {"initContainers": [_container(name="init")]}},
        "UnsupportedInitContainers",
        "init containers",
    ),
    "ports": ({"spec": _with(ports=[{"containerPort": 80}])}, "UnsupportedPorts", "ports"),
    "env-from": (
        {"spec": _with(envFrom=[{"secretRef": {"name": "creds"}}])},
        "UnsupportedEnv",
        "envFrom",
    ),
    "env-from-secret-key": (
        {"spec": _with(env=[{"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}])},
        "UnsupportedEnv",
        "PW takes its value from secretKeyRef",
    ),
    "env-name-not-for-a-shell": (
        {"spec": _with(env=[{"name": "A-B", "value": "1"}])},
        "UnsupportedEnv",
        "'A-B'",
    ),
    "hostPath-volume": (
        {"spec": _volume("data", {"hostPath": {"path": "/data"}})},
        "UnsupportedVolume",
        "volume 'data' (hostPath)",
    ),
    "pvc-volume": (
        {"spec": _volume("claim", {"persistentVolumeClaim": {"claimName": "c"}})},
        "UnsupportedVolume",
        "volume 'claim' (persistentVolumeClaim)",
    ),
    "secret-volume": (
        {"spec": _volume("creds", {"secret": {"secretName": "s"}})},
        "UnsupportedVolume",
        "volume 'creds' (secret)",
    ),
    "configMap-volume": (
        {"spec": _volume("conf", {"configMap": {"name": "c"}})},
        "UnsupportedVolume",
        "volume 'conf' (configMap)",
    ),
    "cpu-not-a-quantity": ({"spec": _resources(cpu="lots")}, "InvalidResources", "'lots'"),
    "memory-not-a-quantity": ({"spec": _resources(memory="1.5.5Gi")}, "InvalidResources", "'1.5.5Gi'"),
    "memory-bad-suffix": ({"spec": _resources(memory="4GB")}, "InvalidResources", "'4GB'"),
    "gpu-not-a-count": (
        {"spec": _resources(**{names.GPU_RESOURCE: "two"})},
        "InvalidResources",
        "'two'",
    ),
    "negative-cpu": ({"spec": _resources(cpu="-2")}, "InvalidResources", "cpu"),
    "negative-memory": ({"spec": _resources(memory="-1Gi")}, "InvalidResources", "memory"),
    "negative-request": (
        {"spec": _with(resources={"requests": {"cpu": "-500m"}})},
        "InvalidResources",
        "cpu",
    ),
    "request-not-a-quantity-behind-a-good-limit": (
        {"spec": _with(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "one"}})},
        "InvalidResources",
        "resources.requests.cpu",
    ),
    "deadline-not-a-number": (
        {"spec": {"activeDeadlineSeconds": "soon"}},
        "InvalidResources",
        "activeDeadlineSeconds",
    ),
    "deadline-negative": (
        {"spec": {"activeDeadlineSeconds": -5}},
        "InvalidResources",
        "activeDeadlineSeconds",
    ),
    "deadline-zero": ({"spec": {"activeDeadlineSeconds": 0}}, "InvalidResources", "activeDeadlineSeconds"),
    "deadline-boolean": (
        {"spec": {"activeDeadlineSeconds": True}},
        "InvalidResources",
        "activeDeadlineSeconds",
    ),
    "empty-batch-annotation": (
        _annotated(names.ANNOTATION_BATCH, ""),
        "EmptyBatchScript",
        names.ANNOTATION_BATCH,
    ),
    "blank-batch-annotation": (
        _annotated(names.ANNOTATION_BATCH, "  \n\t\n"),
        "EmptyBatchScript",
        names.ANNOTATION_BATCH,
    ),
    "container-job-not-json": (
        _annotated(names.ANNOTATION_CONTAINER_JOB, "{image: lolcow"),
        "InvalidContainerJob",
        "not JSON",
    ),
    "container-job-without-image": (
        _annotated(names.ANNOTATION_CONTAINER_JOB, '{"image": "", "resources": {}}'),
        "InvalidContainerJob",
        "non-empty image",
    ),
    "container-job-negative-nodes": (
        _annotated(
            names.ANNOTATION_CONTAINER_JOB, '{"image": "docker://alpine", "resources": {"nodes": -1}}'
        ),
        "InvalidContainerJob",
        "resources.nodes",
    ),
    "no-command-without-container-runtime": (
        {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
        "NoCommand",
        "needs a command",
    ),
}


def bad_pod(name: str, changes: Body) -> Body:
    body = pod_body(name)
    changes = copy.deepcopy(changes)
    body["spec"].update(changes.get("spec") or {})
    body["metadata"].update(changes.get("metadata") or {})
    return body


async def warnings_about(kube: KubeClient, name: str) -> list[Body]:
    events = await kube.list(EVENTS, namespace="default")
    return [
        e
        for e in events["items"]
        if e["involvedObject"]["name"] == name and e["involvedObject"]["kind"] == "Pod"
    ]


async def failed_with_event(kube: KubeClient, name: str, reason: str) -> tuple[Body, Body]:
    """The Failed pod and its Warning Event of ``reason`` (waiting for both)."""

    async def failed() -> Body | None:
        pod = await get_pod(kube, name)
        return pod if pod.get("status", {}).get("phase") == "Failed" else None

    pod = await eventually(failed)

    async def event() -> Body | None:
        return next((e for e in await warnings_about(kube, name) if e["reason"] == reason), None)

    found = await eventually(event)
    return pod, found


def assert_reported(pod: Body, event: Body, reason: str, words: str) -> None:
    status = pod["status"]
    assert status["reason"] == reason, status
    assert words in status["message"]
    assert status["message"][0].isalpha()
    assert "Traceback" not in status["message"]
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["reason"], terminated["message"]) == (reason, status["message"])
    assert event["type"] == "Warning"
    assert event["message"] == status["message"]
    assert event["involvedObject"]["uid"] == pod["metadata"]["uid"]
    assert event["source"]["component"]


@pytest.mark.parametrize(("changes", "reason", "words"), list(CASES.values()), ids=list(CASES))
async def test_a_pod_a_slurm_job_cannot_run_fails_with_reason_message_and_event(
    apiserver: RunningApiServer,
    kube: KubeClient,
    kubelet_factory: StartKubelet,
    fake: CountingBackend,
    changes: Body,
    reason: str,
    words: str,
) -> None:
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=fake)
    await kube.create(PODS, bad_pod("bad", changes), namespace="default")
    pod, event = await failed_with_event(kube, "bad", reason)
    assert_reported(pod, event, reason, words)
    await asyncio.sleep(0.6)  # a status tick later: still failed, nothing submitted, reported once
    assert fake.calls["submit"] == fake.calls["submit_container"] == 0
    assert fake.jobs == {}
    again = await get_pod(kube, "bad")
    assert again["status"]["phase"] == "Failed"
    assert names.ANNOTATION_JOB_ID not in (again["metadata"].get("annotations") or {})
    warnings = [e for e in await warnings_about(kube, "bad") if e["type"] == "Warning"]
    assert [(e["reason"], e.get("count", 1)) for e in warnings] == [(reason, 1)]


async def test_the_same_pod_fixed_runs(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: CountingBackend
) -> None:
    """The matrix's base pod is a good one: only the change in each case makes it fail."""
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=fake)
    await kube.create(PODS, bad_pod("good", {}), namespace="default")
    batch = bad_pod("good-batch", _annotated(names.ANNOTATION_BATCH, BATCH))
    await kube.create(PODS, batch, namespace="default")
    request = containerjob.encode(ContainerJobSpec(image="docker://alpine"))
    await kube.create(
        PODS,
        bad_pod("good-container", _annotated(names.ANNOTATION_CONTAINER_JOB, request)),
        namespace="default",
    )

    async def submitted() -> bool:
        return len(fake.jobs) == 2 and fake.calls["submit_container"] == 1

    await eventually(submitted)


async def test_a_pod_on_a_vanished_partition_fails_with_reason_and_event(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: CountingBackend
) -> None:
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=fake, discovery_interval=0.2)
    del fake.partition_table["long"]

    async def dropped() -> bool:
        listed = await kube.list(NODES)
        return "slurm-test-long" not in {n["metadata"]["name"] for n in listed["items"]}

    await eventually(dropped)
    await kube.create(PODS, pod_body("late", node="slurm-test-long"), namespace="default")
    pod, event = await failed_with_event(kube, "late", "PartitionGone")
    assert_reported(pod, event, "PartitionGone", "slurm-test-long")
    assert fake.calls["submit"] == 0


async def test_a_pod_on_a_node_whose_partition_does_not_exist_fails_with_reason_and_event(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: CountingBackend
) -> None:
    """A node of this cluster left from an earlier run, for a partition Slurm no longer has."""
    ghost = PartitionResources("ghost", 1, 2, 1000, 60)
    fake.partition_table["ghost"] = ghost
    first = await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=fake)
    await first.close()
    del fake.partition_table["ghost"]
    await kube.create(PODS, pod_body("haunted", node="slurm-test-ghost"), namespace="default")
    await kubelet_factory(kubeconfig=apiserver.kubeconfig, backend=fake)
    pod, event = await failed_with_event(kube, "haunted", "PartitionGone")
    assert_reported(pod, event, "PartitionGone", "slurm-test-ghost")
    assert fake.calls["submit"] == 0
