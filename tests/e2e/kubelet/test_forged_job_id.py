"""A pod cannot take another pod's Slurm job by writing its id into the job-id annotation (issue 14).

The annotation is only a claim: the kubelet adopts the job only when the
job's key is the pod's UID. Here pod A runs a job; pod B is created with
A's job id in its annotation. B must fail with reason ``ForeignJob`` and a
Warning Event, its logs must not be A's, and deleting B must leave A's job
running.
"""

from __future__ import annotations

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, json_of, slurm_state, unique
from wlmvk.core import names
from wlmvk.kube.bodies import PODS, Body

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl]


async def _pod(stack: Stack, name: str) -> Body:
    return await stack.kube.get(PODS, name, namespace="default")


async def test_a_forged_job_id_annotation_neither_adopts_reads_nor_cancels(stack: Stack) -> None:
    victim = unique("victim")
    await stack.kube.create(PODS, job_pod(victim, "echo victim-secret; sleep 300"), namespace="default")

    async def running() -> Body | None:
        pod = await _pod(stack, victim)
        annotated = names.ANNOTATION_JOB_ID in pod["metadata"].get("annotations", {})
        return pod if annotated and pod.get("status", {}).get("phase") == "Running" else None

    job_id = str((await eventually(running))["metadata"]["annotations"][names.ANNOTATION_JOB_ID])
    thief = unique("thief")
    body = job_pod(thief, "true")
    body["metadata"]["annotations"] = {names.ANNOTATION_JOB_ID: job_id}
    await stack.kube.create(PODS, body, namespace="default")

    async def failed() -> Body | None:
        pod = await _pod(stack, thief)
        return pod if pod.get("status", {}).get("phase") == "Failed" else None

    pod = await eventually(failed, timeout=60)
    assert pod["status"]["reason"] == "ForeignJob"
    assert f"={job_id}: that Slurm job is not this pod's" in pod["status"]["message"]
    logs = await stack.kubectl("logs", thief)
    assert "victim-secret" not in logs.stdout

    async def warned() -> bool:
        result = await stack.kubectl(
            "get", "events", "-o", "json", "--field-selector", f"involvedObject.name={thief}"
        )
        return any(e["reason"] == "ForeignJob" for e in json_of(result.stdout)["items"])

    await eventually(warned, timeout=30)
    deleted = await stack.kubectl("delete", "pod", thief, "--timeout=60s")
    assert deleted.returncode == 0, deleted.stderr
    assert slurm_state(job_id) == "RUNNING"
    assert (await _pod(stack, victim))["status"]["phase"] == "Running"
    await stack.kubectl("delete", "pod", victim, "--timeout=60s")
