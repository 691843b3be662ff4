"""A plain pod's image where no Apptainer or Singularity runs it: the pod says so, and still runs.

The API server requires an image on every pod, so refusing pods whose image
cannot run would make plain pods unusable on a partition without a container
runtime. The kubelet runs the command on the compute node, as the module
``pods.translate`` documents, and makes that visible: a Warning Event
``ImageNotUsed`` and the condition ``wlm.sylabs.io/ImageUsed`` False with
reason ``NoContainerRuntime``, both naming the image and the partition.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.fixtures.apiserver import RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.unit.kubelet.fakebackend import FakeBackend
from tests.unit.kubelet.test_kubelet_fake_backend import eventually, get_pod, pod_body, start
from wlmvk.core import names
from wlmvk.core.jobs import JobId
from wlmvk.kube.bodies import EVENTS, PODS, Body
from wlmvk.kube.client import KubeClient
from wlmvk.kubelet.pods import status as pod_status
from wlmvk.kubelet.pods.translate import Target, unused_image

MESSAGE = (
    "image 'busybox' is not used: partition 'debug' has neither Apptainer nor Singularity,"
    " so the command runs on the compute node with the software installed there"
)


@pytest.fixture
def fake() -> FakeBackend:
    return FakeBackend()


def test_a_plain_pods_image_without_a_runtime_is_unused() -> None:
    assert unused_image(pod_body("p"), Target("debug")) == MESSAGE


def test_an_image_a_runtime_runs_or_a_scripted_pod_says_nothing() -> None:
    assert unused_image(pod_body("p"), Target("debug", container_runtime=True)) == ""
    batch = pod_body("p")
    batch["metadata"]["annotations"] = {names.ANNOTATION_BATCH: "#!/bin/sh\necho hi\n"}
    assert unused_image(batch, Target("debug")) == ""


async def conditions(kube: KubeClient, name: str) -> dict[str, Body]:
    pod = await get_pod(kube, name)
    return {c["type"]: c for c in pod.get("status", {}).get("conditions") or []}


async def reasons(kube: KubeClient, name: str) -> dict[str, list[Body]]:
    events = await kube.list(EVENTS, namespace="default")
    out: dict[str, list[Body]] = {}
    for event in events["items"]:
        if event["involvedObject"]["name"] == name:
            out.setdefault(event["reason"], []).append(event)
    return out


async def test_the_pod_runs_with_a_condition_and_a_warning_saying_its_image_is_unused(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    await start(kubelet_factory, apiserver, fake)
    await kube.create(PODS, pod_body("plain"), namespace="default")

    async def annotated() -> str:
        pod = await get_pod(kube, "plain")
        return str(pod["metadata"].get("annotations", {}).get(names.ANNOTATION_JOB_ID, ""))

    job_id = JobId(int(await eventually(annotated)))
    fake.run(job_id)

    async def running_with_condition() -> Body | None:
        found = await conditions(kube, "plain")
        pod = await get_pod(kube, "plain")
        return found if pod["status"].get("phase") == "Running" and pod_status.IMAGE_USED in found else None

    found = await eventually(running_with_condition)
    unused = found[pod_status.IMAGE_USED]
    assert (unused["status"], unused["reason"], unused["message"]) == ("False", "NoContainerRuntime", MESSAGE)
    assert found["Ready"]["status"] == "True"

    async def warned() -> list[Body] | None:
        return (await reasons(kube, "plain")).get("ImageNotUsed")

    (event,) = await eventually(warned)
    assert (event["type"], event["message"]) == ("Warning", MESSAGE)


async def test_a_partition_with_a_runtime_gives_no_such_condition_or_warning(
    apiserver: RunningApiServer, kube: KubeClient, kubelet_factory: StartKubelet, fake: FakeBackend
) -> None:
    fake.partition_table["debug"] = replace(fake.partition_table["debug"], container_runtime=True)
    await start(kubelet_factory, apiserver, fake)
    await kube.create(PODS, pod_body("sif"), namespace="default")

    async def submitted() -> list[Body] | None:
        return (await reasons(kube, "sif")).get("Submitted")

    await eventually(submitted)
    job_id = JobId(int((await get_pod(kube, "sif"))["metadata"]["annotations"][names.ANNOTATION_JOB_ID]))
    assert "docker://busybox" in fake.specs[job_id].script
    fake.run(job_id)

    async def running() -> dict[str, Body] | None:
        pod = await get_pod(kube, "sif")
        return await conditions(kube, "sif") if pod.get("status", {}).get("phase") == "Running" else None

    found = await eventually(running)
    assert set(found) == {"PodScheduled", "Initialized", "ContainersReady", "Ready"}
    assert "ImageNotUsed" not in await reasons(kube, "sif")
