"""WlmJobs run real containers: Podman (rootless, as the job owner) on real Slurm.

The images are built here (``wlmvk_dev.images``: Debian's busybox-static in
an OCI archive); no registry is reached. Needs Podman on the Slurm side
(``dev/scripts/container-local up``); red-box's ``--container-runtime auto``
picks it.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import pytest

from tests.e2e.operator.stack import WITH_AGENT_HOST, Stack
from tests.e2e.operator.support import wait_status
from tests.fixtures import prerequisites
from tests.fixtures.shared_dirs import SharedDir
from wlmvk_dev.images import busybox_rootfs, oci_archive

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.kubectl,
    WITH_AGENT_HOST,
    prerequisites.unless_installed(
        shutil.which("podman") is None, "Podman is not installed (dev/scripts/container-local up)"
    ),
]

ENTRYPOINT = """echo "in the image: $(cat /etc/marker)"
echo "cwd=$(pwd)"
echo "SLURM_JOB_ID=${SLURM_JOB_ID:-unset}"
mkdir -p out
echo 42 > out/answer.txt
if touch /etc/writable 2>/dev/null; then echo "image writable"; else echo "image read-only"; fi
cat /input/data.txt 2>/dev/null || true
"""


def image(shared_dir: SharedDir, entrypoint: str = ENTRYPOINT) -> str:
    """An oci-archive the job owner can read, whose entrypoint is ``entrypoint``."""
    where = shared_dir("wlmvk-image-")
    root = busybox_rootfs(where / "rootfs", entrypoint)
    (root / "etc" / "marker").write_text("busybox-oci\n")
    return f"oci-archive:{oci_archive(root, where / 'image.tar')}"


def wlmjob(name: str, image: str, **spec: Any) -> str:
    body = {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "WlmJob",
        "metadata": {"name": name},
        "spec": {"image": image, "resources": {"nodes": 1, "cpuPerNode": 1, "wallTime": 120}, **spec},
    }
    return json.dumps(body)


async def create(stack: Stack, doc: str) -> None:
    created = await stack.kubectl("create", "-f", "-", input=doc)
    assert created.returncode == 0, created.stderr


async def test_a_container_runs_to_succeeded_with_its_output_and_results(
    stack: Stack, shared_dir: SharedDir
) -> None:
    outputs = shared_dir("wlmvk-results-", 0o777)
    results = {"from": "out", "mount": {"name": "o", "hostPath": {"path": str(outputs), "type": "Directory"}}}
    await create(stack, wlmjob("box", image(shared_dir), options={"cleanEnv": True}, results=results))
    status = await wait_status(stack.apiserver, "box", {"Succeeded", "Failed"}, kind="wlmjob", timeout=120)
    assert status["status"] == "Succeeded", status
    logs = await stack.kubectl("logs", "box-wlm-job")
    assert logs.returncode == 0, logs.stderr
    lines = logs.stdout.splitlines()
    assert "in the image: busybox-oci" in lines
    # the container starts in the job's working directory (red-box may report it relative)
    assert any(line.startswith("cwd=/") and line.endswith(status["workingDir"]) for line in lines), lines
    # cleanEnv: the job's environment stays out; writable is false: the image is read-only
    assert "SLURM_JOB_ID=unset" in lines
    assert "image read-only" in lines
    assert (outputs / "out" / "answer.txt").read_text() == "42\n"


async def test_options_map_to_the_runtime(stack: Stack, shared_dir: SharedDir) -> None:
    data = shared_dir("wlmvk-bind-", 0o777)
    (data / "data.txt").write_text("bound in\n")
    os.chmod(data / "data.txt", 0o644)
    options = {"binds": [f"{data}:/input:ro"], "writable": True}
    await create(stack, wlmjob("opts", image(shared_dir), options=options))
    status = await wait_status(stack.apiserver, "opts", {"Succeeded", "Failed"}, kind="wlmjob", timeout=120)
    assert status["status"] == "Succeeded", status
    lines = (await stack.kubectl("logs", "opts-wlm-job")).stdout.splitlines()
    assert "bound in" in lines
    assert "image writable" in lines
    # cleanEnv false: the job's Slurm environment reaches the container
    assert f"SLURM_JOB_ID={status['jobId']}" in lines


async def test_an_option_without_meaning_for_podman_fails_the_wlmjob_with_the_reason(
    stack: Stack, shared_dir: SharedDir
) -> None:
    await create(stack, wlmjob("scif", image(shared_dir), options={"app": "cowsay"}))
    status = await wait_status(stack.apiserver, "scif", {"Succeeded", "Failed"}, kind="wlmjob", timeout=60)
    assert status["status"] == "Failed"
    assert "app='cowsay': SCIF apps exist only in SIF images" in status["message"], status
    assert "jobId" not in status


async def test_a_sylabs_image_fails_the_wlmjob_naming_the_runtime_it_needs(stack: Stack) -> None:
    await create(stack, wlmjob("lolcow", "library://sylabsed/examples/lolcow"))
    status = await wait_status(stack.apiserver, "lolcow", {"Succeeded", "Failed"}, kind="wlmjob", timeout=60)
    assert status["status"] == "Failed"
    assert "is a Sylabs/SIF image: it needs Apptainer or Singularity" in status["message"], status
