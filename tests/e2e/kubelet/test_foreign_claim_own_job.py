"""A pod whose annotation names another's job still has its own job found by its key.

A predecessor kubelet submitted the pod's job (its key the pod's UID) and stopped before it
wrote the job id; the annotation then names another's job (forged, or written by mistake). The
claim is another's and is left alone, but the job under the pod's key is the pod's: the kubelet
adopts it and writes its id over the claim, and deleting the pod cancels it. (Before: the pod
failed ForeignJob while its job stayed in Slurm, and deleting the pod left that job orphaned.)
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, json_of, slurm_state, unique
from tests.fixtures.apiserver import RealApiServer, RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.fixtures.redbox import JOB_OWNER
from wlmvk.core import names
from wlmvk.kube.bodies import PODS

# The subject is red-box and Slurm (what the kubelet finds there), not the API server: one plane.
pytestmark = [pytest.mark.slurm, pytest.mark.kubectl]


def _held_job(key: str, name: str) -> str:
    """A held job submitted as red-box's user with ``key``, as red-box submits (``--comment``)."""
    argv = ["runuser", "-u", JOB_OWNER, "--", "sbatch", "--parsable", "--hold", "-p", "debug",
            f"--comment=wlmvk:{key}", f"--job-name={name}", "--wrap", "true"]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, cwd="/tmp", check=True).stdout.strip()


async def test_the_job_under_the_pods_key_is_adopted_over_a_foreign_claim_and_cancelled_with_the_pod(
    stack: Stack, kubelet_factory: StartKubelet, apiserver: RunningApiServer | RealApiServer
) -> None:
    await stack.kubelet.close()
    name = unique("claimed")
    other = await asyncio.to_thread(_held_job, str(uuid.uuid4()), "another")
    body = job_pod(name, "sleep 300", nodeName="slurm-test-debug")
    body["metadata"]["annotations"] = {names.ANNOTATION_JOB_ID: other}
    uid = str((await stack.kube.create(PODS, body, namespace="default"))["metadata"]["uid"])
    own = await asyncio.to_thread(_held_job, uid, name)
    try:
        await kubelet_factory(
            kubeconfig=apiserver.kubeconfig_for("wlmvk-kubelet"), red_box_socket=stack.redbox.socket
        )

        async def annotated_with_its_own() -> bool:
            pod = await stack.kube.get(PODS, name, namespace="default")
            return (pod["metadata"].get("annotations") or {}).get(names.ANNOTATION_JOB_ID) == own

        await eventually(annotated_with_its_own, timeout=60)

        async def adopted() -> list[str]:
            events = await stack.kubectl(
                "get", "events", "-o", "json", "--field-selector", f"involvedObject.name={name}"
            )
            return [e["message"] for e in json_of(events.stdout)["items"] if e["reason"] == "Adopted"]

        assert await eventually(adopted, timeout=30) == [
            f"Adopted Slurm job {own} (found by this pod's key; the annotation named job {other}, another's)"
        ]
        pod = await stack.kube.get(PODS, name, namespace="default")
        assert pod["status"]["phase"] == "Pending"
        assert "reason" not in pod["status"]
        deleted = await stack.kubectl("delete", "pod", name, "--timeout=60s")
        assert deleted.returncode == 0, deleted.stderr
        assert slurm_state(own) == "CANCELLED"
        assert slurm_state(other) == "PENDING"
    finally:
        await asyncio.to_thread(subprocess.run, ["scancel", own, other], check=False)
