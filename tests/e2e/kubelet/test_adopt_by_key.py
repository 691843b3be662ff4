"""A job found by a pod's key after a restart is adopted only when it is the pod's (issue 14).

After a restart the kubelet asks red-box (FindJob) for a job carrying a pod's
key before it submits, so a job submitted just before a crash is not
submitted twice. Any Slurm job of red-box's user can carry that key in its
comment, though. Here a job named otherwise holds the pod's UID as its key:
the pod must fail with reason ``ForeignJob``, neither submit nor adopt, and
deleting it must leave that job alone.
"""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, slurm, slurm_state, unique
from tests.fixtures.apiserver import RealApiServer, RunningApiServer
from tests.fixtures.kubelet import StartKubelet
from tests.fixtures.redbox import JOB_OWNER
from wlmvk.core import names
from wlmvk.kube.bodies import PODS, Body

# The subject is red-box and Slurm (what the kubelet finds there), not the API server: one plane.
pytestmark = [pytest.mark.slurm, pytest.mark.kubectl]


def _sbatch_as_owner(*options: str) -> str:
    argv = ["runuser", "-u", JOB_OWNER, "--", "sbatch", "--parsable", "--hold", "-p", "debug", *options]
    done = subprocess.run([*argv, "--wrap", "true"], capture_output=True, text=True, cwd="/tmp", check=True)
    return done.stdout.strip()


async def test_a_job_with_the_pods_key_but_not_its_name_is_not_adopted(
    stack: Stack, kubelet_factory: StartKubelet, apiserver: RunningApiServer | RealApiServer
) -> None:
    await stack.kubelet.close()
    name = unique("adopt")
    # Bound by name: no kubelet serves the node now, so a scheduler may not pick it.
    body = job_pod(name, "sleep 300", nodeName="slurm-test-debug")
    uid = str((await stack.kube.create(PODS, body, namespace="default"))["metadata"]["uid"])
    impostor = await asyncio.to_thread(_sbatch_as_owner, f"--comment=wlmvk:{uid}", "--job-name=impostor")
    try:
        await kubelet_factory(
            kubeconfig=apiserver.kubeconfig_for("wlmvk-kubelet"), red_box_socket=stack.redbox.socket
        )

        async def failed() -> Body | None:
            pod = await stack.kube.get(PODS, name, namespace="default")
            return pod if pod.get("status", {}).get("phase") == "Failed" else None

        pod = await eventually(failed, timeout=60)
        assert pod["status"]["reason"] == "ForeignJob"
        assert pod["status"]["message"] == (
            f"red-box found Slurm job {impostor} by this pod's key, but its name is 'impostor',"
            f" not the pod's {name!r}; it is not adopted"
        )
        assert names.ANNOTATION_JOB_ID not in (pod["metadata"].get("annotations") or {})
        deleted = await stack.kubectl("delete", "pod", name, "--timeout=60s")
        assert deleted.returncode == 0, deleted.stderr
        assert slurm_state(impostor) == "PENDING"
        assert slurm("squeue", "-h", "-t", "all", "-n", name, "-o", "%i").strip() == "", "nothing submitted"
    finally:
        await asyncio.to_thread(subprocess.run, ["scancel", impostor], check=False)
