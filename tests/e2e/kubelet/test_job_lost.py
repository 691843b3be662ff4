"""A job that leaves Slurm unseen ends its pod as JobLost, and a deletion of its pod completes (issue 14).

Without accounting, Slurm forgets a job MinJobAge seconds after it ends. When
red-box is down for longer, nobody saw the end: no answer for it will ever
come. Its running pod must end Failed with reason ``JobLost`` (as a pod whose
job red-box never knew does), and a pod deleted meanwhile must go instead of
staying Terminating. Real Slurm without slurmdbd, red-box as the job owner.
"""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, json_of, slurm, unique
from wlmvk.core import names
from wlmvk.core.errors import NotFound
from wlmvk.kube.bodies import PODS, Body

# The subject is red-box and Slurm (what the kubelet finds there), not the API server: one plane.
pytestmark = [pytest.mark.slurm, pytest.mark.noaccounting]


async def _job_of_running(stack: Stack, name: str) -> str:
    async def running() -> str:
        pod = await stack.kube.get(PODS, name, namespace="default")
        job = pod["metadata"].get("annotations", {}).get(names.ANNOTATION_JOB_ID, "")
        return job if job and pod.get("status", {}).get("phase") == "Running" else ""

    return str(await eventually(running, timeout=60))


async def test_a_job_gone_from_slurm_unseen_ends_its_pod_as_job_lost(stack: Stack) -> None:
    running, deleted = unique("lost"), unique("lost-del")
    for name in (running, deleted):
        await stack.kube.create(PODS, job_pod(name, "sleep 300"), namespace="default")
    jobs = [await _job_of_running(stack, name) for name in (running, deleted)]

    await asyncio.to_thread(stack.redbox.stop)
    await stack.kube.delete(PODS, deleted, namespace="default")  # the kubelet cannot cancel: red-box is down
    await asyncio.to_thread(subprocess.run, ["scancel", *jobs], check=True)

    async def left_slurm() -> bool:
        # Not `squeue -j`: it prints nothing once one of the ids is unknown.
        return not set(jobs) & set(slurm("squeue", "-h", "-t", "all", "-o", "%i").split())

    await eventually(left_slurm, timeout=120, every=1)  # MinJobAge, then slurmctld's purge
    await asyncio.to_thread(stack.redbox.start)

    async def failed() -> Body | None:
        pod = await stack.kube.get(PODS, running, namespace="default")
        return pod if pod.get("status", {}).get("phase") == "Failed" else None

    pod = await eventually(failed, timeout=60)
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("JobLost", 1)
    assert f"Slurm job {jobs[0]} NOT_FOUND" in terminated["message"]
    assert "left Slurm before red-box saw it end" in terminated["message"]

    async def gone() -> bool:
        try:
            await stack.kube.get(PODS, deleted, namespace="default")
        except NotFound:
            return True
        return False

    await eventually(gone, timeout=60)

    async def warned() -> bool:
        result = await stack.kubectl(
            "get", "events", "-o", "json", "--field-selector", f"involvedObject.name={running}"
        )
        return any(e["reason"] == "JobLost" for e in json_of(result.stdout)["items"])

    await eventually(warned, timeout=30)
