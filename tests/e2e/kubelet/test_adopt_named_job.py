"""A job found by a pod's key after a restart is adopted when its script named it.

A SlurmJob's script may set its own ``#SBATCH --job-name``, which sbatch now keeps
(``core.sbatch``): the job the kubelet submitted before a restart then carries that
name, not the pod's, and must still be adopted rather than failed as ForeignJob.
"""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from tests.e2e.kubelet.conftest import Stack
from tests.e2e.kubelet.helpers import eventually, job_pod, unique
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


async def test_the_job_named_by_its_script_is_adopted_after_a_restart(
    stack: Stack, kubelet_factory: StartKubelet, apiserver: RunningApiServer | RealApiServer
) -> None:
    await stack.kubelet.close()
    name = unique("named")
    body = job_pod(name, "true", nodeName="slurm-test-debug")
    script = "#!/bin/sh\n#SBATCH --job-name=users-own\nsleep 300\n"
    body["metadata"]["annotations"] = {names.ANNOTATION_BATCH: script}
    uid = str((await stack.kube.create(PODS, body, namespace="default"))["metadata"]["uid"])
    # What the kubelet submitted before its restart: the pod's key, the script's name.
    before = await asyncio.to_thread(_sbatch_as_owner, f"--comment=wlmvk:{uid}", "--job-name=users-own")
    try:
        await kubelet_factory(
            kubeconfig=apiserver.kubeconfig_for("wlmvk-kubelet"), red_box_socket=stack.redbox.socket
        )

        async def adopted() -> Body | None:
            pod = await stack.kube.get(PODS, name, namespace="default")
            return pod if (pod["metadata"].get("annotations") or {}).get(names.ANNOTATION_JOB_ID) else None

        pod = await eventually(adopted, timeout=60)
        assert pod["metadata"]["annotations"][names.ANNOTATION_JOB_ID] == before
        assert pod.get("status", {}).get("phase") != "Failed"
    finally:
        await asyncio.to_thread(subprocess.run, ["scancel", before], check=False)
