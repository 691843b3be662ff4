"""``wlmvk kubelet`` end to end: real Slurm, real red-box, the in-memory API server, the real kubectl."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from tests.e2e.kubelet.conftest import Stack, slurm_partitions
from tests.e2e.kubelet.helpers import (
    eventually,
    job_pod,
    json_of,
    slurm,
    slurm_jobs_named,
    slurm_state,
    unique,
)
from wlmvk import __version__
from wlmvk.core import names
from wlmvk.kube.bodies import NODES, PODS, Body
from wlmvk.kube.version import KUBERNETES_VERSION
from wlmvk.kubelet.api.loglines import MAX_LINE
from wlmvk.kubelet.node.nodes import KUBELET_VERSION

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl]


async def pod_json(stack: Stack, name: str) -> Body:
    return await stack.kube.get(PODS, name, namespace="default")


async def wait_phase(stack: Stack, name: str, *phases: str, timeout: float = 120) -> Body:
    async def reached() -> Body | None:
        pod = await pod_json(stack, name)
        return pod if pod.get("status", {}).get("phase") in phases else None

    reached.__name__ = f"{name} in {phases}"
    result: Body = await eventually(reached, timeout=timeout)
    return result


def job_id_of(pod: Body) -> str:
    return str(pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID])


@pytest.mark.slurm_releases
async def test_kubectl_get_nodes_lists_one_ready_node_per_partition(stack: Stack) -> None:
    result = await stack.kubectl("get", "nodes", "-o", "json")
    assert result.returncode == 0, result.stderr
    nodes = {item["metadata"]["name"]: item for item in json_of(result.stdout)["items"]}
    for partition in slurm_partitions():
        node = nodes[names.node_name("test", partition)]
        labels = node["metadata"]["labels"]
        assert labels[names.LABEL_PARTITION] == partition
        assert labels["type"] == "virtual-kubelet"
        assert int(labels[names.LABEL_CPU_PER_NODE]) >= 1
        conditions = {c["type"]: c["status"] for c in node["status"]["conditions"]}
        assert conditions["Ready"] == "True"
        assert node["status"]["nodeInfo"]["kubeletVersion"] == KUBELET_VERSION
    debug = nodes["slurm-test-debug"]["metadata"]["labels"]
    assert debug[names.LABEL_CPU_PER_NODE] == "8"
    assert debug[names.LABEL_WALL_TIME] == "600"
    assert debug[names.LABEL_NODES] == "1"
    # The label is the count of the partition's nodes with the feature: the one node has avx2.
    assert debug["wlm.sylabs.io/avx2"] == "1"
    table = await stack.kubectl("get", "nodes")
    assert table.returncode == 0, table.stderr
    line = next(x for x in table.stdout.splitlines() if x.startswith("slurm-test-debug"))
    assert line.split()[1:2] == ["Ready"]
    assert line.split()[-1] == KUBELET_VERSION == f"{KUBERNETES_VERSION}+wlmvk-{__version__}"


@pytest.mark.slurm_releases
async def test_pod_with_node_selector_runs_as_a_slurm_job_and_succeeds(stack: Stack) -> None:
    name = unique("ok")
    await stack.kube.create(PODS, job_pod(name, "echo hello from slurm"), namespace="default")
    pod = await wait_phase(stack, name, "Succeeded", "Failed")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    assert pod["spec"]["nodeName"] == "slurm-test-debug"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Job finished")
    job_id = job_id_of(pod)
    assert slurm_jobs_named(name) == {name: {job_id}}
    assert slurm_state(job_id) == "COMPLETED"
    listing = await stack.kubectl("get", "pod", name)
    assert "Job finished" in listing.stdout, listing.stdout
    logs = await stack.kubectl("logs", name)
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout == "hello from slurm\n"


@pytest.mark.slurm_releases
async def test_failing_job_ends_failed_with_its_exit_code(stack: Stack) -> None:
    name = unique("bad")
    await stack.kube.create(PODS, job_pod(name, "echo about to fail; exit 3"), namespace="default")
    pod = await wait_phase(stack, name, "Succeeded", "Failed")
    assert pod["status"]["phase"] == "Failed"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3
    assert terminated["reason"] == "Error"


@pytest.mark.slurm_releases
async def test_kubectl_logs_follow_sees_a_line_written_after_it_started(stack: Stack) -> None:
    name = unique("talk")
    script = "echo first; sleep 5; echo second; sleep 1"
    await stack.kube.create(PODS, job_pod(name, script), namespace="default")
    await wait_phase(stack, name, "Running")
    home = stack.apiserver.home
    env = {"KUBECONFIG": str(stack.apiserver.kubeconfig), "HOME": str(home), "PATH": "/usr/bin:/bin"}
    follow = await asyncio.create_subprocess_exec(
        "kubectl", "logs", "-f", name, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert follow.stdout is not None
    first = await asyncio.wait_for(follow.stdout.readline(), 60)
    assert first == b"first\n"
    second = await asyncio.wait_for(follow.stdout.readline(), 60)
    assert second == b"second\n"
    rest = await asyncio.wait_for(follow.stdout.read(), 60)
    assert rest == b""
    assert await asyncio.wait_for(follow.wait(), 30) == 0


async def test_kubectl_logs_of_a_huge_output_without_newlines_tail_and_limit(stack: Stack) -> None:
    name = unique("blob")
    size = 20_000_000
    script = f"head -c {size} /dev/zero | tr '\\0' x"
    await stack.kube.create(PODS, job_pod(name, script), namespace="default")
    await wait_phase(stack, name, "Succeeded")
    limited = await stack.kubectl("logs", name, "--limit-bytes=10")
    assert (limited.returncode, limited.stdout) == (0, "x" * 10)
    tail = await stack.kubectl("logs", name, "--tail=1")
    assert tail.returncode == 0, tail.stderr
    assert tail.stdout == "x" * (size % MAX_LINE), "the last piece of a line cut every MAX_LINE bytes"


@pytest.mark.slurm_releases
async def test_kubectl_delete_pod_cancels_the_job(stack: Stack) -> None:
    name = unique("del")
    await stack.kube.create(PODS, job_pod(name, "sleep 300"), namespace="default")
    pod = await wait_phase(stack, name, "Running", "Pending")

    async def annotated() -> Body | None:
        current = await pod_json(stack, name)
        return current if names.ANNOTATION_JOB_ID in current["metadata"].get("annotations", {}) else None

    job_id = job_id_of(await eventually(annotated))
    result = await stack.kubectl("delete", "pod", name, "--timeout=90s")
    assert result.returncode == 0, result.stderr
    gone = await stack.kubectl("get", "pod", name)
    assert "NotFound" in gone.stderr

    async def cancelled() -> bool:
        return slurm_state(job_id).startswith("CANCELLED")

    await eventually(cancelled, timeout=30)
    assert pod["metadata"]["name"] == name


@pytest.mark.serial  # other tests list the nodes of every partition Slurm has
async def test_partition_added_to_slurm_appears_as_a_node(stack: Stack) -> None:
    partition = unique("kt").replace("-", "")
    created = await asyncio.create_subprocess_exec(
        "scontrol", "create", f"PartitionName={partition}", "Nodes=vm", "MaxTime=5", stderr=subprocess.PIPE
    )
    _, err = await created.communicate()
    assert created.returncode == 0, err
    try:
        node = names.node_name("test", partition)

        async def present() -> Body:
            return await stack.kube.get(NODES, node)

        found = await eventually(present, timeout=30)
        assert found["metadata"]["labels"][names.LABEL_PARTITION] == partition
    finally:
        deleted = await asyncio.create_subprocess_exec("scontrol", "delete", f"PartitionName={partition}")
        await deleted.wait()

    async def removed() -> bool:
        listing = await stack.kube.list(NODES)
        return node not in {item["metadata"]["name"] for item in listing["items"]}

    await eventually(removed, timeout=30)


async def test_red_box_stopped_makes_nodes_not_ready_and_leaves_pods(stack: Stack) -> None:
    name = unique("steady")
    await stack.kube.create(PODS, job_pod(name, "sleep 40"), namespace="default")
    pod = await wait_phase(stack, name, "Running")
    job_id = job_id_of(pod)
    stack.redbox.stop()
    try:

        async def not_ready() -> bool:
            node = await stack.kube.get(NODES, "slurm-test-debug")
            ready = {c["type"]: c for c in node["status"]["conditions"]}["Ready"]
            return bool(ready["status"] == "False" and ready["reason"] == "WLMUnreachable")

        await eventually(not_ready, timeout=30)
        still = await pod_json(stack, name)
        assert still["status"]["phase"] == "Running"
        assert slurm_state(job_id) == "RUNNING"
    finally:
        stack.redbox.start()

    async def ready_again() -> bool:
        node = await stack.kube.get(NODES, "slurm-test-debug")
        return {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"

    await eventually(ready_again, timeout=30)
    slurm("scancel", job_id)


async def test_gpu_pod_gets_gres(stack: Stack) -> None:
    name = unique("gpu")
    resources = {"limits": {"nvidia.com/gpu": "1", "cpu": "1"}}
    script = 'echo "gpus=$CUDA_VISIBLE_DEVICES"'
    await stack.kube.create(
        PODS, job_pod(name, script, partition="gpu", resources=resources), namespace="default"
    )
    pod = await wait_phase(stack, name, "Succeeded", "Failed")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    job_id = job_id_of(pod)
    shown = slurm("sacct", "-X", "-n", "-P", "-j", job_id, "-o", "ReqTRES")
    squeue = slurm("squeue", "-h", "-t", "all", "-j", job_id, "-o", "%b")
    assert "gpu" in shown + squeue, (shown, squeue)
    logs = await stack.kubectl("logs", name)
    # One GPU was allocated: Slurm exposes exactly one device index to the job.
    assert logs.stdout.strip() in ("gpus=0", "gpus=1"), logs.stdout


@pytest.mark.redbox_original
async def test_original_red_box_runs_pods_through_the_original_rpcs(stack: Stack) -> None:
    name = unique("old")
    await stack.kube.create(PODS, job_pod(name, "echo from the original api"), namespace="default")
    pod = await wait_phase(stack, name, "Succeeded", "Failed")
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    # The original SubmitJob carries no job name (Slurm names the job after its script): the
    # job is the one the pod's annotation names, and it completed.
    assert slurm_state(job_id_of(pod)) == "COMPLETED"
    logs = await stack.kubectl("logs", name)
    assert logs.stdout == "from the original api\n"


@pytest.mark.slurm_releases
async def test_pod_deleted_while_red_box_is_down_is_cancelled_when_it_returns(stack: Stack) -> None:
    name = unique("orph")
    await stack.kube.create(PODS, job_pod(name, "sleep 300"), namespace="default")

    async def annotated() -> Body | None:
        current = await pod_json(stack, name)
        return current if names.ANNOTATION_JOB_ID in current["metadata"].get("annotations", {}) else None

    job_id = job_id_of(await eventually(annotated))
    stack.redbox.stop()
    try:
        result = await stack.kubectl("delete", "pod", name, "--wait=false")
        assert result.returncode == 0, result.stderr
        await asyncio.sleep(2)
        assert not slurm_state(job_id).startswith("CANCELLED")
        assert (await pod_json(stack, name))["metadata"].get("deletionTimestamp")
    finally:
        stack.redbox.start()

    async def cancelled() -> bool:
        return slurm_state(job_id).startswith("CANCELLED")

    await eventually(cancelled, timeout=60)

    async def gone() -> bool:
        result = await stack.kubectl("get", "pod", name)
        return "NotFound" in result.stderr

    await eventually(gone, timeout=60)


async def test_events_tell_the_story_of_a_pod(stack: Stack) -> None:
    name = unique("story")
    await stack.kube.create(PODS, job_pod(name, "sleep 1"), namespace="default")
    await wait_phase(stack, name, "Succeeded")

    async def reasons() -> set[str] | None:
        result = await stack.kubectl(
            "get", "events", "-o", "json", "--field-selector", f"involvedObject.name={name}"
        )
        found = {event["reason"] for event in json_of(result.stdout)["items"]}
        return found if {"Submitted", "Completed"} <= found else None

    assert {"Submitted", "Completed"} <= await eventually(reasons, timeout=30)
    described = await stack.kubectl("describe", "pod", name)
    assert described.returncode == 0, described.stderr
    assert "Job finished" in described.stdout
    assert "Submitted" in described.stdout


async def test_unsupported_pod_fails_with_a_reason_and_an_event(stack: Stack) -> None:
    name = unique("two")
    body = job_pod(name, "true")
    body["spec"]["containers"].append({"name": "sidecar", "image": "busybox", "command": ["true"]})
    await stack.kube.create(PODS, body, namespace="default")
    pod = await wait_phase(stack, name, "Failed", timeout=30)
    assert pod["status"]["reason"] == "UnsupportedContainers"
    assert names.ANNOTATION_JOB_ID not in pod["metadata"].get("annotations", {})
    assert slurm_jobs_named(name) == {}

    async def warned() -> bool:
        result = await stack.kubectl(
            "get", "events", "-o", "json", "--field-selector", f"involvedObject.name={name}"
        )
        return any(e["reason"] == "UnsupportedContainers" for e in json_of(result.stdout)["items"])

    await eventually(warned, timeout=30)
